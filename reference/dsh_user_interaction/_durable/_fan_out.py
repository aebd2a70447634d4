"""One ask on several UIs at once: the first outcome wins, the others are withdrawn.

Design notes:

* Each UI gets the request with a signal of its own, which also follows the
  caller's signal (``AbortSignal.any``), so aborting the ask aborts them all.
* The first *outcome* wins (``DUR-FAN-1``): an answer that keeps the answer
  rules, or a dismissal (``ASK_CANCELLED``). A UI that fails otherwise
  (disposed, crashed, or answered against the rules) drops out, and the ask
  goes on with the others; when every UI has dropped out, the first UI's
  error is raised (a rejected answer stays on its ``BAD_ANSWER`` error).
* Every other UI's signal then aborts with a
  :class:`~dsh_user_interaction.durable.Withdrawn` reason naming the
  outcome and the UI that gave it; a UI still running after *withdraw_grace*
  seconds is cancelled, and the ask waits (up to one more second) for it to
  end, so nothing is left running (``PRV-LEAK-1``).
* Behind a relay, fan-out is :class:`~dsh_user_interaction.durable.VerdictAware`
  (``DUR-ACK-1``): each UI that asks for verdicts gets one for its own
  request, and the store's verdict reaches the UI whose outcome was offered;
  the others gave none, and theirs is cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Final, cast, final

from .._abort import AbortController, AbortSignal
from .._checks import bad_answer, must_violations
from .._errors import ErrorCode, UserInteractionError
from .._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider
from ._store import Outcome
from ._verdict import Verdict, VerdictAware
from ._withdrawn import LostAnswer, Withdrawn

__all__ = ["FanOutProvider"]

#: How long a cancelled UI may take to end, after its grace, before the ask leaves it.
_LAST_WAIT: Final = 1.0
#: UIs that ignored their cancellation, kept referenced until they end.
_LEFT: Final[set[asyncio.Task[AskUserQuestionAnswer]]] = set()


@final
class _Leg:
    __slots__ = ("controller", "name", "task")

    def __init__(
        self, name: str, controller: AbortController, task: asyncio.Task[AskUserQuestionAnswer]
    ) -> None:
        self.name = name
        self.controller = controller
        self.task = task


@final
class FanOutProvider:
    """Shows each ask on every UI; the first answer or dismissal wins.

    *uis* is a sequence of providers (named ``ui-0``, ``ui-1``, ...) or a
    mapping of names to providers; the names say where an ask ended, in the
    :class:`~dsh_user_interaction.durable.Withdrawn` reason the others get.

    >>> import asyncio
    >>> from dsh_user_interaction import ScriptedProvider, answer_of, answer_custom
    >>> async def main():
    ...     slow, fast = ScriptedProvider(), ScriptedProvider(
    ...         respond=lambda request: answer_of(answer_custom("q", "from the phone")))
    ...     both = FanOutProvider({"desk": slow, "phone": fast})
    ...     return await both.ask({"questions": [{"id": "q", "question": "Go?"}]})
    >>> asyncio.run(main())
    {'answers': [{'id': 'q', 'selected': [], 'custom': 'from the phone'}]}
    """

    __slots__ = ("_grace", "_uis", "_verdicts")

    def __init__(
        self,
        uis: Sequence[UserInteractionProvider] | Mapping[str, UserInteractionProvider],
        *,
        withdraw_grace: float = 0.25,
    ) -> None:
        named = (
            list(uis.items())
            if isinstance(uis, Mapping)
            else [(f"ui-{index}", ui) for index, ui in enumerate(uis)]
        )
        if not named:
            msg = "FanOutProvider needs at least one UI"
            raise ValueError(msg)
        if isinstance(withdraw_grace, bool) or not 0 <= withdraw_grace <= 1:
            msg = f"withdraw_grace must be from 0 to 1 seconds, got {withdraw_grace!r}"
            raise ValueError(msg)
        self._uis: tuple[tuple[str, UserInteractionProvider], ...] = tuple(named)
        self._grace = float(withdraw_grace)
        #: The verdicts a relay promised, by the request's identity, until it is asked.
        self._verdicts: dict[int, tuple[AskUserQuestionRequest, asyncio.Future[Verdict]]] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The UIs' names, in order."""
        return tuple(name for name, _ in self._uis)

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        """A relay's promise of the store's verdict on *request*'s outcome (``DUR-ACK-1``).

        It is passed on to the UI whose outcome was offered, when that UI
        asks for verdicts.
        """
        key = id(request)
        self._verdicts[key] = (request, verdict)

        def forget(_done: asyncio.Future[Verdict]) -> None:
            kept = self._verdicts.get(key)
            if kept is not None and kept[1] is verdict:
                del self._verdicts[key]

        verdict.add_done_callback(forget)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask every UI at once; return the first answer, or raise the first dismissal."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        loop = asyncio.get_running_loop()
        promised = self._verdicts.pop(id(request), None)
        verdict = promised[1] if promised is not None and promised[0] is request else None
        legs: list[_Leg] = []
        heard: dict[str, asyncio.Future[Verdict]] = {}
        for name, ui in self._uis:
            controller = AbortController()
            own = controller.signal
            leg_signal = own if signal is None else AbortSignal.any([signal, own])
            leg_request = cast("AskUserQuestionRequest", {**request, "signal": leg_signal})
            if verdict is not None and isinstance(ui, VerdictAware):
                heard[name] = loop.create_future()
                ui.expect_verdict(leg_request, heard[name])
            task = loop.create_task(_call(ui, leg_request), name=f"dsh-fan-out-{name}")
            legs.append(_Leg(name, controller, task))
        offered: list[str] = []  # the UI whose outcome this call offers, once it has one
        if verdict is not None:
            verdict.add_done_callback(lambda done: _pass_on(done, heard, offered))
        ask_id = cast("Mapping[str, object]", request).get("askId")
        winner: Outcome | None = None
        try:
            failures: list[BaseException] = []
            waiting = {leg.task for leg in legs}
            while waiting:
                _done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for leg in legs:  # in the UIs' order, so that a tie is decided the same way
                    if leg.task not in _done:
                        continue
                    if leg.task.cancelled():
                        failures.append(asyncio.CancelledError(f"{leg.name} was cancelled"))
                        continue
                    error = leg.task.exception()
                    if error is None:
                        answer = leg.task.result()
                        violations = must_violations(request, answer)
                        if violations:
                            failures.append(bad_answer(answer, violations))
                            continue
                        winner = Outcome.answered(answer, via=leg.name)
                        offered.append(leg.name)
                        return answer
                    if isinstance(error, UserInteractionError):
                        if error.code is ErrorCode.ASK_CANCELLED:
                            winner = Outcome.cancelled(via=leg.name)
                            offered.append(leg.name)
                            raise error
                        if (
                            error.code is ErrorCode.ASK_ABORTED
                            and signal is not None
                            and signal.aborted
                        ):
                            raise UserInteractionError.of(ErrorCode.ASK_ABORTED) from None
                    failures.append(error)
            raise failures[0]
        finally:
            await self._withdraw(legs, winner, ask_id if isinstance(ask_id, str) else None)

    async def _withdraw(self, legs: list[_Leg], winner: Outcome | None, ask_id: str | None) -> None:
        """Tell every UI still running how the ask ended, make sure it ends, keep late answers."""
        running = [leg for leg in legs if not leg.task.done()]
        outcome = winner or Outcome.aborted()
        for leg in running:
            leg.controller.abort(Withdrawn(outcome, ask_id=ask_id))
        tasks = {leg.task for leg in running}
        if tasks and self._grace:
            _done, tasks = await asyncio.wait(tasks, timeout=self._grace)
        for task in tasks:
            task.cancel()
        if tasks:
            _done, tasks = await asyncio.wait(tasks, timeout=_LAST_WAIT)
        for task in tasks:
            _LEFT.add(task)
            task.add_done_callback(_LEFT.discard)
        loop = asyncio.get_running_loop()
        for leg in legs:
            if not leg.task.done() or leg.task.cancelled() or leg.task.exception() is not None:
                continue  # (reading the exception marks it retrieved)
            if winner is not None and winner.state == "answered" and winner.via == leg.name:
                continue
            # An answer that did not win (given as the ask ended): never dropped silently.
            lost = LostAnswer(leg.task.result(), outcome, ask_id=ask_id)
            loop.call_exception_handler({"message": str(lost), "exception": lost})


async def _call(
    ui: UserInteractionProvider, request: AskUserQuestionRequest
) -> AskUserQuestionAnswer:
    return await ui.ask(request)


def _pass_on(
    verdict: asyncio.Future[Verdict],
    heard: Mapping[str, asyncio.Future[Verdict]],
    offered: list[str],
) -> None:
    """The store's *verdict* to the UI whose outcome was offered; the others gave none."""
    for name, future in heard.items():
        if future.done():
            continue
        if verdict.cancelled() or name not in offered:
            future.cancel()
        else:
            future.set_result(verdict.result())
