"""Serve a Python provider or service over the harness protocol (``spec/harness.md``).

``python -m dsh_user_interaction_conformance.child --provider MODULE:ATTR``
(or ``--service MODULE:ATTR``) runs the child side of the protocol on
standard input and output, for the same factories ``--provider`` and
``--service`` take. The suite run against it through ``--provider-cmd``
judges exactly what it judges in-process, so this module is the harness's
own proof: the reference passes through it, and a broken subject fails
through it with the same requirement. It is also a template for adapters in
other languages.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import itertools
import json
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, BinaryIO, NoReturn, cast

import dsh_user_interaction
from dsh_user_interaction import AbortSignal, AskUserQuestionRequest
from dsh_user_interaction.extra.stdio import PROTOCOL_VERSION, WireError
from dsh_user_interaction.extra.stdio._values import Codec, as_object

from ._behaviour import (
    Action,
    Behaviour,
    Dismiss,
    Nothing,
    Pick,
    Revise,
    Skip,
    Step,
    TypeText,
    ways_in,
)
from ._capabilities import Capabilities
from ._subject import UsageError, declared_capabilities, load_factory

__all__ = ["main", "serve"]


def _behaviour(wire: object) -> Behaviour:
    found = as_object(wire)
    if found is None:
        raise WireError("behaviour: not an object")
    kind = found.get("kind")
    if kind == "dismiss":
        return Dismiss(_way(found))
    if kind == "nothing":
        return Nothing()
    actions: list[Action] = []
    listed: object = found.get("actions")
    for raw in cast("list[object]", listed) if type(listed) is list else []:
        action = as_object(raw) or {}
        labels = tuple(action.get("labels") or ())
        if action.get("do") == "skip":
            actions.append(Skip(_way(action)))
        elif action.get("do") == "type":
            actions.append(TypeText(str(action.get("text")), labels, _way(action)))
        elif action.get("do") == "pick":
            actions.append(Pick(labels, _way(action)))
        elif action.get("do") == "revise":
            listed_steps: object = action.get("steps")
            raw_steps = cast("list[object]", listed_steps) if type(listed_steps) is list else []
            actions.append(Revise(tuple(_step(raw) for raw in raw_steps)))
        else:
            raise WireError(f"behaviour: unknown action {action!r}")
    return tuple(actions)


def _step(wire: object) -> Step:
    """One step of a revision, from ``{"step": ..., "label" or "text": ...}``."""
    step = as_object(wire) or {}
    kind = step.get("step")
    if kind in {"pick", "unpick"}:
        return (kind, str(step.get("label")))
    if kind == "type":
        return ("type", str(step.get("text")))
    if kind == "clear":
        return ("clear", "")
    if kind == "skip":
        return ("skip", "")
    if kind == "unskip":
        return ("unskip", "")
    raise WireError(f"behaviour: unknown step {step!r}")


def _check_ways(behaviour: Behaviour, capabilities: Capabilities | None) -> None:
    """Refuse a way of doing something that the child's capabilities never declared."""
    for action, way in ways_in(behaviour):
        declared = capabilities.ways_of(action) if capabilities is not None else ()
        if way is not None and way not in declared:
            listed = ", ".join(declared) or "none"
            raise WireError(f"behaviour: {action} has no way {way!r} (declared: {listed})")


def _way(wire: dict[str, Any]) -> str | None:
    """The way a wire action or dismissal names, if any (``HAR-HELLO-1``)."""
    way = wire.get("way")
    if way is not None and (type(way) is not str or not way):
        raise WireError(f"behaviour: the way {way!r} is not a non-empty string")
    return way


class _Synchronous(Exception):
    """An ``ask()`` that raised before it returned an awaitable."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Subject:
    """One subject of the child: its objects, its codec, its pending work."""

    def __init__(self, made: object, codec: Codec) -> None:
        self.made = made
        self.codec = codec
        #: The tasks and threads running before it was made: any other one left
        #: at close is its own (PRV-LEAK-1).
        self.before = set(asyncio.all_tasks())
        self.threads = set(threading.enumerate())
        self.registrations: dict[str, object] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        #: The suite's requests, by handle, with their state as last reported (HAR-MUTATE-1).
        self.requests: dict[str, tuple[object, str]] = {}

    def remember(self, handle: object, request: object) -> None:
        """Keep *request*, which arrived as *handle*, to report its changes."""
        if type(handle) is str and handle not in self.requests:
            self.requests[handle] = (request, json.dumps(self.codec.encode_value(request)))

    def changed(self) -> dict[str, object]:
        """The requests whose content changed since last reported, as values."""
        found: dict[str, object] = {}
        for handle, (request, state) in list(self.requests.items()):
            value = self.codec.encode_value(request)
            now = json.dumps(value)
            if now != state:
                self.requests[handle] = (request, now)
                found[handle] = value
        return found


class _SuiteProvider:
    """The suite's provider, as a service subject sees it: calls go back to the suite."""

    def __init__(self, child: _Child, subject: _Subject, handle: str) -> None:
        self._child = child
        self._subject = subject
        self._handle = handle

    async def ask(self, request: AskUserQuestionRequest) -> object:
        codec = self._subject.codec
        encoded, handle = codec.encode_top(request)
        params: dict[str, Any] = {"provider": self._handle, "request": encoded}
        if handle is not None:
            params["handle"] = handle
        if (as_object(encoded) or {}).get("$") == "ref":
            params["state"] = codec.encode_value(request)  # HAR-MUTATE-2
        call_id, future = self._child.call("provider.ask", params, codec)
        try:
            reply = await asyncio.shield(future)
        except asyncio.CancelledError:
            # The service cancelled its provider: tell the suite, then take its last word.
            self._child.write({"type": "notify", "method": "cancel", "params": {"id": call_id}})
            self._child.cancelling.add(call_id)
            try:
                reply = await future
            finally:
                self._child.cancelling.discard(call_id)
            if reply.get("type") == "cancelled":
                raise
        return self._child.outcome(reply, codec)


class _Child:
    """The child side: reads the suite's messages, serves them, writes the replies."""

    def __init__(
        self, factory: Callable[[], object], role: str, out: BinaryIO, *, cancellable: bool = True
    ) -> None:
        self.factory = factory
        self.role = role
        self.out = out
        self.cancellable = cancellable
        #: Seconds ``close`` may wait for what it cancels: half the run's bound.
        self.close_wait = 0.5
        self.subjects: dict[str, _Subject] = {}
        self.calls: dict[str, asyncio.Task[None]] = {}
        self.cancelled: set[str] = set()
        #: The calls whose task has begun to run (a cancel of one lands at once).
        self.started: set[str] = set()
        #: The suite's provider calls this child cancelled, whose reply it still awaits.
        self.cancelling: set[str] = set()
        self.pending: dict[str, tuple[asyncio.Future[dict[str, Any]], Codec]] = {}
        #: Aborts of signals not decoded yet, by handle, with the reason as sent: a call
        #: is decoded when its task first runs, and an abort read with it, in the same
        #: turn, came before that. The call's decoding applies them (HAR-TURN-1).
        self.early_aborts: dict[str, object] = {}
        self._ids = itertools.count(1)
        self._handles = itertools.count(1)
        self._counts: dict[tuple[int, str], int] = {}

    def mint(self) -> str:
        return f"c{next(self._handles)}"

    # -- writing ---------------------------------------------------------

    def write(self, message: dict[str, Any]) -> None:
        lines = [*self._listener_changes(), message]
        data = b"".join(
            (json.dumps(m, ensure_ascii=True, separators=(",", ":")) + "\n").encode() for m in lines
        )
        self.out.write(data)
        self.out.flush()

    def _listener_changes(self) -> list[dict[str, Any]]:
        """``listeners`` for every suite signal whose count changed (``HAR-SIGNAL-2``)."""
        changes: list[dict[str, Any]] = []
        for subject in self.subjects.values():
            for handle, controller in subject.codec.controllers.items():
                signal: AbortSignal = controller.signal
                count = 0 if signal.aborted else signal.listener_count
                key = (id(subject), handle)
                if self._counts.get(key, 0) != count:
                    self._counts[key] = count
                    params = {"signal": handle, "count": count}
                    changes.append({"type": "notify", "method": "listeners", "params": params})
        return changes

    def call(
        self, method: str, params: dict[str, Any], codec: Codec
    ) -> tuple[str, asyncio.Future[dict[str, Any]]]:
        call_id = f"k{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = (future, codec)
        self.write({"type": "call", "id": call_id, "method": method, "params": params})
        return call_id, future

    def outcome(self, reply: dict[str, Any], codec: Codec) -> object:
        """The value of a reply, or raise the error it carries."""
        if reply.get("type") == "return":
            return codec.decode_top(reply.get("value"), reply.get("handle"), "value")
        if reply.get("type") == "throw":
            raise codec.decode_error(reply.get("error"), "error")
        raise asyncio.CancelledError

    # -- reading ---------------------------------------------------------

    def receive(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "call":
            self._call(message)
        elif kind in {"return", "throw", "cancelled"}:
            found = self.pending.pop(str(message.get("id")), None)
            if found is not None and not found[0].done():
                found[0].set_result(message)
        elif kind == "notify":
            self._notify(message.get("method"), message.get("params") or {})

    def _notify(self, method: object, params: dict[str, Any]) -> None:
        if method == "cancel" and self.cancellable:
            call_id = str(params.get("id"))
            task = self.calls.get(call_id)
            if task is None:
                return
            self.cancelled.add(call_id)
            if call_id in self.started:
                # At once, in this turn: an abort read with it lands in the same
                # turn, as the two would in-process (HAR-TURN-1, HAR-CANCEL-3).
                task.cancel()
            else:
                # A call and its cancel read together still start the call, as a
                # provider call cancelled in-process has started.
                asyncio.get_running_loop().call_soon(task.cancel)
        elif method == "abort":
            handle = str(params.get("signal"))
            for subject in self.subjects.values():
                controller = subject.codec.controllers.get(handle)
                if controller is not None:
                    controller.abort(subject.codec.decode(params.get("reason")))
                    self.write_changes()
                    return
            # Not decoded yet: its call's task has not run. Never dropped.
            self.early_aborts[handle] = params.get("reason")

    def _apply_early_aborts(self, codec: Codec) -> None:
        """Abort the signals the suite aborted before the call that carries them was decoded."""
        for handle in [h for h in self.early_aborts if h in codec.controllers]:
            reason = self.early_aborts.pop(handle)
            controller = codec.controllers[handle]
            if not controller.signal.aborted:
                controller.abort(codec.decode(reason))

    def write_changes(self) -> None:
        changes = self._listener_changes()
        if changes:
            self.out.write(
                b"".join((json.dumps(m, ensure_ascii=True) + "\n").encode() for m in changes)
            )
            self.out.flush()

    def _call(self, message: dict[str, Any]) -> None:
        call_id = str(message.get("id"))
        method = str(message.get("method"))
        params: dict[str, Any] = message.get("params") or {}
        if method == "ping":
            self.write({"type": "return", "id": call_id, "value": None})
            return
        task = asyncio.get_running_loop().create_task(self._serve(call_id, method, params))
        self.calls[call_id] = task
        task.add_done_callback(lambda done: self._unstarted(call_id, done))
        subject = self.subjects.get(str(params.get("subject")))
        if subject is not None:
            subject.tasks.add(task)
            task.add_done_callback(subject.tasks.discard)

    def _unstarted(self, call_id: str, task: asyncio.Task[None]) -> None:
        """A call cancelled before its task ever ran still gets its reply (``HAR-CALL-2``)."""
        if self.calls.pop(call_id, None) is task and task.cancelled():
            self.cancelled.discard(call_id)
            self.write({"type": "cancelled", "id": call_id})

    async def _serve(self, call_id: str, method: str, params: dict[str, Any]) -> None:
        subject = self.subjects.get(str(params.get("subject")))
        reply: dict[str, Any] = {"type": "return", "id": call_id, "value": None}
        codec = subject.codec if subject is not None else Codec(self.mint, suite=False)
        request: object = None
        before = set(asyncio.all_tasks())
        self.started.add(call_id)
        try:
            value = await self._method(method, params, subject)
        except asyncio.CancelledError as error:
            if call_id in self.cancelled:
                reply = {"type": "cancelled", "id": call_id}
            else:
                reply = {"type": "throw", "id": call_id, "error": codec.encode_error(error)}
        except _Synchronous as wrapped:  # SVC-ASYNC-1: ask() raised before it was awaited
            thrown = codec.encode_error(wrapped.error)
            thrown["synchronous"] = self.role == "service"
            reply = {"type": "throw", "id": call_id, "error": thrown}
        except BaseException as error:  # noqa: BLE001 - every outcome goes back to the suite
            reply = {"type": "throw", "id": call_id, "error": codec.encode_error(error)}
        else:
            if method == "ask":
                encoded, handle = codec.encode_top(value)
                reply["value"] = encoded
                if handle is not None:
                    reply["handle"] = handle
            else:
                reply["value"] = value
        finally:
            self.calls.pop(call_id, None)
            self.cancelled.discard(call_id)
            self.started.discard(call_id)
        if method == "ask" and subject is not None and self.role == "provider":
            request = subject.codec.objects.get(str(params.get("handle")))
            reply["request"] = codec.encode_value(request)
        if subject is not None and self.role == "provider" and method != "close":
            changed = subject.changed()
            if changed:
                reply["requests"] = changed
        if method == "ask":
            left = await self._left_by(before)
            if left:
                reply["leftovers"] = left
        self.write(reply)

    async def _left_by(self, before: set[asyncio.Task[Any]]) -> list[str]:
        """Tasks an ask started that still run a loop turn after it settled (HAR-CLOSE-1)."""
        await asyncio.sleep(0)
        mine = {t for s in self.subjects.values() for t in s.tasks} | set(self.calls.values())
        current = asyncio.current_task()
        left = [
            f"task {t.get_name()}"
            for t in asyncio.all_tasks()
            if t not in before and t not in mine and t is not current and not t.done()
        ]
        # A provider call the service cancelled and the suite has not ended is the
        # provider's: the service left it behind (SVC-LEAVE-1), and a task awaits it.
        return left[len(self.cancelling) :]

    async def _method(self, method: str, params: dict[str, Any], subject: _Subject | None) -> Any:  # noqa: ANN401 - one method per protocol call
        if method == "hello":
            bound: object = params.get("bound")
            if isinstance(bound, int | float) and not isinstance(bound, bool) and bound > 0:
                self.close_wait = 0.5 * float(bound)
            capabilities = declared_capabilities(self.factory)
            hello: dict[str, Any] = {
                "protocol": PROTOCOL_VERSION,
                "role": self.role,
                "implementation": {
                    "name": getattr(self.factory, "__qualname__", "python"),
                    "version": dsh_user_interaction.__version__,
                    "language": "python",
                },
                "cancellable": self.cancellable,
            }
            if capabilities is not None:
                declared: dict[str, object] = {**capabilities.as_dict()}
                declared.pop("cancellable", None)
                declared.pop("serves_http", None)  # a child's UI is driven over the pipe
                if capabilities.ways:
                    declared["ways"] = capabilities.ways_as_dict()
                hello["capabilities"] = declared
            return hello
        if method == "new":
            made = self.factory()
            if inspect.isawaitable(made):
                made = await made
            handle = self.mint()
            self.subjects[handle] = _Subject(made, Codec(self.mint, suite=False))
            return {"subject": handle, "name": str(getattr(made, "name", self.role))}
        if subject is None:
            raise WireError(f"{method}: no such subject {params.get('subject')!r}")
        codec = subject.codec
        if method == "close":
            return await self._close(params, subject)
        if method in {"ask", "perform", "is_shown"}:
            request = codec.decode_top(params.get("request"), params.get("handle"), "request")
            subject.remember(params.get("handle"), request)
            if self.early_aborts:
                self._apply_early_aborts(codec)
            target: Any = subject.made
            if method == "ask":
                ask: Callable[[object], Awaitable[object]] = (
                    target.provider.ask if self.role == "provider" else target.ask
                )
                try:
                    pending = ask(request)
                except Exception as error:
                    raise _Synchronous(error) from error
                return await pending
            if method == "perform":
                behaviour = _behaviour(params.get("behaviour"))
                _check_ways(behaviour, declared_capabilities(self.factory))
                await target.driver.perform(request, behaviour)
                return None
            return bool(await target.driver.is_shown(request))
        if method == "release":
            return self._release(params, subject)
        if method == "register":
            handle = str(params.get("provider"))
            stub = _SuiteProvider(self, subject, handle)
            registration = subject.made.register_provider(stub)  # type: ignore[attr-defined]
            mine = self.mint()
            subject.registrations[mine] = registration
            return {"registration": mine}
        if method == "dispose":
            registration = subject.registrations.get(str(params.get("registration")))
            if registration is not None:
                registration.dispose()  # type: ignore[attr-defined]
            return None
        raise WireError(f"unknown method {method!r}")

    def _release(self, params: dict[str, Any], subject: _Subject) -> None:
        """Forget what the suite will never name again (``HAR-RELEASE-1``)."""
        handles = params.get("handles")
        if type(handles) is not list:
            raise WireError("release: 'handles' is not a list")
        named = [h for h in cast("list[object]", handles) if type(h) is str]
        for handle in named:
            self.early_aborts.pop(handle, None)
            subject.requests.pop(handle, None)
            self._counts.pop((id(subject), handle), None)
        subject.codec.forget(named)

    async def _close(self, params: dict[str, Any], subject: _Subject) -> dict[str, Any]:
        """Settle the subject's calls, then report every task it started that will not end."""
        self.subjects.pop(str(params.get("subject")), None)
        # close answers within four fifths of the run's bound (HAR-TIME-1): wait half of it.
        deadline = time.monotonic() + self.close_wait
        current = asyncio.current_task()
        waiting = [t for t in subject.tasks if t is not current and not t.done()]
        for task in waiting:
            task.cancel()
        if waiting:
            await asyncio.wait(waiting, timeout=max(0.0, deadline - time.monotonic()))
        closer: object = getattr(subject.made, "aclose", None)
        if callable(closer):
            with contextlib.suppress(Exception):
                await cast("Callable[[], Awaitable[object]]", closer)()
        others = {t for s in self.subjects.values() for t in s.tasks} | set(self.calls.values())
        started = [
            t
            for t in asyncio.all_tasks()
            if t not in subject.before and t is not current and t not in others
        ]
        for task in started:
            task.cancel()
        if started:
            await asyncio.wait(started, timeout=max(0.0, deadline - time.monotonic()))
        left = [f"task {t.get_name()} ignores its cancellation" for t in started if not t.done()]
        # The loop's own executor threads outlive every subject by design.
        threads = [
            t
            for t in threading.enumerate()
            if t not in subject.threads and not t.name.startswith("asyncio_")
        ]
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:  # noqa: ASYNC110 - threads have no awaitable end
            await asyncio.sleep(0.05)  # never a blocking join: the pings go on
        left += [f"thread {t.name} still running" for t in threads if t.is_alive()]
        return {"leftovers": left}


async def serve(
    factory: Callable[[], object],
    role: str,
    *,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    cancellable: bool = True,
) -> None:
    """Serve *factory*'s subjects on *stdin* and *stdout* until the input ends.

    With *cancellable* false the child declares ``cancellable: false`` and
    ignores ``cancel``, as an adapter for a language without call
    cancellation does (``HAR-CANCEL-2``).
    """
    out = stdout or sys.stdout.buffer
    source = stdin or sys.stdin.buffer
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
    child = _Child(factory, role, out, cancellable=cancellable)
    while True:
        line = await reader.readline()
        if not line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            continue
        found = as_object(message)
        if found is not None:
            child.receive(found)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The command line: ``--provider MODULE:ATTR`` or ``--service MODULE:ATTR``."""
    parser = argparse.ArgumentParser(
        prog="python -m dsh_user_interaction_conformance.child",
        description="Serve a provider or service factory over the harness protocol.",
    )
    role = parser.add_mutually_exclusive_group(required=True)
    role.add_argument("--provider", metavar="MODULE:ATTR")
    role.add_argument("--service", metavar="MODULE:ATTR")
    parser.add_argument(
        "--not-cancellable",
        action="store_true",
        help="declare cancellable: false and ignore cancel, as a language without it would",
    )
    args = parser.parse_args(argv)
    try:
        factory = load_factory(
            args.provider or args.service, "--provider" if args.provider else "--service"
        )
    except UsageError as error:
        sys.stderr.write(f"{parser.prog}: error: {error}\n")
        sys.exit(2)
    role_name = "provider" if args.provider else "service"
    asyncio.run(serve(factory, role_name, cancellable=not args.not_cancellable))
    sys.exit(0)


if __name__ == "__main__":
    main()
