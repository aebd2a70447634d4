"""Observers: who hears that a question is waiting, and how it ended.

Design notes:

* An observer is a callable that takes one :class:`AskEvent`. It is called
  when an ask becomes pending (every check passed, just before the provider
  is called) and when that ask settles, with its outcome (``OBS-EVENT-1``).
  An ask a check refused never became pending, and is not reported.
* Observers never block or break an ask (``OBS-SAFE-1``). A synchronous
  observer runs inline and must be quick; if it raises, the error goes to the
  event loop's exception handler and the ask goes on. An observer that
  returns an awaitable (an ``async def``) runs in a task of its own, bounded
  by the service's ``observer_timeout``: one that raises or is still running
  then is reported the same way and cancelled. The ask never waits for it.
* What an observer is for: a desktop notification, a webhook, a chat message
  that a question is waiting. It is not a way to answer; the provider does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, cast

from ._errors import ErrorCode, UserInteractionError
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest

__all__ = ["DEFAULT_OBSERVER_TIMEOUT", "AskEvent", "AskObserver", "AskOutcome", "outcome_of"]

#: How a settled ask ended, as an observer hears it:
#:
#: ``answered``: the human answered; ``defaulted``: the deadline passed and the
#: defaults answered; ``dismissed``: the human dismissed it (``ASK_CANCELLED``);
#: ``timed_out``: the deadline or a timeout signal ended it; ``aborted``: the
#: signal aborted it otherwise; ``disposed``: ``PROVIDER_DISPOSED``;
#: ``cancelled``: the caller's task was cancelled; ``failed``: any other error
#: (``BAD_ANSWER``, a provider's own error).
AskOutcome: TypeAlias = Literal[
    "answered", "defaulted", "dismissed", "timed_out", "aborted", "disposed", "cancelled", "failed"
]


@dataclass(frozen=True, slots=True)
class AskEvent:
    """One thing that happened to an ask, for observers."""

    #: ``pending``: the provider is about to be asked; ``settled``: it ended.
    kind: Literal["pending", "settled"]
    #: The request, the very object the provider receives.
    request: AskUserQuestionRequest
    #: The request's ``askId``, when it has one (durable asks).
    ask_id: str | None = None
    #: How it ended; ``None`` while pending.
    outcome: AskOutcome | None = None
    #: The answer ``ask()`` returned, for ``answered`` and ``defaulted``.
    answer: AskUserQuestionAnswer | None = None
    #: What ``ask()`` raised, for every other outcome.
    error: BaseException | None = None


#: How long an asynchronous observer may run before it is reported and cancelled.
DEFAULT_OBSERVER_TIMEOUT: Final = 10.0

#: An observer: called with each event; may return an awaitable.
AskObserver: TypeAlias = Callable[[AskEvent], object]

_CODES: Final[dict[ErrorCode, AskOutcome]] = {
    ErrorCode.ASK_CANCELLED: "dismissed",
    ErrorCode.ASK_ABORTED: "aborted",
    ErrorCode.PROVIDER_DISPOSED: "disposed",
}


def outcome_of(answer: AskUserQuestionAnswer | None, error: BaseException | None) -> AskOutcome:
    """Name the outcome of an ask that returned *answer* or raised *error*.

    >>> outcome_of({"answers": []}, None), outcome_of(None, asyncio.CancelledError())
    ('answered', 'cancelled')
    >>> outcome_of(None, UserInteractionError.timed_out_error())
    'timed_out'
    """
    if error is None:
        return "defaulted" if answer is not None and answer.get("defaulted") is True else "answered"
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    if isinstance(error, UserInteractionError):
        if error.timed_out:
            return "timed_out"
        return _CODES.get(error.code, "failed")
    return "failed"


def ask_id_in(request: AskUserQuestionRequest) -> str | None:
    """The request's ``askId`` when it is text."""
    ask_id = cast("Mapping[str, object]", request).get("askId")
    return ask_id if isinstance(ask_id, str) else None


class Observers:
    """The service's observers, and the tasks of those still running."""

    __slots__ = ("_running", "_timeout", "observers")

    def __init__(self, timeout: float) -> None:
        #: The observers, in the order they were added; the service reads it (not
        #: ``bool(self)``, a Python-level call) to skip the events when it is empty.
        self.observers: list[AskObserver] = []
        self._running: set[asyncio.Task[None]] = set()
        self._timeout = timeout

    def __bool__(self) -> bool:
        return bool(self.observers)

    def add(self, observer: object) -> Callable[[], None]:
        if not callable(observer):
            msg = f"an observer must be callable, got {type(observer).__name__}"
            raise TypeError(msg)
        self.observers.append(observer)

        def remove() -> None:
            if observer in self.observers:
                self.observers.remove(observer)

        return remove

    @property
    def running(self) -> int:
        """How many asynchronous observers are still running."""
        return len(self._running)

    def tell(self, event: AskEvent) -> None:
        """Give *event* to every observer; nothing they do reaches the caller."""
        loop = asyncio.get_running_loop()
        for observer in tuple(self.observers):
            try:
                result = observer(event)
            except Exception as error:  # noqa: BLE001 - OBS-SAFE-1: reported, never raised
                _report(loop, observer, event, error, "raised")
                continue
            if inspect.isawaitable(result):
                task = loop.create_task(self._bounded(observer, event, result))
                self._running.add(task)
                task.add_done_callback(self._running.discard)

    async def _bounded(
        self, observer: AskObserver, event: AskEvent, pending: Awaitable[object]
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._timeout):
                await pending
        except TimeoutError as error:
            _report(loop, observer, event, error, f"was still running after {self._timeout:g} s")
        except Exception as error:  # noqa: BLE001 - OBS-SAFE-1: reported, never raised
            _report(loop, observer, event, error, "raised")


def _report(
    loop: asyncio.AbstractEventLoop,
    observer: AskObserver,
    event: AskEvent,
    error: BaseException,
    what: str,
) -> None:
    name = getattr(observer, "__qualname__", type(observer).__qualname__)
    loop.call_exception_handler(
        {
            "message": f"ask observer {name} {what} on a {event.kind} event; it was skipped",
            "exception": error,
            "observer": observer,
            "event": event,
        }
    )
