"""Texts that differ only invisibly are told apart in reports, code point by code point."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction_conformance import run_suite
from dsh_user_interaction_conformance._difference import describe_difference

from .gallery.providers import BROKEN_PROVIDERS


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_normalised_text_is_reported_with_the_code_points_that_differ() -> None:
    """A UI that normalises typed text to NFC: the report names the code points, not two lookalikes."""
    factory, requirement = BROKEN_PROVIDERS["normalises-nfc"]
    report = run_suite(
        subject_factory=factory, only=["provider-answers"], seed=7, bound=0.2, stop_on=[requirement]
    )
    message = next(r.message for r in report.results if r.requirement.id == requirement)
    assert "they first differ at character" in message
    assert "; found U+" in message


def test_unnamed_code_points_say_what_they_are() -> None:
    """Controls and lone surrogates have no Unicode name; the report says what they are."""
    said = describe_difference("a\r", "a\ud800")
    assert said == (
        "they first differ at character 1 (of 2 and 2): expected U+000D (control); "
        "found U+D800 (lone surrogate)"
    )
    assert describe_difference("ab", "ab ").endswith("expected nothing more; found U+0020 SPACE")


@given(st.text(), st.text())
def test_the_first_difference_is_where_the_texts_part(expected: str, found: str) -> None:
    """The index given is the first where the texts differ, or the shorter one's end."""
    said = describe_difference(expected, found)
    index = int(said.split("character ", 1)[1].split(" ", 1)[0])
    assert expected[:index] == found[:index]
    assert index == min(len(expected), len(found)) or expected[index] != found[index]
