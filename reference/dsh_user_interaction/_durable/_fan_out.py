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
* Every UI that asks for verdicts (:class:`~dsh_user_interaction.durable.VerdictAware`)
  gets one for its own request (``DUR-ACK-1``), so that two UIs that answer
  in the same loop step never both tell their human "answered here". Behind
  a relay, fan-out is ``VerdictAware`` itself, and the store's verdict
  decides: it reaches the UI whose outcome was offered; the others gave
  none, and theirs is cancelled. Without a relay (registered directly with
  an agent's service), fan-out gives the verdicts itself, once it has
  withdrawn the others: the UI whose outcome won hears ``saved`` with it,
  every other UI that gave an outcome (in the same step, or while it was
  withdrawn) hears ``lost`` with the outcome that won (the caller's abort,
  ``aborted``, when no UI's did), and the others' are cancelled, as are all
  of them when the call is cancelled first. Their ``ask_id`` is the
  request's ``askId``, or ``""`` when it has none.
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
        heard: dict[str, asyncio.Future[Verdict]] = {}
        asked: list[tuple[str, UserInteractionProvider, AbortController, AskUserQuestionRequest]]
        asked = []
        try:
            for name, ui in self._uis:
                controller = AbortController()
                own = controller.signal
                leg_signal = own if signal is None else AbortSignal.any([signal, own])
                leg_request = cast("AskUserQuestionRequest", {**request, "signal": leg_signal})
                if isinstance(ui, VerdictAware):
                    heard[name] = loop.create_future()
                    ui.expect_verdict(leg_request, heard[name])
                asked.append((name, ui, controller, leg_request))
        except BaseException:
            for future in heard.values():  # no UI was asked: none gives an outcome
                future.cancel()
            raise
        legs = [
            _Leg(name, controller, loop.create_task(_call(ui, leg), name=f"dsh-fan-out-{name}"))
            for name, ui, controller, leg in asked
        ]
        offered: list[str] = []  # the UI whose outcome this call offers, once it has one
        if verdict is not None:
            verdict.add_done_callback(lambda done: _pass_on(done, heard, offered))
        ask_id = cast("Mapping[str, object]", request).get("askId")
        # Without a relay's verdict, this call's own decides (DUR-ACK-1).
        telling = _Telling(request, heard, ask_id if isinstance(ask_id, str) else "")
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
            await self._withdraw(
                legs,
                winner,
                ask_id if isinstance(ask_id, str) else None,
                None if verdict is not None else telling,
            )

    async def _withdraw(
        self,
        legs: list[_Leg],
        winner: Outcome | None,
        ask_id: str | None,
        telling: _Telling | None,
    ) -> None:
        """Tell every UI still running how the ask ended, make sure it ends, keep late answers.

        With *telling* (no relay promised a verdict), each UI hears its
        verdict once the others have ended, the winner's first; a call
        cancelled meanwhile returns nothing to its caller, and no UI hears
        ``saved``.
        """
        running = [leg for leg in legs if not leg.task.done()]
        outcome = winner or Outcome.aborted()
        try:
            for leg in running:
                leg.controller.abort(Withdrawn(outcome, ask_id=ask_id))
            tasks = {leg.task for leg in running}
            if tasks and self._grace:
                _done, tasks = await asyncio.wait(tasks, timeout=self._grace)
            for task in tasks:
                task.cancel()
            if tasks:
                _done, tasks = await asyncio.wait(tasks, timeout=_LAST_WAIT)
        except BaseException:
            if telling is not None:
                telling.end()
            raise
        if telling is not None:
            telling.tell(legs, winner, outcome)
            telling.end()
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


@final
class _Telling:
    """The verdicts one ask gives its UIs itself, when no relay promised one (``DUR-ACK-1``)."""

    __slots__ = ("ask_id", "heard", "request")

    def __init__(
        self,
        request: AskUserQuestionRequest,
        heard: dict[str, asyncio.Future[Verdict]],
        ask_id: str,
    ) -> None:
        self.request = request
        self.heard = heard
        self.ask_id = ask_id

    def tell(self, legs: Sequence[_Leg], winner: Outcome | None, outcome: Outcome) -> None:
        """Each UI that has ended hears what became of its outcome, the winner first.

        The winner hears ``saved`` with *winner*; a UI that gave another
        outcome hears ``lost`` with *outcome*, the ask's; a UI that gave
        none (it failed, was withdrawn, or answered against the rules) has
        its future cancelled.
        """
        ordered = sorted(legs, key=lambda leg: winner is None or leg.name != winner.via)
        for leg in ordered:
            future = self.heard.get(leg.name)
            if future is None or future.done() or not leg.task.done():
                continue
            given = self._given(leg)
            if given is None:
                future.cancel()
            elif winner is not None and winner.via == leg.name:
                future.set_result(Verdict(self.ask_id, "saved", winner))
            else:
                future.set_result(Verdict(self.ask_id, "lost", outcome))

    def end(self) -> None:
        """Cancel what no UI will hear: theirs gave no outcome."""
        for future in self.heard.values():
            if not future.done():
                future.cancel()

    def _given(self, leg: _Leg) -> Outcome | None:
        """The outcome *leg*'s UI gave, named by it; ``None`` when it gave none."""
        if leg.task.cancelled():
            return None
        error = leg.task.exception()
        if error is None:
            answer = leg.task.result()
            if must_violations(self.request, answer):
                return None
            return Outcome.answered(answer, via=leg.name)
        if isinstance(error, UserInteractionError) and error.code is ErrorCode.ASK_CANCELLED:
            return Outcome.cancelled(via=leg.name)
        return None


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
