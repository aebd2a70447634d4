"""A DOM-style abort signal for asyncio code.

Design notes (the invariants this module keeps):

* A signal aborts at most once. ``aborted`` and ``reason`` never change after.
  :meth:`AbortSignal.throw_if_aborted` raises the reason object itself each
  time, with the traceback it had when the signal aborted, so raising it again
  and again does not grow its traceback.
* Listeners run synchronously, once, in registration order, inside the call
  that aborts. A listener added after the abort is never called, and one that
  an earlier listener removes during the abort is skipped (both as in the
  DOM); check :attr:`AbortSignal.aborted` first.
* A listener that raises an ``Exception`` does not stop the others: the error
  goes to :func:`sys.unraisablehook`, the hook for errors nobody can catch, as
  a genuine ``UnraisableHookArgs``, so the default hook prints it with its
  traceback on stderr and an installed hook (pytest's, an application's) sees
  it. This holds inside an event loop too: ``abort()`` is synchronous and may
  run with no loop, so the loop's exception handler is not used. If the hook
  itself fails, its error goes to the default hook, as CPython does. A
  ``BaseException`` (``KeyboardInterrupt``, ``CancelledError``) is re-raised
  after every listener, the dependents' included, has run.
* Removing a listener deletes it. A signal shared by many asks holds only the
  listeners of the asks still pending, so it does not grow.
* A signal from :meth:`AbortSignal.any` is *dependent* and, as in the DOM, it
  subscribes to the original sources: a dependent among the inputs
  contributes its own sources, so nesting flattens. When a source aborts, it
  gives its reason to every pending dependent before any listener runs; then
  its own listeners run, then each dependent's, in the order the dependents
  were made.
* Who keeps whom alive. A source holds its dependents weakly, and a pending
  dependent holds its sources strongly, so a source (a timeout signal too)
  lives while a dependent can still observe it. A signal that has someone to
  tell (a listener, or a dependent that has one) is also held strongly by what
  can abort it: its timer, or its sources. Once a dependent has aborted or
  has been collected, its sources forget it, so combining does not make
  long-lived sources grow.
* A timeout signal that nothing can observe any more (collected: no
  reference, no listener, not the source of a pending dependent) cancels its
  timer, so short deadlines on asks that were answered leave nothing on the
  loop.
* The signal is not thread-safe. Abort it from its event loop's thread; from
  another thread use ``loop.call_soon_threadsafe(controller.abort)``.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import numbers
import sys
import weakref
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Final, cast, final

__all__ = ["AbortController", "AbortError", "AbortSignal", "times_out_at"]

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

    __slots__ = (
        "__weakref__",
        "_aborted",
        "_dependent",
        "_dependents",
        "_held",
        "_listeners",
        "_reason",
        "_sources",
        "_timer",
        "_traceback",
    )

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        #: The reason's traceback when the signal aborted, restored on each raise.
        self._traceback: TracebackType | None = None
        self._listeners: dict[int, AbortListener] = {}
        #: Whether this signal came from any(); its sources are never dependent.
        self._dependent = False
        #: A pending dependent's sources, held strongly; empty once it aborts.
        self._sources: tuple[AbortSignal, ...] = ()
        #: A source's dependents, held weakly, by id, in the order they were made.
        self._dependents: dict[int, weakref.ref[AbortSignal]] = {}
        #: The dependents that have someone to tell, held strongly.
        self._held: dict[int, AbortSignal] = {}
        #: A pending timeout signal's timer.
        self._timer: _Timer | None = None

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

        A reason that is an exception is raised as it is, the same object each
        time, with the traceback it had when the signal aborted (so repeated
        calls do not grow it); any other reason is wrapped in
        :class:`AbortError`, with the reason as its argument.
        """
        if not self._aborted:
            return
        reason = self._reason
        if isinstance(reason, BaseException):
            raise reason.with_traceback(self._traceback)
        raise AbortError(repr(reason))

    def add_listener(self, listener: AbortListener) -> Callable[[], None]:
        """Call *listener* once when the signal aborts; return its remover.

        The remover may be called any number of times. A listener added after
        the abort is never called; one removed before its turn is skipped.
        """
        if self._aborted:
            return _noop
        key = next(_ids)
        listeners = self._listeners
        listeners[key] = listener
        if len(listeners) == 1:
            self._refresh()
        ref = weakref.ref(self)

        def remove() -> None:
            if listeners.pop(key, None) is not None and not listeners:
                signal = ref()
                if signal is not None:
                    signal._refresh()  # noqa: SLF001 - the same class

        return remove

    @property
    def listener_count(self) -> int:
        """How many listeners and dependent signals wait on this one; for leak checks."""
        # Note: a dependent from any() counts, although the DOM keeps it apart
        # from the listeners: both are what a long-lived signal holds for others.
        return len(self._listeners) + len(self._dependents)

    def _abort(self, reason: object) -> None:
        if self._aborted:
            return
        reason = AbortError() if reason is None else reason
        # As in the DOM: every pending dependent takes the reason before any
        # listener runs; then the listeners run, this signal's first.
        signals = [self, *self._pending_dependents()]
        for signal in signals:
            self._settle(signal, reason)
        pending: BaseException | None = None
        for signal in signals:
            pending = self._dispatch(signal, pending)
        if pending is not None:
            raise pending

    def _pending_dependents(self) -> list[AbortSignal]:
        # A copy, since the collector may drop a dependent (_forget) at any allocation.
        found = [ref() for ref in self._dependents.copy().values()]
        return [signal for signal in found if signal is not None and not signal.aborted]

    @staticmethod
    def _settle(signal: AbortSignal, reason: object) -> None:
        """Give *signal* its reason; it lets go of every other signal and of its timer."""
        signal._aborted = True
        signal._reason = reason
        if isinstance(reason, BaseException):
            signal._traceback = reason.__traceback__
        signal._timer = None
        signal._dependents.clear()
        signal._held.clear()
        for source in signal._sources:
            signal._leave(source)
        signal._sources = ()

    @staticmethod
    def _dispatch(signal: AbortSignal, pending: BaseException | None) -> BaseException | None:
        """Run the listeners of *signal* in order; return the first BaseException."""
        listeners = signal._listeners
        for key in listeners.copy():
            listener = listeners.pop(key, None)
            if listener is None:
                continue  # removed by an earlier listener: skipped, as in the DOM
            try:
                try:
                    listener(signal)
                except Exception as error:  # noqa: BLE001 - reported, and the others still run
                    _report(error, listener)
            except BaseException as error:  # noqa: BLE001 - re-raised by _abort
                # Note: cancellation and interrupts are re-raised, never swallowed,
                # but only after every listener has had its turn.
                if pending is None:
                    pending = error
        return pending

    def _refresh(self) -> None:
        """Be held by what can abort this signal while it has someone to tell."""
        observed = not self._aborted and bool(self._listeners or self._held)
        if self._timer is not None:
            self._timer.held = self if observed else None
        for source in self._sources:
            self._held_by(source, held=observed)

    def _held_by(self, source: AbortSignal, *, held: bool) -> None:
        if held:
            source._held[id(self)] = self
        else:
            source._held.pop(id(self), None)
        source._refresh()

    def _depend_on(self, source: AbortSignal) -> None:
        key = id(self)
        dependents = source._dependents
        dependents[key] = weakref.ref(self, functools.partial(_forget, dependents, key))

    def _leave(self, source: AbortSignal) -> None:
        source._dependents.pop(id(self), None)
        self._held_by(source, held=False)

    @staticmethod
    def _sources_of(signal: AbortSignal) -> tuple[AbortSignal, ...]:
        """The original signals *signal* stands for: its sources if dependent, else itself."""
        return signal._sources if signal._dependent else (signal,)

    def _adopt(self, signal: AbortSignal) -> None:
        """Start aborted, with the reason of *signal*, which has aborted."""
        self._aborted = True
        self._reason = signal._reason
        self._traceback = signal._traceback

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
        *seconds* is a real number (not a ``bool``), at least 0; ``math.inf``
        never fires. The timer is cancelled once nothing can observe the
        signal: no reference to it, no listener on it, and no pending
        dependent signal made from it.
        """
        value: object = seconds
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            msg = f"timeout seconds must be a real number, got {seconds!r}"
            raise TypeError(msg)
        try:
            delay = float(value)
        except OverflowError:  # an int too large for a float: no deadline, or negative
            delay = math.inf if cast("int", value) > 0 else -math.inf
        # Note: the DOM raises TypeError for NaN, infinities and negative delays;
        # here a number out of range is a ValueError, and inf means "no deadline".
        if not delay >= 0:  # NaN too
            msg = f"timeout seconds must be >= 0, got {seconds!r}"
            raise ValueError(msg)
        loop = asyncio.get_running_loop()
        signal = AbortSignal()
        if not math.isinf(delay):
            signal._timer = _Timer(signal, loop, delay)
        return signal

    @staticmethod
    def any(signals: Iterable[AbortSignal]) -> AbortSignal:
        """Return a signal that aborts when any of *signals* does, with its reason.

        The combined signal depends on the original sources: a combined signal
        among *signals* contributes its own sources. The sources stay alive
        while the combined signal is alive and pending, and forget it once it
        is collected or has aborted, so combining does not make long-lived
        sources grow.

        >>> first, second = AbortController(), AbortController()
        >>> both = AbortSignal.any([first.signal, second.signal])
        >>> second.abort("second")
        >>> both.reason
        'second'
        """
        inputs = list(signals)
        combined = AbortSignal()
        combined._dependent = True
        for signal in inputs:
            if signal.aborted:
                combined._adopt(signal)
                return combined
        sources: dict[int, AbortSignal] = {}
        for signal in inputs:
            for source in combined._sources_of(signal):
                sources.setdefault(id(source), source)
        combined._sources = tuple(sources.values())
        for source in combined._sources:
            combined._depend_on(source)
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

        Listeners run before this returns, the listeners of signals made from
        it with :meth:`AbortSignal.any` included. Aborting twice does nothing.
        """
        self._signal._abort(reason)  # noqa: SLF001 - the signal's own module

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"


def times_out_at(signal: AbortSignal) -> float | None:
    """When a timeout aborts *signal*, in the running loop's time; ``None`` when none will.

    A signal of :meth:`AbortSignal.timeout` has one timer; one of
    :meth:`AbortSignal.any` aborts with the first of its sources' timers. A
    signal that has aborted, or that only a controller can abort, has none.
    A bridge that asks across rounds (the MCP extra on revision 2026-07-28)
    reads it to carry the moment to the next round.
    """
    if signal.aborted:
        return None
    sources = signal._sources if signal._dependent else (signal,)  # noqa: SLF001 - this module's signal
    moments = [
        timer.handle.when()
        for source in sources
        if (timer := source._timer) is not None and timer.handle is not None  # noqa: SLF001
    ]
    return min(moments, default=None)


@final
class _Timer:
    """The event loop's hold on a pending timeout signal.

    It holds the signal strongly while the signal has someone to tell
    (``held``), weakly otherwise; a signal collected before its deadline
    cancels the loop's handle. Firing or cancelling lets go of everything, so
    no reference cycle outlives the timer.
    """

    __slots__ = ("handle", "held", "ref")

    def __init__(
        self, signal: AbortSignal, loop: asyncio.AbstractEventLoop, seconds: float
    ) -> None:
        self.held: AbortSignal | None = None
        self.handle: asyncio.TimerHandle | None = loop.call_later(seconds, self.fire)
        self.ref: weakref.ref[AbortSignal] | None = weakref.ref(signal, self.collected)

    def fire(self) -> None:
        signal = self.ref() if self.ref is not None else None
        self.release()
        if signal is not None:
            signal._abort(TimeoutError("signal timed out"))  # noqa: SLF001 - this module's signal

    def collected(self, _ref: object) -> None:
        handle = self.handle
        self.release()
        if handle is not None:
            handle.cancel()

    def release(self) -> None:
        self.held = None
        self.handle = None
        self.ref = None


def _noop() -> None:
    return None


def _forget(dependents: dict[int, weakref.ref[AbortSignal]], key: int, ref: object) -> None:
    """Drop a collected dependent from its source, unless its key was taken since."""
    if dependents.get(key) is ref:
        del dependents[key]


def _hook_args_type() -> Callable[[tuple[object, ...]], sys.UnraisableHookArgs] | None:
    """The interpreter's ``UnraisableHookArgs``, which :mod:`sys` does not export.

    It is a struct sequence, so a subclass of :class:`tuple`; the default hook
    accepts nothing else.
    """
    subclasses = cast("list[type[object]]", tuple.__subclasses__())
    for cls in subclasses:
        if cls.__module__ == "builtins" and cls.__qualname__ == "UnraisableHookArgs":
            return cast("Callable[[tuple[object, ...]], sys.UnraisableHookArgs]", cls)
    return None  # pragma: no cover - an interpreter without it gets a look-alike


_HOOK_ARGS: Final = _hook_args_type()


def _hook_args(error: BaseException, err_msg: str, culprit: object) -> sys.UnraisableHookArgs:
    fields = (type(error), error, error.__traceback__, err_msg, culprit)
    if _HOOK_ARGS is None:  # pragma: no cover - see _hook_args_type
        return _Unraisable(*fields)
    return _HOOK_ARGS(fields)


def _report(error: Exception, listener: AbortListener) -> None:
    """Report a listener's error to :func:`sys.unraisablehook`."""
    # As CPython does: a hook that is missing or None means the default one.
    hook = getattr(sys, "unraisablehook", None) or sys.__unraisablehook__
    try:
        hook(_hook_args(error, "Exception ignored in abort signal listener", listener))
    except Exception as hook_error:  # noqa: BLE001 - reported; abort() goes on
        # As CPython does when the hook fails: the default hook reports the hook's error.
        sys.__unraisablehook__(
            _hook_args(hook_error, "Exception ignored in sys.unraisablehook", hook)
        )


@final
class _Unraisable:
    """A look-alike of ``UnraisableHookArgs`` where the interpreter has none."""

    __slots__ = ("err_msg", "exc_traceback", "exc_type", "exc_value", "object")

    def __init__(
        self,
        exc_type: type[BaseException],
        exc_value: BaseException,
        exc_traceback: TracebackType | None,
        err_msg: str,
        culprit: object,
    ) -> None:
        self.exc_type = exc_type
        self.exc_value: BaseException | None = exc_value
        self.exc_traceback = exc_traceback
        self.err_msg: str | None = err_msg
        self.object = culprit
