"""The seam: one registered provider and an async ``ask()``.

Design notes (the invariants this module keeps):

Rule 1: ``ask()`` raises nothing before it is awaited. Every check failure
is raised from the coroutine, in the spec's stage order (``SVC-ORDER-1`` to
``SVC-ORDER-5``), and the provider is never called when a check fails.

Rule 2: the provider runs inside the caller's task; ``ask()`` creates no task.
To interrupt a pending provider (the request's signal aborted, or the
registration was disposed) the service cancels the caller's task, the way
``asyncio.timeout`` does, remembering that the cancellation is its own. When
the ``CancelledError`` comes back out of the provider, the service takes back
its own request with ``Task.uncancel()`` and raises ``ASK_ABORTED`` or
``PROVIDER_DISPOSED`` instead. If somebody else also cancelled the task, the
count stays above where it started, and the ``CancelledError`` propagates
unchanged: a caller's cancellation is never swallowed or turned into a code.
A provider that ignores the cancellation and stays pending is left behind
after ``cancel_grace`` seconds (``_provider_call.py``), and ``ask()`` goes on
as if it had re-raised it (``SVC-LEAVE-1``).

Rule 3: an interrupt asked for from inside the caller's own task (a provider
that aborts its own request, say) is delivered one loop step later, so it
always lands while the provider is suspended. A provider that has returned
before the interrupt lands keeps its answer (``SVC-ABORT-2``).

Rule 4: a provider that swallows the interrupt and answers anyway does not
win: ``ask()`` raises the interrupt's error, with the late answer kept on it
as ``error.answer``. A human's answer is never dropped silently.

Rule 5: after ``ask()`` settles, in any way, it leaves nothing behind: its
signal listener is removed and its pending record is gone.

Rule 6: the provider's first step runs before any of this wiring. Until the
provider first suspends only its own code runs, so nothing else can abort,
dispose or cancel the ask in that step, and a provider that answers in it (a
scripted one, an answer already given) gets no task look-up, listener, timer
or pending record: its answer goes straight to the checks. When it suspends,
the service wires the call, then looks at what the step itself did: a signal
it aborted or a registration it disposed interrupts the call as Rule 3 says
(the abort, when it did both), and the task's cancellation count read then
is the baseline of Rule 2. So a cancellation of the caller's task that the
provider itself made in its first step counts as one from before the call:
asyncio delivers it to the provider at its suspension, and what the provider
makes of it is its outcome; made in a step that answers, it is delivered at
the caller's next suspension, as asyncio delivers any cancellation of a
running task. Either way it is never lost.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Generator, Iterable, Mapping
from types import CoroutineType, TracebackType
from typing import Any, Final, cast, final

from ._abort import AbortSignal
from ._checks import (
    RequestIndex,
    bad_answer,
    check_first_stages,
    checked_request,
    fast_answer_accepted,
    must_violations,
    unreadable_request,
)
from ._deadline import deadline_of, default_answer, is_timeout
from ._errors import MESSAGES, ErrorCode, UserInteractionError
from ._gate import CallerGate
from ._observers import (
    DEFAULT_OBSERVER_TIMEOUT,
    AskEvent,
    AskObserver,
    Observers,
    ask_id_in,
    outcome_of,
)
from ._provider_call import DEFAULT_CANCEL_GRACE, LONGEST_GRACE, suspended_call
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider

__all__ = ["Registration", "UserInteractionService"]


@final
class Registration:
    """The handle :meth:`UserInteractionService.register_provider` returns.

    Call it, call :meth:`dispose`, or leave its ``with`` block to unregister
    the provider. Disposing twice does nothing, and a stale registration never
    unregisters a provider registered after it.
    """

    __slots__ = ("_active", "_on_dispose", "_provider")

    def __init__(
        self,
        provider: UserInteractionProvider,
        on_dispose: Callable[[Registration], None],
    ) -> None:
        self._provider = provider
        self._on_dispose = on_dispose
        self._active = True

    @property
    def provider(self) -> UserInteractionProvider:
        """The registered provider."""
        return self._provider

    @property
    def active(self) -> bool:
        """Whether this registration is still the service's provider."""
        return self._active

    def dispose(self) -> None:
        """Unregister the provider; its pending asks raise ``PROVIDER_DISPOSED``."""
        if self._active:
            self._active = False
            self._on_dispose(self)

    def __call__(self) -> None:
        """Same as :meth:`dispose`, like the original's disposer function."""
        self.dispose()

    def __enter__(self) -> Registration:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.dispose()

    def __repr__(self) -> str:
        state = "active" if self._active else "disposed"
        return f"<Registration {state} provider={self._provider!r}>"


#: The longest grace ``SVC-LEAVE-1`` allows a provider that ignores its cancellation.
_MOST_GRACE = LONGEST_GRACE


def _checked_grace(grace: object) -> float:
    if isinstance(grace, bool) or not isinstance(grace, (int, float)):
        msg = f"cancel_grace must be a number of seconds, got {grace!r}"
        raise TypeError(msg)
    if not 0 <= grace <= _MOST_GRACE:
        msg = f"cancel_grace must be from 0 to {_MOST_GRACE:g} seconds, got {grace!r}"
        raise ValueError(msg)
    return float(grace)


class _Call:
    """One pending ``ask()``: who runs it and whether it was interrupted."""

    __slots__ = (
        "by_deadline",
        "cancelled",
        "interrupt",
        "registration",
        "settled",
        "task",
        "timed_out",
    )

    def __init__(self, task: asyncio.Task[object], registration: Registration) -> None:
        self.task = task
        self.registration = registration
        #: Why the service interrupts this call, once it does.
        self.interrupt: ErrorCode | None = None
        #: Whether the interrupt is a timeout (POL-TIMEOUT-1), and whether it is
        #: the request's own deadline, which may answer with defaults.
        self.timed_out = False
        self.by_deadline = False
        #: Whether the service has called ``task.cancel()`` for it.
        self.cancelled = False
        self.settled = False

    def aborted(self, signal: AbortSignal) -> None:
        self.stop(ErrorCode.ASK_ABORTED, timed_out=is_timeout(signal.reason))

    def deadline_passed(self) -> None:
        self.stop(ErrorCode.ASK_ABORTED, timed_out=True, by_deadline=True)

    def error(self, answer: object | None = None) -> UserInteractionError:
        """The error of this call's interrupt, keeping a late *answer* (Rule 4)."""
        if self.timed_out:
            return UserInteractionError.timed_out_error(answer=answer)
        return UserInteractionError.of(self.interrupt or ErrorCode.ASK_ABORTED, answer=answer)

    def stop(self, code: ErrorCode, *, timed_out: bool = False, by_deadline: bool = False) -> None:
        if self.settled or self.interrupt is not None:
            return
        self.interrupt = code
        self.timed_out = timed_out
        self.by_deadline = by_deadline
        loop = self.task.get_loop()
        if asyncio.current_task(loop) is self.task:
            # Rule 3: we are inside the caller's own step; land it later.
            loop.call_soon(self._cancel)
        else:
            self._cancel()

    def _cancel(self) -> None:
        if not self.settled:
            self.cancelled = True
            self.task.cancel(MESSAGES[self.interrupt or ErrorCode.ASK_ABORTED])


@final
class UserInteractionService:
    """The seam between model-facing tools and the one UI provider.

    >>> import asyncio
    >>> from dsh_user_interaction import ScriptedProvider, answer_selected, answer_of
    >>> async def main():
    ...     service = UserInteractionService()
    ...     provider = ScriptedProvider(
    ...         respond=lambda request: answer_of(answer_selected("go", "Yes")))
    ...     with service.register_provider(provider):
    ...         return await service.ask({"questions": [
    ...             {"id": "go", "question": "Proceed?",
    ...              "options": [{"label": "Yes"}, {"label": "No"}]}]})
    >>> asyncio.run(main())
    {'answers': [{'id': 'go', 'selected': ['Yes']}]}

    With ``strict=True`` (the default) every answer is checked against the
    answer rules, and one that breaks a ``MUST`` raises ``BAD_ANSWER`` with
    the raw answer kept on the error.

    The policies of spec section 8 are opt-in: *gate*, a
    :class:`~dsh_user_interaction.CallerGate` judged between the empty-batch
    and the structural checks; *observers* (and :meth:`observe`), told when
    an ask becomes pending and how it settled, each asynchronous one bounded
    by *observer_timeout* seconds; and a request's own ``deadline`` and
    defaults, honoured unless *enforce_deadlines* is false (a relay's service
    shows a stored ask whose deadline the agent's side keeps).

    *enforce_aborts* (true by default) is whether the service interrupts a
    pending provider when the request's signal aborts (``SVC-ABORT-1``).
    Set it, with *enforce_deadlines*, to false only for a provider that ends
    its asks itself and must not be cut short, such as a durable provider,
    whose outcome is the one its store records (``DUR-AGREE-2``); a signal
    already aborted when ``ask()`` is called still raises ``ASK_ABORTED``.
    A provider that says so itself, with a class attribute
    ``keeps_own_time = True`` (:class:`~dsh_user_interaction.durable.DurableProvider`
    does), is left both whatever the switches say.

    *cancel_grace* (0.25 s by default, at most 1 s) is how long a provider
    whose call was cancelled may take to end it. One still pending then is
    left behind, running on in a task of its own, and the ask settles without
    it; if it answers later, the loop's exception handler gets the answer.
    """

    __slots__ = (
        "_calls",
        "_cancel_grace",
        "_enforce_aborts",
        "_enforce_deadlines",
        "_gate",
        "_observers",
        "_registration",
        "_strict",
    )

    def __init__(
        self,
        *,
        strict: bool = True,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        gate: CallerGate | None = None,
        observers: Iterable[AskObserver] = (),
        observer_timeout: float = DEFAULT_OBSERVER_TIMEOUT,
        enforce_deadlines: bool = True,
        enforce_aborts: bool = True,
    ) -> None:
        self._strict = strict
        self._enforce_deadlines = enforce_deadlines
        self._enforce_aborts = enforce_aborts
        self._cancel_grace = _checked_grace(cancel_grace)
        if gate is not None and not callable(getattr(gate, "judge", None)):
            msg = f"gate must have a judge(agent) method, got {type(gate).__name__}"
            raise TypeError(msg)
        self._gate = gate
        self._observers = Observers(_checked_observer_timeout(observer_timeout))
        for observer in observers:
            self._observers.add(observer)
        self._registration: Registration | None = None
        self._calls: set[_Call] = set()

    @property
    def gate(self) -> CallerGate | None:
        """The caller gate, if the service has one (``GATE-1``)."""
        return self._gate

    def observe(self, observer: AskObserver) -> Callable[[], None]:
        """Call *observer* with an :class:`AskEvent` when an ask becomes pending and settles.

        Returns a function that removes it. Observers never block or break an
        ask (``OBS-SAFE-1``): see :mod:`the observers' notes <dsh_user_interaction>`.
        """
        return self._observers.add(observer)

    @property
    def strict(self) -> bool:
        """Whether answers are checked."""
        return self._strict

    @property
    def cancel_grace(self) -> float:
        """How long a cancelled provider may take to end its call before it is left behind."""
        return self._cancel_grace

    @property
    def provider(self) -> UserInteractionProvider | None:
        """The registered provider, if any."""
        registration = self._registration
        return None if registration is None else registration.provider

    @property
    def pending_count(self) -> int:
        """How many asks are waiting for the provider; for leak checks.

        An ask counts once its provider has suspended; one whose provider
        answers in its first step is never pending (Rule 6 of the design notes).
        """
        return len(self._calls)

    def register_provider(self, provider: UserInteractionProvider) -> Registration:
        """Register *provider*, the one UI that answers every ask.

        Raises ``DUPLICATE_PROVIDER`` at once while a provider is registered,
        even when it is the same object.
        """
        if self._registration is not None:
            raise UserInteractionError.of(ErrorCode.DUPLICATE_PROVIDER)
        # Note: the original returns a bare disposer function; a Registration is
        # callable like one, and is also a context manager with dispose().
        registration = Registration(provider, self._unregister)
        self._registration = registration
        return registration

    def _unregister(self, registration: Registration) -> None:
        if self._registration is registration:
            self._registration = None
        # Note: the original leaves pending asks waiting on a UI that is gone; here
        # they raise PROVIDER_DISPOSED, a code of this spec (SVC-DISPOSE-1).
        for call in [call for call in self._calls if call.registration is registration]:
            call.stop(ErrorCode.PROVIDER_DISPOSED)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask the human through the registered provider and return the answer.

        Raises :class:`UserInteractionError` with, in check order:
        ``ASK_ABORTED`` (signal already aborted), ``EMPTY_QUESTIONS``,
        ``BAD_REQUEST``, ``BAD_INTENT``, ``NO_PROVIDER``; then, while waiting,
        ``ASK_ABORTED`` (signal aborted) or ``PROVIDER_DISPOSED``; then
        ``BAD_ANSWER`` for a strict service. Errors the provider raises, such
        as ``ASK_CANCELLED``, propagate unchanged, and so does cancellation.
        """
        registration = self._registration
        try:
            if self._gate is not None:
                check_first_stages(request)
                self._judge(request)
            index = checked_request(request, has_provider=registration is not None)
        except UserInteractionError as error:
            if error.code is ErrorCode.ASK_ABORTED and _timeout_signal(request):
                raise UserInteractionError.timed_out_error() from None
            raise
        if registration is None:  # pragma: no cover - check_request raised
            raise UserInteractionError.of(ErrorCode.NO_PROVIDER)
        # The fast path leaves requests with a deadline to the full rules.
        deadline = (
            deadline_of(request)
            if index is None
            and self._enforce_deadlines
            and not _keeps_own_time(registration._provider)  # noqa: SLF001 - this module's class
            else None
        )
        if not self._observers.observers:
            return await self._wait(request, registration, index, deadline)
        self._observers.tell(AskEvent("pending", request, ask_id_in(request)))
        try:
            answer = await self._wait(request, registration, index, deadline)
        except BaseException as error:
            settled = AskEvent(
                "settled", request, ask_id_in(request), outcome_of(None, error), error=error
            )
            self._observers.tell(settled)
            raise
        outcome = outcome_of(answer, None)
        self._observers.tell(AskEvent("settled", request, ask_id_in(request), outcome, answer))
        return answer

    def _judge(self, request: object) -> None:
        """The caller gate's stage (``GATE-1`` to ``GATE-3``), between stages 2 and 3."""
        gate = self._gate
        if gate is None:  # pragma: no cover - only called with a gate
            return
        # A request that is not a mapping has no agent; BAD_REQUEST words it later.
        try:
            agent = (
                cast("Mapping[str, object]", request).get("agent")
                if isinstance(request, Mapping)
                else None
            )
        except Exception as error:  # noqa: BLE001 - a request that cannot be read is malformed
            # Fail closed: an agent that cannot be read is never admitted.
            raise unreadable_request(error) from None
        verdict: object = gate.judge(agent)
        if verdict is None:
            return
        if type(verdict) is ErrorCode and verdict in _REFUSALS:
            raise UserInteractionError.of(verdict)
        msg = (
            f"caller gate {self._gate!r} returned {verdict!r}; expected None,"
            " ErrorCode.CALLER_NOT_LIVE or ErrorCode.DELEGATED_CALLER"
        )
        raise TypeError(msg)

    async def _wait(
        self,
        request: AskUserQuestionRequest,
        registration: Registration,
        index: RequestIndex | None,
        deadline: float | None,
    ) -> AskUserQuestionAnswer:
        """Ask the provider, wait for it and check its answer.

        A deadline that has already passed still asks the provider, and
        interrupts it at once: a durable provider asked again after a restart
        may hold the human's answer, given before the deadline.
        """
        pending = registration._provider.ask(request)  # noqa: SLF001 - this module's class
        # The provider's first step, taken here as ``await`` would: most answer
        # without suspending, and need no wiring (Rule 6).
        steps = pending if type(pending) is CoroutineType else pending.__await__()
        try:
            try:
                waiting = steps.send(None)
            except StopIteration as stop:
                answer: AskUserQuestionAnswer = stop.value
            else:
                answer = await self._suspended(request, registration, steps, waiting, deadline)
        except UserInteractionError as error:
            defaults = _defaults_by_the_providers_clock(request, error)
            if defaults is None:
                raise
            return defaults  # POL-DEFAULT-1, by the provider's clock
        # Note: the original never checks answers; a strict service does (SVC-STRICT-1).
        if self._strict and (index is None or not fast_answer_accepted(request, answer, index)):
            kept = deadline_of(request) if deadline is None else deadline
            if kept is not None and _replayed_defaults(request, answer, kept):
                return answer  # POL-DEFAULT-3: a store's record of this ask's defaults
            violations = must_violations(request, answer)
            if violations:
                raise bad_answer(answer, violations)
        return answer

    async def _suspended(
        self,
        request: AskUserQuestionRequest,
        registration: Registration,
        steps: Generator[Any, None, AskUserQuestionAnswer]
        | Coroutine[Any, None, AskUserQuestionAnswer],
        waiting: object,
        deadline: float | None,
    ) -> AskUserQuestionAnswer:
        """Wait for a provider that suspended in its first step, interrupting it when asked."""
        task = asyncio.current_task()
        if task is None:  # stepped by hand in a loop's callback, not in a task
            steps.close()  # the provider's call cannot be waited for: let it clean up
            msg = "UserInteractionService.ask() must run inside an asyncio task"
            raise RuntimeError(msg)
        call = _Call(task, registration)
        signal = request.get("signal")
        # Note: the original relies on the provider to notice the signal, so an ask
        # to one that ignores it never settles; here the service stops it (SVC-ABORT-1).
        listens = (
            signal is not None
            and self._enforce_aborts
            and not _keeps_own_time(registration._provider)  # noqa: SLF001 - this module's class
        )
        remove = signal.add_listener(call.aborted) if signal is not None and listens else None
        timer = (
            task.get_loop().call_later(deadline - time.time(), call.deadline_passed)
            if deadline is not None
            else None
        )
        self._calls.add(call)
        # What the first step did before anything was listening (Rule 6).
        if signal is not None and listens and signal.aborted:
            call.aborted(signal)
        elif not registration.active:
            call.stop(ErrorCode.PROVIDER_DISPOSED)
        baseline = task.cancelling()
        try:
            answer = await suspended_call(steps, waiting, self._cancel_grace)
        except asyncio.CancelledError:
            call.settled = True
            if not _take_back(call, task, baseline):
                raise  # the caller was cancelled too: theirs wins, unchanged
            if call.interrupt is None:
                raise  # the provider's own cancellation, not ours: unchanged (SVC-ERR-1)
            defaults = default_answer(request) if call.by_deadline else None
            if defaults is not None:
                return defaults  # POL-DEFAULT-1: the deadline passed; the defaults answer
            raise call.error() from None
        except BaseException as error:
            call.settled = True
            if not _take_back(call, task, baseline):
                # The provider turned a cancellation of the caller's into an error
                # of its own: the caller's cancellation still wins (SVC-CANCEL-1).
                raise asyncio.CancelledError from error
            if call.cancelled and call.interrupt is not None:
                # Rule 4: the provider turned our interrupt into its own error. An
                # answer it kept there (a durable store's) is kept on ours.
                kept = error.answer if isinstance(error, UserInteractionError) else None
                defaults = default_answer(request) if call.by_deadline and kept is None else None
                if defaults is not None:
                    return defaults  # POL-DEFAULT-1
                raise call.error(kept) from error
            raise
        else:
            call.settled = True
            # Nobody cancelled the task during the call (the common case) or somebody did.
            if call.cancelled or task.cancelling() > baseline:
                if not _take_back(call, task, baseline):
                    # The provider swallowed the caller's cancellation and answered:
                    # the caller asked to stop, so the cancellation wins (SVC-CANCEL-1).
                    raise asyncio.CancelledError
                if call.cancelled and call.interrupt is not None:
                    # Rule 4: it swallowed the interrupt and answered late. Note: the
                    # answer loses, but stays on the error, so it is never dropped.
                    raise call.error(answer)
        finally:
            if timer is not None:
                timer.cancel()
            if remove is not None:
                remove()
            self._calls.discard(call)
        return answer

    def __repr__(self) -> str:
        return (
            f"<UserInteractionService strict={self._strict} provider={self.provider!r}"
            f" pending={len(self._calls)}>"
        )


#: The verdicts a caller gate may refuse with.
_REFUSALS: Final = (ErrorCode.CALLER_NOT_LIVE, ErrorCode.DELEGATED_CALLER)


def _checked_observer_timeout(seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        msg = f"observer_timeout must be a positive number of seconds, got {seconds!r}"
        raise ValueError(msg)
    return float(seconds)


def _keeps_own_time(provider: object) -> bool:
    """Whether *provider* ends its asks' deadlines and aborts itself (``DUR-AGREE-2``).

    Its class says so with ``keeps_own_time = True``; the service then
    neither times the request's deadline nor interrupts it on an abort, as
    with ``enforce_deadlines=False, enforce_aborts=False``.
    """
    return getattr(type(provider), "keeps_own_time", False) is True


def _defaults_by_the_providers_clock(
    request: AskUserQuestionRequest, error: UserInteractionError
) -> AskUserQuestionAnswer | None:
    """The request's defaults, when its provider says its deadline passed (``POL-DEFAULT-1``).

    A provider that keeps the ask's time on a clock the service cannot see
    (an ask carried across MCP rounds) ends it with a timed-out
    ``ASK_ABORTED`` whose ``deadline_passed`` is set; with no answer kept on
    the error, the service answers with the defaults, as at its own deadline.
    """
    if error.code is not ErrorCode.ASK_ABORTED or not error.deadline_passed:
        return None
    if error.answer is not None:
        return None  # a late answer is kept on the error, never replaced by the defaults
    return default_answer(request)


def _replayed_defaults(
    request: AskUserQuestionRequest, answer: AskUserQuestionAnswer, deadline: float
) -> bool:
    """Whether *answer* is the request's own defaults, after its deadline (``POL-DEFAULT-3``)."""
    return deadline <= time.time() and answer == default_answer(request)


def _timeout_signal(request: object) -> bool:
    """Whether the request's signal aborted with a timeout as its reason (``POL-TIMEOUT-1``)."""
    if not isinstance(request, Mapping):
        return False
    signal = cast("Mapping[str, object]", request).get("signal")
    return isinstance(signal, AbortSignal) and signal.aborted and is_timeout(signal.reason)


def _take_back(call: _Call, task: asyncio.Task[object], baseline: int) -> bool:
    """Take back the service's own cancellation, if it made one (Rule 2).

    Returns whether the task is now free of cancellations made during the
    call; ``False`` means somebody else (the caller, an outer timeout) also
    cancelled it, whatever the provider did with the interrupts, and that
    cancellation must propagate.
    """
    if call.cancelled:
        task.uncancel()
    return task.cancelling() <= baseline
