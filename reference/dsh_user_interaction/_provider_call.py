"""Awaiting the provider's call, and leaving it behind when it ignores its cancellation.

The service awaits ``provider.ask(request)`` in the caller's own task (its
Rule 2): it takes the provider's first step itself, and when the provider
suspends, goes on through :func:`suspended_call`, which steps the provider's
coroutine exactly as ``await`` would. It differs from ``await`` in one case
only.

Rule 1: until the provider's call receives a ``CancelledError``, nothing
changes: each suspension of the provider is the task's, and whatever the
provider returns or raises is the call's outcome.

Rule 2: after a ``CancelledError`` has reached the provider (the service's
interrupt, the caller's cancellation or an outer timeout), the provider may
still take a moment to clean up and then raise it, or return an answer it
had already accepted. It gets a grace period for that (``grace``, 0.25 s for
the service), which starts again each time the provider is resumed, since
it is making progress, up to one second after the cancellation
(``LONGEST_GRACE``): a busy machine slows clean-up down, but does not make
it wait on anything. A provider that waits on one thing for the whole grace,
or is still pending a second after its cancellation, ignores its
cancellation (``PRV-CANCEL-1``): the call is *left behind*, running on in a
task of its own, and :func:`suspended_call` raises ``CancelledError`` as if
the provider had, so the ask settles as the spec says (``SVC-LEAVE-1``).

Rule 3: nothing a left-behind call does is lost. When it returns an answer or
raises anything but ``CancelledError``, the loop's exception handler is told,
with the answer or the error (by default, asyncio logs it). Left-behind calls
are kept referenced until they end, so they are never garbage-collected
while pending.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Coroutine, Generator
from typing import Any, Final, TypeVar, cast

__all__ = ["DEFAULT_CANCEL_GRACE", "LONGEST_GRACE", "left_behind", "suspended_call"]

T = TypeVar("T")

#: How long a cancelled provider may wait on one thing before it is left behind, in seconds.
DEFAULT_CANCEL_GRACE: Final = 0.25
#: How long after its cancellation a provider is left behind however busy it keeps
#: (``SVC-LEAVE-1``: within one second).
LONGEST_GRACE: Final = 1.0

#: Calls left behind and still running (Rule 3): asyncio keeps tasks weakly.
_LEFT: Final[set[asyncio.Task[object]]] = set()

_Step = Generator[Any, None, T]


def left_behind() -> int:
    """How many provider calls are left behind and still running, in every loop."""
    return len(_LEFT)


@types.coroutine
def suspended_call(
    given: Generator[Any, None, T] | Coroutine[Any, None, T], waiting: object, grace: float
) -> _Step[T]:
    """Go on awaiting the provider's call; after a cancellation, for at most *grace* seconds.

    The caller took the provider's first step itself, as ``await`` does
    (``steps.send(None)``), and comes here only when it suspended, on
    *waiting*: most providers answer without ever suspending (a scripted one,
    an answer already given), and that step costs no generator. *given* is
    the provider's coroutine, or what its awaitable's ``__await__`` returned.
    """
    # A started coroutine's wrapper goes on from where it is.
    steps = (
        cast("Coroutine[Any, None, T]", given).__await__()
        if isinstance(given, types.CoroutineType)
        else cast("Generator[Any, None, T]", given)
    )
    error: BaseException | None = yield from _suspend(steps, waiting)
    # Rule 1: step the provider as ``await`` does, until a cancellation reaches it.
    while True:
        try:
            waiting = steps.send(None) if error is None else steps.throw(error)
        except StopIteration as stop:
            ended: T = stop.value  # what __await__ returns is T
            return ended
        if isinstance(error, asyncio.CancelledError):
            break  # it is still pending after its cancellation: Rule 2
        error = yield from _suspend(steps, waiting)
    loop = asyncio.get_running_loop()
    latest = loop.time() + LONGEST_GRACE
    while True:
        # Each time it is resumed it has made progress: the grace starts again, up to
        # LONGEST_GRACE after its cancellation.
        deadline = min(loop.time() + grace, latest)
        error = None
        if waiting is not None and asyncio.isfuture(waiting):
            # Wait for what the provider waits on, but no longer than the grace.
            try:
                finished = yield from _until(waiting, deadline, loop)
            except GeneratorExit:
                steps.close()
                raise
            except asyncio.CancelledError as thrown:
                waiting.cancel()  # what the task would have cancelled
                error, finished = thrown, True
        else:
            # A bare yield (asyncio.sleep(0)) or something else the task knows.
            finished = loop.time() < deadline
            if finished:
                error = yield from _suspend(steps, waiting)
        if not finished:
            _leave_behind(steps, waiting, loop)
            raise asyncio.CancelledError
        try:
            waiting = steps.send(None) if error is None else steps.throw(error)
        except StopIteration as stop:
            late: T = stop.value  # as above
            return late


def _until(
    future: asyncio.Future[Any], deadline: float, loop: asyncio.AbstractEventLoop
) -> Generator[Any, None, bool]:
    """Wait until *future* is done (``True``) or *deadline* has passed (``False``)."""
    if future.done():
        return True
    woken: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    timer = loop.call_at(deadline, wake)
    future.add_done_callback(wake)
    try:
        yield from woken
    finally:
        timer.cancel()
        future.remove_done_callback(wake)
    return future.done()


def _leave_behind(
    steps: Generator[Any, None, object], waiting: object, loop: asyncio.AbstractEventLoop
) -> None:
    task: asyncio.Task[object] = loop.create_task(_run_on(steps, waiting))
    _LEFT.add(task)
    task.add_done_callback(_LEFT.discard)


async def _run_on(steps: Generator[Any, None, object], waiting: object) -> object:
    """The rest of a left-behind call, in a task of its own; reports how it ended (Rule 3)."""
    loop = asyncio.get_running_loop()
    try:
        answer = await _Resumed(_resume(steps, waiting))
    except asyncio.CancelledError:
        return None  # it honoured its cancellation after all
    except Exception as error:  # noqa: BLE001 - reported, not lost
        loop.call_exception_handler(
            {
                "message": (
                    "a user-interaction provider that had ignored its cancellation raised"
                    " after its ask had settled without it"
                ),
                "exception": error,
            }
        )
        return None
    loop.call_exception_handler(
        {
            "message": (
                "a user-interaction provider that had ignored its cancellation answered"
                f" after its ask had settled without it; the answer was: {answer!r}"
            ),
            "answer": answer,
        }
    )
    return answer


class _Resumed:
    """Awaits the rest of a left-behind call in the task that awaits this."""

    __slots__ = ("_steps",)

    def __init__(self, steps: _Step[object]) -> None:
        self._steps = steps

    def __await__(self) -> _Step[object]:
        return self._steps


def _resume(steps: Generator[Any, None, object], waiting: object) -> _Step[object]:
    """Go on stepping *steps*, which is suspended on *waiting*, in the current task."""
    thrown = yield from _suspend(steps, waiting)
    if thrown is None:
        return (yield from steps)
    try:
        waiting = steps.throw(thrown)
    except StopIteration as stop:
        return stop.value
    return (yield from _resume(steps, waiting))


def _suspend(steps: Generator[Any, None, object], waiting: object) -> _Step[BaseException | None]:
    """Hand *waiting* to the task; what the task throws back, for the provider (as ``await``)."""
    try:
        yield waiting
    except GeneratorExit:
        steps.close()
        raise
    except BaseException as thrown:  # noqa: BLE001 - handed to the provider, as await does
        return thrown
    return None
