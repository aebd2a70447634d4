"""A DOM-style abort signal for asyncio code.

Design notes (the invariants this module keeps):

* A signal aborts at most once. ``aborted`` and ``reason`` never change after.
* Listeners run synchronously, once, in registration order, inside the call
  that aborts. A listener added after the abort is never called (as in the
  DOM); check :attr:`AbortSignal.aborted` first.
* A listener that raises an ``Exception`` does not stop the others: the error
  goes to :func:`sys.unraisablehook`, the hook for errors nobody can catch. A
  ``BaseException`` (``KeyboardInterrupt``, ``CancelledError``) is re-raised
  after every listener has run.
* Removing a listener deletes it. A signal shared by many asks holds only the
  listeners of the asks still pending, so it does not grow.
* The signal is not thread-safe. Abort it from its event loop's thread; from
  another thread use ``loop.call_soon_threadsafe(controller.abort)``.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import weakref
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Final, final

__all__ = ["AbortController", "AbortError", "AbortSignal"]

#: A listener receives the signal that aborted.
AbortListener = Callable[["AbortSignal"], object]

_ids: Final = itertools.count()


class AbortError(Exception):
    """The default abort reason, like the DOM's ``AbortError``.

    >>> controller = AbortController()
    >>> controller.abort()
    >>> controller.signal.reason
    AbortError('This operation was aborted')
    """

    def __init__(self, message: str = "This operation was aborted") -> None:
        super().__init__(message)


@final
class AbortSignal:
    """A one-shot signal that tells an operation to give up.

    Get one from :class:`AbortController`, or from :meth:`abort`,
    :meth:`timeout` or :meth:`any`.

    >>> controller = AbortController()
    >>> seen = []
    >>> remove = controller.signal.add_listener(lambda signal: seen.append(signal.reason))
    >>> controller.abort("stop")
    >>> seen, controller.signal.aborted
    (['stop'], True)
    """

    __slots__ = ("__weakref__", "_aborted", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: dict[int, AbortListener] = {}

    @property
    def aborted(self) -> bool:
        """Whether the signal has aborted."""
        return self._aborted

    @property
    def reason(self) -> object:
        """Why the signal aborted; ``None`` until it has."""
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise the reason if the signal has aborted.

        A reason that is an exception is raised as it is; any other reason is
        wrapped in :class:`AbortError`, with the reason as its argument.
        """
        if not self._aborted:
            return
        if isinstance(self._reason, BaseException):
            raise self._reason
        raise AbortError(repr(self._reason))

    def add_listener(self, listener: AbortListener) -> Callable[[], None]:
        """Call *listener* once when the signal aborts; return its remover.

        The remover may be called any number of times. A listener added after
        the abort is never called.
        """
        if self._aborted:
            return _noop
        key = next(_ids)
        self._listeners[key] = listener
        listeners = self._listeners

        def remove() -> None:
            listeners.pop(key, None)

        return remove

    @property
    def listener_count(self) -> int:
        """How many listeners are waiting; for leak checks."""
        return len(self._listeners)

    def _abort(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = AbortError() if reason is None else reason
        listeners = list(self._listeners.values())
        self._listeners.clear()
        pending: BaseException | None = None
        for listener in listeners:
            try:
                listener(self)
            except Exception as error:  # noqa: BLE001 - reported, and the others still run
                sys.unraisablehook(_Unraisable(error, listener))
            except BaseException as error:  # noqa: BLE001 - re-raised below
                # Note: cancellation and interrupts are re-raised, never swallowed,
                # but only after every listener has had its turn.
                if pending is None:
                    pending = error
        if pending is not None:
            raise pending

    @staticmethod
    def abort(reason: object = None) -> AbortSignal:
        """Return a signal that has already aborted with *reason*.

        >>> AbortSignal.abort("late").reason
        'late'
        """
        signal = AbortSignal()
        signal._abort(reason)
        return signal

    @staticmethod
    def timeout(seconds: float) -> AbortSignal:
        """Return a signal that aborts with :class:`TimeoutError` after *seconds*.

        It must be created inside a running event loop, whose clock it uses.
        """
        if seconds < 0:
            msg = f"timeout seconds must be >= 0, got {seconds!r}"
            raise ValueError(msg)
        loop = asyncio.get_running_loop()
        signal = AbortSignal()
        ref = weakref.ref(signal)

        def fire() -> None:
            target = ref()
            if target is not None:
                target._abort(TimeoutError("signal timed out"))  # noqa: SLF001

        loop.call_later(seconds, fire)
        return signal

    @staticmethod
    def any(signals: Iterable[AbortSignal]) -> AbortSignal:
        """Return a signal that aborts when any of *signals* does, with its reason.

        The combined signal holds its sources' listeners only while it lives and
        has not aborted, so combining does not make long-lived sources grow.

        >>> first, second = AbortController(), AbortController()
        >>> both = AbortSignal.any([first.signal, second.signal])
        >>> second.abort("second")
        >>> both.reason
        'second'
        """
        sources = list(signals)
        combined = AbortSignal()
        for source in sources:
            if source.aborted:
                combined._abort(source.reason)
                return combined
        ref = weakref.ref(combined)
        removers: list[Callable[[], None]] = []

        def forward(source: AbortSignal) -> None:
            target = ref()
            for remover in removers:
                remover()
            if target is not None:
                target._abort(source.reason)  # noqa: SLF001

        removers.extend(source.add_listener(forward) for source in sources)
        weakref.finalize(combined, _remove_all, removers)
        return combined

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._aborted else "pending"
        return f"<AbortSignal {state}>"


@final
class AbortController:
    """Owns an :class:`AbortSignal` and aborts it.

    >>> controller = AbortController()
    >>> controller.signal.aborted
    False
    >>> controller.abort(ValueError("no longer needed"))
    >>> controller.signal.reason
    ValueError('no longer needed')
    """

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        """The signal this controller aborts."""
        return self._signal

    def abort(self, reason: object = None) -> None:
        """Abort the signal with *reason* (default :class:`AbortError`).

        Listeners run before this returns. Aborting twice does nothing.
        """
        self._signal._abort(reason)  # noqa: SLF001 - the signal's own module

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"


def _noop() -> None:
    return None


def _remove_all(removers: list[Callable[[], None]]) -> None:
    for remover in removers:
        remover()


class _Unraisable:
    """The argument :func:`sys.unraisablehook` expects, for a raising listener."""

    __slots__ = ("err_msg", "exc_traceback", "exc_type", "exc_value", "object")

    def __init__(self, error: Exception, listener: AbortListener) -> None:
        self.exc_type: type[BaseException] = type(error)
        self.exc_value: BaseException | None = error
        self.exc_traceback: TracebackType | None = error.__traceback__
        self.err_msg: str | None = "Exception ignored in abort signal listener"
        self.object: object = listener
