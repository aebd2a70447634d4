"""Broken fan-outs: one ask on several UIs, each getting one rule of ``SURF-*`` wrong.

Each is :class:`FlawedFanOut`, a small fan-out that is right without flaws
(``tests/test_surfaces_gallery.py`` proves it passes), with one mistake a
real fan-out makes, over three scripted UIs that the suite drives as three
surfaces (:func:`~dsh_user_interaction_conformance.make_fan_out_subject`).
Three, so that when two surfaces race there is always one that did not act
and must be told by its request signal. ``BROKEN_FAN_OUTS`` maps a name to
its factory and the requirements the suite may name (``|`` between them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
    answer_violations,
)
from dsh_user_interaction.durable import Outcome, Verdict, VerdictAware, Withdrawn
from dsh_user_interaction_conformance import (
    Capabilities,
    ScriptedSurface,
    Subject,
    make_fan_out_subject,
    with_capabilities,
)

#: How many surfaces each broken fan-out shows its asks on.
SURFACES = 3


@dataclass(frozen=True)
class Flaws:
    """What a :class:`FlawedFanOut` gets wrong; nothing, by default."""

    #: The losers' signals abort with no reason: they cannot say how the ask ended.
    silent_withdraw: bool = False
    #: The losers are never withdrawn: their UIs keep offering an ended ask.
    leaves_losers: bool = False
    #: No verdicts without a relay: two UIs that answer at once both believe they won.
    no_verdicts: bool = False
    #: Tells the first outcome of a step saved, but returns the last one.
    returns_later: bool = False
    #: Tells every loser the ask was dismissed, however it ended.
    says_dismissed: bool = False
    #: Finds the winner by identity on a fresh outcome: every UI hears ``lost``.
    saved_by_identity: bool = False
    #: A dismissal counts as the UI dropping out, not as an outcome.
    dismissal_drops_out: bool = False


@dataclass(eq=False)
class _Leg:
    name: str
    controller: AbortController
    task: asyncio.Task[AskUserQuestionAnswer]
    verdict: asyncio.Future[Verdict] | None


class FlawedFanOut:
    """A fan-out over *uis* with *flaws*: the first outcome wins, the others are withdrawn."""

    def __init__(self, uis: Sequence[UserInteractionProvider], flaws: Flaws) -> None:
        self._uis = list(uis)
        self._flaws = flaws

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask every UI; return the first answer, or raise the first dismissal."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        loop = asyncio.get_running_loop()
        legs: list[_Leg] = []
        for index, ui in enumerate(self._uis):
            controller = AbortController()
            own = controller.signal
            leg_request = cast(
                "AskUserQuestionRequest",
                {**request, "signal": own if signal is None else AbortSignal.any([signal, own])},
            )
            verdict: asyncio.Future[Verdict] | None = None
            if not self._flaws.no_verdicts and isinstance(ui, VerdictAware):
                verdict = loop.create_future()
                ui.expect_verdict(leg_request, verdict)
            task = loop.create_task(ui.ask(leg_request))
            legs.append(_Leg(f"ui-{index}", controller, task, verdict))
        told: tuple[_Leg, Outcome] | None = None
        try:
            waiting = {leg.task for leg in legs}
            failures: list[BaseException] = []
            while waiting:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                given: list[tuple[_Leg, Outcome]] = []
                for leg in legs:
                    if leg.task not in done:
                        continue
                    outcome = self._outcome(request, leg)
                    if outcome is not None:
                        given.append((leg, outcome))
                        continue
                    error = leg.task.exception()
                    assert error is not None
                    failures.append(error)
                if not given:
                    if signal is not None and signal.aborted:
                        raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
                    continue
                told = given[0]
                returned = given[-1] if self._flaws.returns_later else told
                if returned[1].answer is not None:
                    return returned[1].answer
                raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)
            raise failures[0]
        finally:
            await self._end(request, legs, told)

    def _outcome(self, request: AskUserQuestionRequest, leg: _Leg) -> Outcome | None:
        """The outcome *leg*'s UI gave, if it has ended with one."""
        if not leg.task.done() or leg.task.cancelled():
            return None
        error = leg.task.exception()
        if error is None:
            answer = leg.task.result()
            return (
                None
                if any(v.level == "MUST" for v in answer_violations(request, answer))
                else Outcome.answered(answer, via=leg.name)
            )
        cancelled = (
            isinstance(error, UserInteractionError) and error.code is ErrorCode.ASK_CANCELLED
        )
        if cancelled and not self._flaws.dismissal_drops_out:
            return Outcome.cancelled(via=leg.name)
        return None

    async def _end(
        self, request: AskUserQuestionRequest, legs: list[_Leg], told: tuple[_Leg, Outcome] | None
    ) -> None:
        """Withdraw the UIs still running, then give each its verdict."""
        outcome = Outcome.aborted() if told is None else told[1]
        running = [leg for leg in legs if not leg.task.done()]
        if not self._flaws.leaves_losers:
            said = (
                Outcome.cancelled(via=told[0].name)
                if self._flaws.says_dismissed and told
                else outcome
            )
            for leg in running:
                leg.controller.abort(None if self._flaws.silent_withdraw else Withdrawn(said))
            if running:
                await asyncio.wait([leg.task for leg in running])
        for leg in legs:
            if leg.verdict is None or leg.verdict.done():
                continue
            given = self._outcome(request, leg)
            if given is None or told is None:
                leg.verdict.cancel()
            elif given is told[1] if self._flaws.saved_by_identity else leg is told[0]:
                leg.verdict.set_result(Verdict("", "saved", told[1]))
            else:
                leg.verdict.set_result(Verdict("", "lost", outcome))


def _subject(flaws: Flaws) -> Callable[[], Subject]:
    """A factory of the fan-out with *flaws* over three surfaces."""

    def fan_out(uis: list[ScriptedSurface]) -> UserInteractionProvider:
        return FlawedFanOut(uis, flaws)

    @with_capabilities(Capabilities(surfaces=SURFACES))
    def factory() -> Subject:
        return make_fan_out_subject(SURFACES, fan_out=fan_out, name="flawed-fan-out")

    return factory


#: A fan-out without flaws, which the suite passes.
SOUND_FAN_OUT = _subject(Flaws())

BROKEN_FAN_OUTS: dict[str, tuple[Callable[[], Subject], str]] = {
    "withdraws-without-saying-how": (_subject(Flaws(silent_withdraw=True)), "SURF-TELL-1"),
    "leaves-losers-pending": (_subject(Flaws(leaves_losers=True)), "SURF-TELL-1"),
    "gives-no-verdicts": (_subject(Flaws(no_verdicts=True)), "SURF-TELL-1"),
    "returns-a-later-outcome": (_subject(Flaws(returns_later=True)), "SURF-ONE-1"),
    "says-dismissed-to-losers": (_subject(Flaws(says_dismissed=True)), "SURF-TELL-1"),
    "tells-the-winner-it-lost": (_subject(Flaws(saved_by_identity=True)), "SURF-TELL-1"),
    "dismissal-drops-out": (_subject(Flaws(dismissal_drops_out=True)), "SURF-ONE-1|SURF-CLOSE-1"),
}
