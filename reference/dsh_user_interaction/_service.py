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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import CoroutineType, TracebackType
from typing import final

from ._checks import bad_answer, checked_request, fast_answer_accepted, must_violations
from ._errors import MESSAGES, ErrorCode, UserInteractionError
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

    __slots__ = ("cancelled", "interrupt", "registration", "settled", "task")

    def __init__(self, task: asyncio.Task[object], registration: Registration) -> None:
        self.task = task
        self.registration = registration
        #: Why the service interrupts this call, once it does.
        self.interrupt: ErrorCode | None = None
        #: Whether the service has called ``task.cancel()`` for it.
        self.cancelled = False
        self.settled = False

    def stop(self, code: ErrorCode) -> None:
        if self.settled or self.interrupt is not None:
            return
        self.interrupt = code
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

    *cancel_grace* (0.25 s by default, at most 1 s) is how long a provider
    whose call was cancelled may take to end it. One still pending then is
    left behind, running on in a task of its own, and the ask settles without
    it; if it answers later, the loop's exception handler gets the answer.
    """

    __slots__ = ("_calls", "_cancel_grace", "_registration", "_strict")

    def __init__(self, *, strict: bool = True, cancel_grace: float = DEFAULT_CANCEL_GRACE) -> None:
        self._strict = strict
        self._cancel_grace = _checked_grace(cancel_grace)
        self._registration: Registration | None = None
        self._calls: set[_Call] = set()

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
        """How many asks are waiting for the provider; for leak checks."""
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
        index = checked_request(request, has_provider=registration is not None)
        if registration is None:  # pragma: no cover - check_request raised
            raise UserInteractionError.of(ErrorCode.NO_PROVIDER)
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - every coroutine under asyncio has one
            msg = "UserInteractionService.ask() must run inside an asyncio task"
            raise RuntimeError(msg)
        call = _Call(task, registration)
        signal = request.get("signal")
        # Note: the original relies on the provider to notice the signal, so an ask
        # to one that ignores it never settles; here the service stops it (SVC-ABORT-1).
        remove = (
            signal.add_listener(lambda _signal: call.stop(ErrorCode.ASK_ABORTED))
            if signal is not None
            else None
        )
        self._calls.add(call)
        baseline = task.cancelling()
        try:
            pending = registration._provider.ask(request)  # noqa: SLF001 - this module's class
            # The provider's first step, taken here as ``await`` would: most answer
            # without suspending. One that suspends goes on in suspended_call.
            steps = pending if type(pending) is CoroutineType else pending.__await__()
            try:
                waiting = steps.send(None)
            except StopIteration as stop:
                answer: AskUserQuestionAnswer = stop.value
            else:
                answer = await suspended_call(steps, waiting, self._cancel_grace)
        except asyncio.CancelledError:
            call.settled = True
            if not _take_back(call, task, baseline):
                raise  # the caller was cancelled too: theirs wins, unchanged
            if call.interrupt is None:
                raise  # the provider's own cancellation, not ours: unchanged (SVC-ERR-1)
            raise UserInteractionError.of(call.interrupt) from None
        except BaseException as error:
            call.settled = True
            if not _take_back(call, task, baseline):
                # The provider turned a cancellation of the caller's into an error
                # of its own: the caller's cancellation still wins (SVC-CANCEL-1).
                raise asyncio.CancelledError from error
            if call.cancelled and call.interrupt is not None:
                # Rule 4: the provider turned our interrupt into its own error.
                raise UserInteractionError.of(call.interrupt) from error
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
                    raise UserInteractionError.of(call.interrupt, answer=answer)
        finally:
            if remove is not None:
                remove()
            self._calls.discard(call)
        # Note: the original never checks answers; a strict service does (SVC-STRICT-1).
        if self._strict and (index is None or not fast_answer_accepted(request, answer, index)):
            violations = must_violations(request, answer)
            if violations:
                raise bad_answer(answer, violations)
        return answer

    def __repr__(self) -> str:
        return (
            f"<UserInteractionService strict={self._strict} provider={self.provider!r}"
            f" pending={len(self._calls)}>"
        )


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
