"""The fan-out subject's driver: each UI of a ``FanOutProvider`` is a surface it acts on.

These pin what :class:`~dsh_user_interaction_conformance.FanOutDriver` says
and does, directly, without the suite: acting on one surface, two at once,
acting too late, reloading, closing and opening again, and what each surface
says of how an ask ended.
"""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
    answer_custom,
    answer_of,
)
from dsh_user_interaction.durable import Outcome, Withdrawn
from dsh_user_interaction_conformance import (
    Dismiss,
    FanOutDriver,
    Nothing,
    ScriptedSurface,
    SurfaceDriver,
    Told,
    TypeText,
    fan_out_subject,
    make_fan_out_subject,
    run_suite,
)

from .gallery.fan_out import FlawedFanOut, Flaws
from .helpers import one_question, run


def typed(text: str) -> tuple[TypeText]:
    return (TypeText(text),)


def said(text: str) -> AskUserQuestionAnswer:
    return answer_of(answer_custom("q", text))


def started(
    provider: UserInteractionProvider, request: AskUserQuestionRequest
) -> asyncio.Task[AskUserQuestionAnswer]:
    return asyncio.ensure_future(provider.ask(request))


def driver_of(surfaces: int = 2) -> tuple[UserInteractionProvider, FanOutDriver]:
    subject = make_fan_out_subject(surfaces)
    assert isinstance(subject.driver, FanOutDriver)
    return subject.provider, subject.driver


def test_the_subject_declares_its_surfaces_and_its_driver_is_a_surface_driver() -> None:
    """fan_out_subject declares two surfaces; its driver has every SurfaceDriver method."""
    assert fan_out_subject.capabilities.surfaces == 2  # type: ignore[attr-defined]  # with_capabilities
    _provider, driver = driver_of(3)
    assert isinstance(driver, SurfaceDriver)
    assert driver.capabilities.surfaces == 3


def test_one_surface_answers_and_every_surface_says_how_it_ended() -> None:
    """The acting surface says answered here; the others, answered elsewhere; none shows it."""

    async def main() -> None:
        provider, driver = driver_of(3)
        request = one_question()
        asking = started(provider, request)
        for surface in range(3):
            await driver.perform_on(surface, request, Nothing())
            assert await driver.is_shown_on(surface, request)
        await driver.perform_on(1, request, typed("from one"))
        assert await asking == said("from one")
        told = [await driver.told_on(surface, request) for surface in range(3)]
        assert told == [
            Told("answered", here=False),
            Told("answered", here=True),
            Told("answered", here=False),
        ]
        assert not any([await driver.is_shown_on(s, request) for s in range(3)])

    run(main())


def test_two_surfaces_at_once_one_outcome_and_one_surface_says_it_won() -> None:
    """A race: the fan-out takes one, that surface says so, and the other says it lost."""

    async def main() -> None:
        provider, driver = driver_of()
        request = one_question()
        asking = started(provider, request)
        await asyncio.gather(
            driver.perform_on(1, request, typed("one")),
            driver.perform_on(0, request, Dismiss()),
        )
        with pytest.raises(UserInteractionError) as raised:
            await asking
        assert raised.value.code is ErrorCode.ASK_CANCELLED  # ui-0 comes first in a tie
        assert await driver.told_on(0, request) == Told("dismissed", here=True)
        assert await driver.told_on(1, request) == Told("dismissed", here=False)

    run(main())


def test_acting_too_late_returns_quietly_and_changes_nothing() -> None:
    """A surface acting on an ask that ended elsewhere returns, and says it ended there."""

    async def main() -> None:
        provider, driver = driver_of()
        request = one_question()
        asking = started(provider, request)
        await driver.perform_on(0, request, typed("first"))
        assert await asking == said("first")
        await driver.perform_on(1, request, typed("late"))
        assert await driver.told_on(1, request) == Told("answered", here=False)
        assert await driver.told_on(0, request) == Told("answered", here=True)

    run(main())


def test_reload_close_and_reopen_show_what_is_pending() -> None:
    """A closed surface shows nothing; reopened or reloaded, every pending ask and no ended one."""

    async def main() -> None:
        provider, driver = driver_of()
        first, second = one_question("a"), one_question("b")
        asks = [started(provider, first), started(provider, second)]
        for request in (first, second):
            await driver.perform_on(1, request, Nothing())
        await driver.close(1)
        assert not await driver.is_shown_on(1, first)
        await driver.perform_on(0, first, (TypeText("done"),))
        assert await asks[0] == answer_of(answer_custom("a", "done"))
        await driver.reopen(1)
        assert not await driver.is_shown_on(1, first)
        assert await driver.is_shown_on(1, second)
        await driver.reload(0)
        assert await driver.is_shown_on(0, second)
        await driver.perform_on(1, second, Dismiss())
        with pytest.raises(UserInteractionError):
            await asks[1]
        await driver.reload(1)
        assert not await driver.is_shown_on(1, second)

    run(main())


def test_a_closed_surface_acts_once_it_is_open_again() -> None:
    """perform_on waits for a closed surface to open again before its human can act."""

    async def main() -> None:
        provider, driver = driver_of()
        request = one_question()
        asking = started(provider, request)
        await driver.perform_on(1, request, Nothing())
        await driver.close(1)
        acting = asyncio.ensure_future(driver.perform_on(1, request, typed("back")))
        await asyncio.sleep(0)
        assert not acting.done()
        await driver.reopen(1)
        await acting
        assert await asking == said("back")

    run(main())


@pytest.mark.parametrize(
    ("reason", "told"),
    [(None, Told("withdrawn")), (TimeoutError("late"), Told("timed_out"))],
)
def test_the_agents_withdrawal_reads_as_withdrawn_or_timed_out(
    reason: BaseException | None, told: Told
) -> None:
    """An ask the agent aborts: every surface says withdrawn (or timed out), by no surface."""

    async def main() -> None:
        provider, driver = driver_of()
        controller = AbortController()
        request = one_question(signal=controller.signal)
        asking = started(provider, request)
        await driver.perform_on(0, request, Nothing())
        await driver.perform_on(1, request, Nothing())
        controller.abort(reason)
        with pytest.raises(UserInteractionError):
            await asking
        assert [await driver.told_on(s, request) for s in range(2)] == [told, told]

    run(main())


@pytest.mark.parametrize(
    ("outcome", "told"),
    [
        (Outcome.answered({"answers": [], "defaulted": True}), Told("answered")),
        (Outcome.expired(), Told("withdrawn")),
        (Outcome.expired(), Told("timed_out")),
        (Outcome.cancelled(via="web"), Told("dismissed", here=False)),
    ],
)
def test_the_durable_words_map_to_the_suites(outcome: Outcome, told: Told) -> None:
    """A defaulted ask reads as answered, an expired one as withdrawn (or timed out)."""
    timed_out = told.how == "timed_out"

    class Ends:
        """Shows the ask on its one UI, then withdraws it, saying *outcome* ended it."""

        def __init__(self, uis: list[ScriptedSurface]) -> None:
            self.ui = uis[0]

        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            controller = AbortController()
            leg = cast("AskUserQuestionRequest", {**request, "signal": controller.signal})
            asking = asyncio.ensure_future(self.ui.ask(leg))
            await self.ui.scripted.next_ask()
            controller.abort(Withdrawn(outcome, timed_out=timed_out))
            return await asking

    async def main() -> None:
        subject = make_fan_out_subject(1, fan_out=Ends)
        request = one_question()
        with pytest.raises(UserInteractionError):
            await subject.provider.ask(request)
        assert isinstance(subject.driver, FanOutDriver)
        assert await subject.driver.told_on(0, request) == told

    run(main())


def test_a_surface_without_a_verdict_believes_its_own_answer_won() -> None:
    """With no verdicts, both racing surfaces say their answer was taken (what the suite catches)."""

    async def main() -> None:
        subject = make_fan_out_subject(
            2, fan_out=lambda uis: FlawedFanOut(uis, Flaws(no_verdicts=True))
        )
        driver = subject.driver
        assert isinstance(driver, FanOutDriver)
        request = one_question()
        asking = started(subject.provider, request)
        await asyncio.gather(
            driver.perform_on(0, request, typed("zero")),
            driver.perform_on(1, request, typed("one")),
        )
        assert await asking == said("zero")
        assert [await driver.told_on(s, request) for s in range(2)] == [
            Told("answered", here=True),
            Told("answered", here=True),
        ]

    run(main())


def test_the_fan_out_subject_passes_the_surfaces_check_quickly() -> None:
    """The reference fan-out, two surfaces, passes the surfaces check (quick profile, seed 1)."""
    report = run_suite(
        subject_factory=fan_out_subject,
        kinds=["provider"],
        only=["surfaces"],
        profile="quick",
        seed=1,
    )
    assert report.ok
    judged = {r.requirement.id: r.status for r in report.results if r.examples}
    assert {judged[i] for i in ("SURF-ONE-1", "SURF-TELL-1", "SURF-CLOSE-1")} == {"passed"}
