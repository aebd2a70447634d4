"""Fan-out tells each verdict-aware UI whether its outcome won (``DUR-FAN-1``, ``DUR-ACK-1``).

Registered directly with an agent's service, no relay promises a verdict, so
:class:`~dsh_user_interaction.durable.FanOutProvider` gives its UIs their own:
``saved`` to the UI whose outcome won, ``lost`` with the winning outcome to
every other UI that gave one, and a cancelled future to the rest. Behind a
relay the store's verdict still decides.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    answer_custom,
    answer_of,
)
from dsh_user_interaction.durable import (
    FanOutProvider,
    LostAnswer,
    Outcome,
    Verdict,
    VerdictAware,
    Withdrawn,
    with_ask_id,
)

from .helpers import one_question, run


class Hearing:
    """A scripted UI that keeps the verdict future it is handed for each request."""

    def __init__(self) -> None:
        self.scripted = ScriptedProvider()
        self.verdicts: list[asyncio.Future[Verdict]] = []

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        assert request.get("signal") is not None
        self.verdicts.append(verdict)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.scripted.ask(request)


def said(text: str) -> AskUserQuestionAnswer:
    return answer_of(answer_custom("q", text))


def keep_loop_errors() -> list[dict[str, Any]]:
    """The running loop's exception handler contexts, collected instead of logged."""
    seen: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: seen.append(context))
    return seen


def test_two_answers_in_one_step_one_saved_and_the_other_lost() -> None:
    """The first UI in order wins a tie and hears saved; the other hears lost with that answer."""

    async def main() -> None:
        seen = keep_loop_errors()
        desk, phone = Hearing(), Hearing()
        asking = asyncio.ensure_future(
            FanOutProvider({"desk": desk, "phone": phone}).ask(with_ask_id(one_question(), "f"))
        )
        on_desk = await desk.scripted.next_ask()
        on_phone = await phone.scripted.next_ask()
        on_phone.answer(said("phone"))
        on_desk.answer(said("desk"))  # the same loop step
        assert await asking == said("desk")
        (desk_told,) = desk.verdicts
        (phone_told,) = phone.verdicts
        assert desk_told.result() == Verdict(
            "f", "saved", Outcome.answered(said("desk"), via="desk")
        )
        assert phone_told.result() == Verdict(
            "f", "lost", Outcome.answered(said("desk"), via="desk")
        )
        assert phone_told.result().how == "answered"
        # The losing answer is still reported, never dropped silently (DUR-LOST-1).
        (context,) = seen
        assert isinstance(context["exception"], LostAnswer)
        assert context["exception"].answer == said("phone")

    run(main())


def test_the_winner_hears_saved_before_the_ask_returns_and_the_withdrawn_are_cancelled() -> None:
    """A UI that gave no outcome (withdrawn) hears no verdict: its future is cancelled."""

    async def main() -> None:
        desk, phone = Hearing(), Hearing()
        asking = asyncio.ensure_future(FanOutProvider([desk, phone]).ask(one_question()))
        await desk.scripted.next_ask()
        on_phone = await phone.scripted.next_ask()
        on_phone.answer(said("phone"))
        assert await asking == said("phone")
        (phone_told,) = phone.verdicts
        assert phone_told.result() == Verdict(
            "", "saved", Outcome.answered(said("phone"), via="ui-1")
        )
        (desk_told,) = desk.verdicts
        assert desk_told.cancelled()

    run(main())


def test_a_dismissal_wins_and_an_answer_in_the_same_step_is_told_it_lost() -> None:
    """A winning dismissal is saved as cancelled; a tied answer hears lost, as dismissed."""

    async def main() -> None:
        keep_loop_errors()
        desk, phone = Hearing(), Hearing()
        asking = asyncio.ensure_future(
            FanOutProvider({"desk": desk, "phone": phone}).ask(one_question())
        )
        on_desk = await desk.scripted.next_ask()
        on_phone = await phone.scripted.next_ask()
        on_desk.dismiss()
        on_phone.answer(said("phone"))
        with pytest.raises(UserInteractionError) as raised:
            await asking
        assert raised.value.code is ErrorCode.ASK_CANCELLED
        assert desk.verdicts[0].result() == Verdict("", "saved", Outcome.cancelled(via="desk"))
        lost = phone.verdicts[0].result()
        assert (lost.state, lost.outcome, lost.how) == (
            "lost",
            Outcome.cancelled(via="desk"),
            "dismissed",
        )

    run(main())


def test_a_ui_that_answers_as_it_is_withdrawn_hears_lost() -> None:
    """An answer given while the UI is withdrawn (within its grace) is told it lost."""

    class Stubborn(Hearing):
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            signal = request.get("signal")
            assert signal is not None
            withdrawn = asyncio.Event()
            signal.add_listener(lambda _signal: withdrawn.set())
            await withdrawn.wait()
            return said("too late")  # answers anyway, after the abort

    async def main() -> None:
        seen = keep_loop_errors()
        quick, stubborn = Hearing(), Stubborn()
        asking = asyncio.ensure_future(FanOutProvider([quick, stubborn]).ask(one_question()))
        (await quick.scripted.next_ask()).answer(said("first"))
        assert await asking == said("first")
        assert quick.verdicts[0].result().state == "saved"
        lost = stubborn.verdicts[0].result()
        assert (lost.state, lost.outcome) == (
            "lost",
            Outcome.answered(said("first"), via="ui-0"),
        )
        assert [type(context["exception"]) for context in seen] == [LostAnswer]

    run(main())


def test_a_bad_answer_and_an_abort_give_no_verdict() -> None:
    """An answer against the rules is no outcome; on the caller's abort no UI hears saved."""

    async def main() -> None:
        desk, phone = Hearing(), Hearing()
        controller = AbortController()
        asking = asyncio.ensure_future(
            FanOutProvider([desk, phone]).ask(one_question(signal=controller.signal))
        )
        (await desk.scripted.next_ask()).answer({"answers": [{"id": "other", "selected": []}]})
        await phone.scripted.next_ask()
        await asyncio.sleep(0)
        assert not asking.done()  # the bad answer dropped out; the phone still shows the ask
        controller.abort()
        with pytest.raises(UserInteractionError) as raised:
            await asking
        assert raised.value.code is ErrorCode.ASK_ABORTED
        assert desk.verdicts[0].cancelled()
        assert phone.verdicts[0].cancelled()

    run(main())


def test_behind_a_relay_the_relays_verdict_decides() -> None:
    """With a promised verdict, fan-out gives none of its own: the relay's reaches the winner."""

    async def main() -> None:
        keep_loop_errors()
        desk, phone = Hearing(), Hearing()
        both = FanOutProvider({"desk": desk, "phone": phone})
        assert isinstance(both, VerdictAware)
        request = with_ask_id(one_question(), "r")
        promised: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        both.expect_verdict(request, promised)
        asking = asyncio.ensure_future(both.ask(request))
        on_desk = await desk.scripted.next_ask()
        on_phone = await phone.scripted.next_ask()
        on_desk.answer(said("desk"))
        on_phone.answer(said("phone"))
        assert await asking == said("desk")
        assert not desk.verdicts[0].done()  # the store has not decided yet
        elsewhere = Outcome.answered(said("web"), via="web")
        promised.set_result(Verdict("r", "lost", elsewhere))
        assert await desk.verdicts[0] == Verdict("r", "lost", elsewhere)
        assert phone.verdicts[0].cancelled()

    run(main())


def test_a_ui_whose_expect_verdict_raises_leaves_nothing_running() -> None:
    """A UI that breaks VerdictAware stops the ask before any UI is shown it, futures cancelled."""

    class Breaks(Hearing):
        def expect_verdict(
            self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
        ) -> None:
            raise RuntimeError("broken")

    async def main() -> None:
        first = Hearing()
        before = asyncio.all_tasks()
        with pytest.raises(RuntimeError):
            await FanOutProvider([first, Breaks()]).ask(one_question())
        assert first.verdicts[0].cancelled()
        assert first.scripted.asked == 0
        assert asyncio.all_tasks() <= before

    run(main())


def test_a_withdrawn_ui_still_reads_how_the_ask_ended() -> None:
    """The verdicts add to the Withdrawn reason, which a withdrawn UI still gets."""

    async def main() -> None:
        desk, phone = Hearing(), Hearing()
        asking = asyncio.ensure_future(
            FanOutProvider({"desk": desk, "phone": phone}).ask(one_question())
        )
        on_desk = await desk.scripted.next_ask()
        (await phone.scripted.next_ask()).dismiss()
        with contextlib.suppress(UserInteractionError):
            await asking
        signal = on_desk.request.get("signal")
        assert signal is not None
        assert isinstance(signal.reason, Withdrawn)
        assert (signal.reason.how, signal.reason.outcome.via) == ("dismissed", "phone")
        assert desk.verdicts[0].cancelled()

    run(main())


def test_a_call_cancelled_while_it_withdraws_tells_no_ui_saved() -> None:
    """The verdicts come once the others have ended: a cancelled call gives none, not saved."""

    class Slow(Hearing):
        """Ends only when cancelled, however it is withdrawn."""

        def __init__(self) -> None:
            super().__init__()
            self.withdrawn = asyncio.Event()

        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            signal = request.get("signal")
            assert signal is not None
            signal.add_listener(lambda _signal: self.withdrawn.set())
            await asyncio.Event().wait()
            raise AssertionError

    async def main() -> None:
        quick, slow = Hearing(), Slow()
        asking = asyncio.ensure_future(
            FanOutProvider([quick, slow], withdraw_grace=1.0).ask(one_question())
        )
        (await quick.scripted.next_ask()).answer(said("first"))
        await slow.withdrawn.wait()
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        assert quick.verdicts[0].cancelled()
        assert slow.verdicts[0].cancelled()

    run(main())
