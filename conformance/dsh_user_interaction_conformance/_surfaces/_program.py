"""The steps the surfaces check draws: which surface acts on which ask, and what else happens.

Each drawn ask ends by exactly one step: an action on one surface
(:class:`Act`), two surfaces acting at the same moment (:class:`Race`), an
action while another surface closes (:class:`CloseWhile`), or the agent
withdrawing it (:class:`Withdraw`). Reloads (:class:`Reload`) come between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionRequest

from .._behaviour import Behaviour, Dismiss
from .._capabilities import Capabilities
from ..strategies import actions, dismissals

__all__ = ["Act", "CloseWhile", "Race", "Reload", "Step", "Withdraw", "programs"]


@dataclass(frozen=True, slots=True)
class Act:
    """Surface *surface* does *behaviour* on ask *ask*."""

    ask: int
    surface: int
    behaviour: Behaviour


@dataclass(frozen=True, slots=True)
class Race:
    """Two surfaces act on ask *ask* at the same moment, each with its own behaviour."""

    ask: int
    surfaces: tuple[int, int]
    behaviours: tuple[Behaviour, Behaviour]


@dataclass(frozen=True, slots=True)
class CloseWhile:
    """Surface *closing* closes while surface *surface* does *behaviour*; then it opens again."""

    ask: int
    closing: int
    surface: int
    behaviour: Behaviour


@dataclass(frozen=True, slots=True)
class Withdraw:
    """The agent withdraws ask *ask*: its signal aborts, saying time ran out if *timed_out*."""

    ask: int
    timed_out: bool


@dataclass(frozen=True, slots=True)
class Reload:
    """Surface *surface* reloads or reconnects."""

    surface: int


#: One step of a program.
Step: TypeAlias = Act | Race | CloseWhile | Withdraw | Reload


@st.composite
def _behaviour(
    draw: st.DrawFn, request: AskUserQuestionRequest, capabilities: Capabilities
) -> Behaviour:
    """An answer to every question, or (a quarter of the time) a dismissal of the batch."""
    if capabilities.can_dismiss and draw(st.integers(0, 3)) == 0:
        dismissal: Dismiss = draw(dismissals(capabilities))
        return dismissal
    return draw(actions(request, capabilities))


@st.composite
def _two(draw: st.DrawFn, surfaces: int) -> tuple[int, int]:
    first = draw(st.integers(0, surfaces - 1))
    second = draw(st.integers(0, surfaces - 2))
    return first, second + (second >= first)


@st.composite
def _ending(
    draw: st.DrawFn,
    ask: int,
    kind: str,
    request: AskUserQuestionRequest,
    capabilities: Capabilities,
) -> Step:
    surfaces = capabilities.surfaces
    if kind == "race":
        pair = draw(_two(surfaces))
        behaviours = (
            draw(_behaviour(request, capabilities)),
            draw(_behaviour(request, capabilities)),
        )
        return Race(ask, pair, behaviours)
    if kind == "close":
        closing, acting = draw(_two(surfaces))
        return CloseWhile(ask, closing, acting, draw(_behaviour(request, capabilities)))
    if kind == "withdraw":
        return Withdraw(ask, draw(st.booleans()))
    surface = draw(st.integers(0, surfaces - 1))
    return Act(ask, surface, draw(_behaviour(request, capabilities)))


@st.composite
def _programs(
    draw: st.DrawFn, requests: Sequence[AskUserQuestionRequest], capabilities: Capabilities
) -> list[Step]:
    # Every example races and closes, so each run judges every requirement: the
    # first ask ends in a race, the second while a surface closes, and the third
    # by one surface or the agent, with the other surfaces looking on (on two
    # surfaces, only such a step judges a surface that did not act). Any more
    # end as drawn.
    kinds = ["race", "close", draw(st.sampled_from(("act", "withdraw")))][: len(requests)]
    more = st.sampled_from(("race", "act", "close", "withdraw"))
    kinds += [draw(more) for _ in range(len(requests) - len(kinds))]
    endings: list[Step] = [
        draw(_ending(ask, kind, request, capabilities))
        for ask, (kind, request) in enumerate(zip(kinds, requests, strict=True))
    ]
    steps: list[Step] = draw(st.permutations(endings))
    reloads = draw(st.lists(st.integers(0, capabilities.surfaces - 1), min_size=1, max_size=2))
    for surface in reloads:
        steps.insert(draw(st.integers(0, len(steps))), Reload(surface))
    return steps


def programs(
    requests: Sequence[AskUserQuestionRequest], capabilities: Capabilities
) -> st.SearchStrategy[list[Step]]:
    """The steps of one example over *requests*, for a UI of ``capabilities.surfaces`` surfaces.

    >>> from hypothesis import find
    >>> from dsh_user_interaction_conformance import Capabilities
    >>> request = {"questions": [{"id": "q", "question": "Go?", "options": [{"label": "Yes"}]}]}
    >>> steps = find(programs([request], Capabilities(surfaces=2)), lambda steps: True)
    >>> sorted(type(step).__name__ for step in steps)
    ['Race', 'Reload']
    """
    return _programs(requests, capabilities)
