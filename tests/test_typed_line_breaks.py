"""A UI whose text fields cannot hold a carriage return is typed line feeds instead.

A browser's text fields hold every line break as a line feed, so a web page
declares ``Capabilities(keeps_carriage_returns=False)``; the suite then types
no CR there, and ``PRV-TEXT-1`` still holds for what it types. Every other UI
is still typed carriage returns.
"""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_user_interaction_conformance import Capabilities, Revise, TypeText
from dsh_user_interaction_conformance.strategies import behaviours, requests

_NO_CR = Capabilities(keeps_carriage_returns=False)


def _typed(behaviour: object) -> list[str]:
    if not isinstance(behaviour, tuple):
        return []
    texts: list[str] = []
    for action in cast("tuple[object, ...]", behaviour):
        if isinstance(action, TypeText):
            texts.append(action.text)
        elif isinstance(action, Revise):
            texts += [value for step, value in action.steps if step == "type"]
    return texts


# The strategies' statistics over hundreds of draws: slow tier.
@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_ui_that_cannot_hold_a_cr_is_never_typed_one(data: st.DataObject) -> None:
    request = data.draw(requests())
    behaviour = data.draw(behaviours(request, _NO_CR))
    assert not any("\r" in text for text in _typed(behaviour))


# The strategies' statistics over hundreds of draws: slow tier.
@pytest.mark.slow
def test_every_other_ui_is_still_typed_carriage_returns() -> None:
    """Without the capability's refusal, typed text holds a CR often enough to be seen."""
    seen: list[bool] = []

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        request = data.draw(requests())
        seen.extend("\r" in text for text in _typed(data.draw(behaviours(request))))

    draw()
    assert any(seen), "no typed text held a carriage return in 300 examples"
