"""Calls, replies and notifications with one child, and the subjects built in it.

A :class:`Connection` owns the child process (through a :class:`._child.Link`)
and routes what it reads. A :class:`Session` is one subject (``new`` to
``close``) bound to the event loop it was opened in.

Design notes:

* Rule 1, threads. The reader thread only parses lines and routes them; it
  hands every message to the session's loop with ``call_soon_threadsafe``,
  in order, so the codec and the futures are touched on one thread only.
  A synchronous call (``register``, ``dispose``, which Python's seam makes
  synchronous) waits on a ``threading.Event`` that the reader sets directly.
* Rule 2, one turn, one write (``HAR-TURN-1``). Messages are collected and
  written two loop iterations later, so that what one turn sends (an abort
  and the cancellation a cancelled task sends a step later) leaves in one
  write. A synchronous call writes what is queued first, keeping the order.
* Rule 3, cancellation (``HAR-CANCEL-1``, ``HAR-CANCEL-3``). A cancelled call
  sends ``cancel`` and, when the child is cancellable, waits a bounded time
  for the child's last word, which it relays unless the suite had already
  sent something that settles the call.
* Rule 4, failure (``HAR-CRASH-1``). An exit or a bad line fails every pending
  call with :class:`ChildFailed` and marks the connection broken; the next
  session restarts the child, a bounded number of times.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import math
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from dsh_user_interaction._abort import AbortSignal

from ._child import Event, Link
from ._values import Codec, WireError, as_list, as_object

__all__ = ["KEPT_PROBLEMS", "PROTOCOL_VERSION", "ChildFailed", "Connection", "Reply", "Session"]

#: The protocol version this side speaks (harness.md).
PROTOCOL_VERSION: Final = "1.2"
#: How many protocol problems a connection keeps word for word; the rest are counted.
KEPT_PROBLEMS: Final = 100
#: Seconds ``hello`` may take (``HAR-TIME-1``).
HELLO_TIMEOUT: Final = 10.0
#: Restarts of a failed child allowed in one connection (``HAR-CRASH-1``).
MAX_RESTARTS: Final = 3
#: Seconds between pings while a session is open.
PING_EVERY: Final = 0.05
_TRANSCRIPT: Final = 80
#: A transcript line up to this long is shown whole; a longer one keeps its start
#: and its end (where a reply's value, or a request's last question, is) and says
#: how much it left out between them.
_SHOWN: Final = 2000
_HEAD: Final = 1400
_TAIL: Final = 500

#: A validator of messages: (direction, message) to a complaint, or ``None``.
Validator = Callable[[str, dict[str, Any]], "str | None"]


class ChildFailed(Exception):
    """The child broke the protocol, exited, or missed a time limit; the message says which."""


@dataclass
class Reply:
    """The child's reply to a call: its ``type`` and the whole message."""

    type: str
    message: dict[str, Any]


@dataclass(eq=False)
class _Call:
    id: str
    method: str
    session: Session | None
    loop: asyncio.AbstractEventLoop | None
    future: asyncio.Future[Reply] | None = None
    #: For synchronous calls.
    event: threading.Event | None = None
    reply: Reply | BaseException | None = None
    #: Where a reply to a call we cancelled goes.
    final: asyncio.Future[Reply] | None = None
    #: The number of the message that made it, within its session.
    seq: int = 0
    sent_at: float = math.nan
    received_at: float = math.nan
    cancelled: bool = False
    #: The call's message as the transcript shows it.
    line: str = ""
    #: The type of the child's reply (``return``, ``throw``, ``cancelled``), once it came.
    answered: str = ""


def _shorten(text: str) -> str:
    text = text.rstrip("\n")
    if len(text) <= _SHOWN:
        return text
    left_out = len(text) - _HEAD - _TAIL
    return (
        f"{text[:_HEAD]} ... ({left_out} of its {len(text)} characters left out here)"
        f" ... {text[-_TAIL:]}"
    )


def _line(message: dict[str, Any]) -> bytes:
    """One message as one line of ASCII JSON (``HAR-LINE-1``); lone surrogates escaped."""
    return (
        json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")) + "\n"
    ).encode("ascii")


class Connection:
    """One child process speaking the protocol, and the sessions opened in it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        role: str,
        bound: float = 1.0,
        validate: Validator | None = None,
        suite: str = "",
        spec: str = "",
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        cancel_grace: float | None = None,
    ) -> None:
        self.argv = list(argv)
        self.role = role
        self.bound = bound
        #: How long a cancelled call waits for the child's last word (``HAR-CANCEL-3``).
        self.cancel_grace = 2 * bound if cancel_grace is None else cancel_grace
        self.validate = validate
        self._suite, self._spec = suite, spec
        self._lock = threading.Lock()
        self._calls: dict[str, _Call] = {}
        self._abandoned: set[str] = set()
        self._ids = itertools.count(1)
        self._handles = itertools.count(1)
        self._sessions: list[Session] = []
        self.hello: dict[str, Any] = {}
        #: Problems with the protocol itself (``HAR-LINE-2``, ``-V``), in order: the
        #: first :data:`KEPT_PROBLEMS` of them (``problem_count`` counts them all).
        self.protocol_errors: list[str] = []
        #: How many protocol problems there were, kept or not.
        self.problem_count = 0
        self._problems_lock = threading.Lock()  # its own: noted from under other locks too
        self.restarts = 0
        #: The ids of the pings sent, until a reply, however late, arrives.
        self._ping_ids: set[str] = set()
        self._broken: str | None = None
        self._pings = self._ping_replies = 0
        self._silent = False
        self.transcript: collections.deque[str] = collections.deque(maxlen=_TRANSCRIPT)
        self.link = Link(self.argv, self._on_event, cwd=cwd, env=env)
        #: Started as each ping goes, and read when it is measured: the seconds
        #: the processes on the ping's path waited for a CPU meanwhile, or
        #: ``None``. The conformance suite sets it to tell a blocked loop in the
        #: child from a starved one (``Session.stall_waiting``).
        self.probe: Callable[[], Callable[[], float | None]] | None = None

    # -- set-up ----------------------------------------------------------

    def connect(self) -> dict[str, Any]:
        """Start the child and shake hands (``HAR-HELLO-1``); the child's hello.

        Raises :class:`ChildFailed` when it cannot be started, does not answer,
        or speaks another version or role.
        """
        try:
            self.link.start()
        except OSError as error:
            raise ChildFailed(f"cannot start {self.argv!r}: {error}") from None
        self._broken = None
        call = self._call_sync("hello", self._hello_params(), HELLO_TIMEOUT)
        return self._accept_hello(call)

    async def reconnect(self) -> None:
        """Restart a failed child, shaking hands without blocking the loop."""
        if self.restarts >= MAX_RESTARTS:
            raise ChildFailed(
                f"the child failed {self.restarts + 1} times; giving up. The last time: "
                f"{self._broken}"
            )
        self.restarts += 1
        await self.aconnect()

    async def aconnect(self) -> dict[str, Any]:
        """:meth:`connect`, awaiting the handshake instead of blocking the loop."""
        try:
            self.link.start()
        except OSError as error:
            raise ChildFailed(f"cannot start {self.argv!r}: {error}") from None
        self._broken = None
        loop = asyncio.get_running_loop()
        call = self._new_call("hello", None, loop)
        self._write([call], [self._message(call, self._hello_params())])
        try:
            async with asyncio.timeout(HELLO_TIMEOUT):
                reply = await call.future  # type: ignore[misc]
        except TimeoutError:
            self._forget(call)
            raise ChildFailed(self._why("the restarted child did not answer hello")) from None
        call.reply = reply
        return self._accept_hello(call)

    def _hello_params(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "suite": self._suite,
            "spec": self._spec,
            "bound": self.bound,
        }

    def _accept_hello(self, call: _Call) -> dict[str, Any]:
        reply = call.reply
        if isinstance(reply, BaseException):
            raise ChildFailed(f"hello: {reply}")
        if reply is None:  # pragma: no cover - a sync call always ends with one
            raise ChildFailed(self._why("no reply to hello"))
        if reply.type != "return":
            error = reply.message.get("error")
            raise ChildFailed(f"the child refused hello: {json.dumps(error)[:_SHOWN]}")
        hello = as_object(reply.message.get("value"))
        if hello is None:
            raise ChildFailed("the child's hello value is not an object (HAR-HELLO-1)")
        version = hello.get("protocol")  # HAR-HELLO-2: the major version and the role
        if type(version) is not str or version.split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
            raise ChildFailed(
                f"the child speaks protocol {version!r}; this suite speaks {PROTOCOL_VERSION}"
            )
        if hello.get("role") != self.role:
            raise ChildFailed(
                f"the child's role is {hello.get('role')!r}, but it was given as a {self.role}"
            )
        if type(hello.get("cancellable")) is not bool:
            raise ChildFailed("the child's hello lacks 'cancellable' (HAR-HELLO-1)")
        if self.validate is not None:
            complaint = self.validate("hello", hello)
            if complaint is not None:
                self.note_problem(f"from the child, hello value: {complaint}")
        self.hello = hello
        return hello

    @property
    def cancellable(self) -> bool:
        """Whether the child's calls can be cancelled (``HAR-CANCEL-2``)."""
        return bool(self.hello.get("cancellable"))

    @property
    def releases(self) -> bool:
        """Whether the child speaks 1.2 or later, and forgets on request (``HAR-RELEASE-1``)."""
        version = self.hello.get("protocol")
        minor = version.split(".")[1] if type(version) is str and "." in version else ""
        return minor.isdigit() and int(minor) >= 2

    @property
    def name(self) -> str:
        """The implementation's name and version, from its hello."""
        implementation = as_object(self.hello.get("implementation"))
        if implementation is None:
            return " ".join(self.argv)
        return f"{implementation.get('name', '?')} {implementation.get('version', '')}".strip()

    async def open(self, loop: asyncio.AbstractEventLoop, *, heartbeat: bool = True) -> Session:
        """A fresh subject (``new``, ``HAR-NEW-1``), restarting a failed child first."""
        if self._broken is not None or not self.link.alive:
            if self._broken is None:
                self._broken = self._why("the child exited")
            await self.reconnect()
        session = Session(self, loop)
        with self._lock:
            self._sessions.append(session)
        try:
            reply = await session.request("new", {}, bound=self.bound)
        except ChildFailed as error:
            self._drop(session)
            if self.restarts >= MAX_RESTARTS:
                raise
            self.give_up(str(error))  # a frozen child: start a fresh one
            return await self.open(loop, heartbeat=heartbeat)
        except BaseException:
            self._drop(session)
            raise
        value = as_object(reply.message.get("value") if reply.type == "return" else None) or {}
        subject = value.get("subject")
        if type(subject) is not str or not subject:
            self._drop(session)
            raise ChildFailed(f"new gave {json.dumps(reply.message)[:_SHOWN]}, not a subject")
        session.subject = subject
        name = value.get("name")
        session.name = name if type(name) is str and name else self.name
        session.start(heartbeat=heartbeat)
        return session

    def close(self) -> None:
        """Stop the child and its threads."""
        self.link.close()

    def count_pings(self, session: Session) -> None:
        """Add a closed session's pings to the run's."""
        self._pings += session.pings

    def note_problem(self, what: str) -> None:
        """Record a protocol problem; past :data:`KEPT_PROBLEMS`, only count it.

        A child can send stray lines without end (replies for no call, say):
        what is kept stays bounded, and the count still says how many.
        """
        with self._problems_lock:
            self.problem_count += 1
            if len(self.protocol_errors) < KEPT_PROBLEMS:
                self.protocol_errors.append(what)

    def problems(self) -> list[str]:
        """The protocol problems so far, a child that has answered no ping at all included.

        Late replies count as answers, so only a child that never answers is named.
        Past :data:`KEPT_PROBLEMS`, a last line says how many more there were.
        """
        if self._pings and not self._ping_replies and not self._silent:
            self._silent = True
            self.note_problem(
                f"the child answered none of {self._pings} pings (HAR-PING-1, HAR-CALL-2), "
                "so its event loop could not be judged"
            )
        with self._problems_lock:
            found = list(self.protocol_errors)
            more = self.problem_count - len(found)
        if more:
            found.append(f"... and {more} more protocol problems, counted but not kept")
        return found

    def give_up(self, why: str) -> None:
        """The child stopped answering: stop it, so the next subject starts a fresh one."""
        if self._broken is None:
            self._broken = why
        self.link.kill()

    def _drop(self, session: Session) -> None:
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)

    # -- calls -----------------------------------------------------------

    def mint(self) -> str:
        """A fresh handle of the suite's (``HAR-HANDLE-1``).

        Call ids are strings too, counted apart (``HAR-CALL-1``).
        """
        return f"s{next(self._handles)}"

    def _new_call(
        self, method: str, session: Session | None, loop: asyncio.AbstractEventLoop | None
    ) -> _Call:
        call = _Call(str(next(self._ids)), method, session, loop)
        if loop is not None:
            call.future = loop.create_future()
        else:
            call.event = threading.Event()
        with self._lock:
            broken = self._broken
            if broken is None:
                self._calls[call.id] = call
        if broken is not None:
            # The child failed: no reply will come, so the call fails now (HAR-CRASH-1).
            self._settle(call, ChildFailed(broken), math.nan)
        return call

    @staticmethod
    def _message(call: _Call, params: dict[str, Any]) -> dict[str, Any]:
        return {"type": "call", "id": call.id, "method": call.method, "params": params}

    def _call_sync(self, method: str, params: dict[str, Any], timeout: float) -> _Call:
        call = self._new_call(method, None, None)
        self._write([call], [self._message(call, params)])
        event = call.event
        assert event is not None
        if not event.wait(timeout):
            self._forget(call)
            call.reply = ChildFailed(
                self._why(f"the child did not answer {method} within {timeout:g} s (HAR-TIME-1)")
            )
        return call

    def _forget(self, call: _Call) -> None:
        with self._lock:
            if self._calls.pop(call.id, None) is not None:
                self._abandoned.add(call.id)

    def _write(
        self,
        calls: Sequence[_Call],
        messages: Sequence[dict[str, Any]],
        session: Session | None = None,
    ) -> None:
        now = time.monotonic()
        by_id: dict[object, _Call] = {call.id: call for call in calls}
        for call in calls:
            call.sent_at = now
        lines: list[bytes] = []
        for message in messages:
            line = _line(message)
            lines.append(line)
            text = line.decode("ascii")
            if message.get("type") == "call" and (made := by_id.get(message.get("id"))):
                made.line = f"-> {_shorten(text)}"
            self.transcript.append(f"-> {_shorten(text)}")
            if session is not None:
                session.transcript.append(f"-> {_shorten(text)}")
            if self.validate is not None:
                complaint = self.validate("to-child", message)
                if complaint is not None:
                    self.note_problem(f"to the child: {complaint}; message: {_shorten(text)}")
        self.link.send(b"".join(lines))

    def _why(self, what: str) -> str:
        status = self.link.returncode
        exited = f"; it exited with status {status}" if status is not None else ""
        tail = self.link.stderr_tail()
        shown = f"\nits standard error ended with:\n{tail}" if tail else ""
        return f"{what}{exited}{shown}"

    # -- the reader thread -------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """On the reader thread: route one event; nothing a child sends can stop the thread."""
        try:
            self._route(event)
        except Exception as error:  # noqa: BLE001 - a message no rule foresaw is a bad line
            why = f"the child sent a message the suite cannot route ({type(error).__name__})"
            self.note_problem(f"{why} (HAR-LINE-2): {_shorten(event.text)!r}")
            self._fail_all(f"{why}: {_shorten(event.text)!r}")
            self.link.kill()

    def _route(self, event: Event) -> None:
        received = time.monotonic()
        if event.generation != self.link.generation:
            return
        message = event.message
        if event.kind == "message" and message is not None:
            problem = _malformed(message)
            if problem is None:
                self._on_message(message, event.text, received)
                return
            event = Event("bad-line", event.generation, text=event.text, detail=problem)
        if event.kind == "bad-line":  # HAR-LINE-2
            why = f"the child printed a line that is no protocol message ({event.detail})"
            self.note_problem(f"{why} (HAR-LINE-2): {_shorten(event.text)!r}")
            self._fail_all(f"{why}: {_shorten(event.text)!r}")
            self.link.kill()
            return
        self._fail_all("the child closed its output")

    def _fail_all(self, what: str) -> None:
        why = self._why(what)
        if self._broken is None:
            self._broken = why
        with self._lock:
            calls = list(self._calls.values())
            self._calls.clear()
        for call in calls:
            self._settle(call, ChildFailed(why), math.nan)

    def _settle(self, call: _Call, reply: Reply | BaseException, received: float) -> None:
        call.received_at = received
        if call.loop is None:
            call.reply = reply
            if call.event is not None:
                call.event.set()
            return
        with contextlib.suppress(RuntimeError):  # the example's loop is gone
            call.loop.call_soon_threadsafe(_deliver, call, reply)

    def _on_message(self, message: dict[str, Any], text: str, received: float) -> None:
        kind = message.get("type")
        owner = self._owner(message)
        shown = f"<- {_shorten(text)}"
        self.transcript.append(shown)
        if owner is not None:
            owner.transcript.append(shown)
        if self.validate is not None:
            complaint = self.validate("from-child", message)
            if complaint is not None:
                self.note_problem(f"from the child: {complaint}; message: {_shorten(text)}")
        if kind in {"return", "throw", "cancelled"}:
            call_id = message.get("id")
            with self._lock:
                call = self._calls.pop(call_id, None) if type(call_id) is str else None
                abandoned = call_id in self._abandoned
                if abandoned:
                    self._abandoned.discard(str(call_id))  # its one late reply has come
                if call_id in self._ping_ids:
                    self._ping_ids.discard(str(call_id))
                    self._ping_replies += 1
            if call is None:
                if not abandoned:
                    self.note_problem(f"a reply to no pending call (HAR-CALL-2): {_shorten(text)}")
                return
            call.answered = str(kind)
            self._settle(call, Reply(str(kind), message), received)
            return
        if owner is None:
            self.note_problem(f"a message for no open subject: {_shorten(text)}")
            if kind == "call" and type(message.get("id")) is str:
                refusal = {
                    "type": "throw",
                    "id": message["id"],
                    "error": {
                        "is_seam_error": False,
                        "code": None,
                        "message": "no open subject has this provider",
                        "name": "ChildFailed",
                    },
                }
                self._write([], [refusal])
            return
        with contextlib.suppress(RuntimeError):
            owner.loop.call_soon_threadsafe(owner.receive, message)

    def _owner(self, message: dict[str, Any]) -> Session | None:
        with self._lock:
            sessions = list(self._sessions)
        if not sessions:
            return None
        kind = message.get("type")
        if kind in {"return", "throw", "cancelled"}:
            call = self._calls.get(message.get("id"))  # type: ignore[arg-type]
            return call.session if call is not None else None
        found = as_object(message.get("params")) or {}
        method = message.get("method")
        for session in reversed(sessions):
            if kind == "call" and method == "provider.ask":
                if _text(found.get("provider")) in session.providers:
                    return session
            elif method == "cancel":
                if _text(found.get("id")) in session.served:
                    return session
            elif _text(found.get("signal")) in session.codec.objects:
                return session
        return sessions[-1] if len(sessions) == 1 else None


_TYPES: Final = {
    "call": ("id", "method", "params"),
    "notify": ("method", "params"),
    "return": ("id",),
    "throw": ("id", "error"),
    "cancelled": ("id",),
}


def _text(value: object) -> str:
    """*value* if it is text, else a string no handle or id can be (for lookups)."""
    return value if type(value) is str else "\x00"


def _malformed(message: dict[str, Any]) -> str | None:
    """Why *message* is no protocol message at all (``HAR-LINE-2``), or ``None``."""
    kind = message.get("type")
    if type(kind) is not str or kind not in _TYPES:
        return f"its type is {kind!r}, none of {', '.join(_TYPES)}"
    for key in _TYPES[kind]:
        if key not in message:
            return f"a {kind} without {key!r}"
    if "id" in message and type(message["id"]) is not str:
        return "its id is not a string (HAR-CALL-1)"
    if "method" in message and type(message["method"]) is not str:
        return "its method is not a string"
    if "params" in message and type(message["params"]) is not dict:
        return "its params are not an object"
    return None


def _same(ours: object, theirs: object, depth: int = 0) -> bool:
    """Whether *theirs*, read back from the child, is what *ours* was sent as.

    Containers and scalars crossed by value and compare by value; objects
    with a handle came back as the very object.
    """
    if ours is theirs:
        return True
    if depth > 200 or type(ours) is not type(theirs):
        return type(ours) in {int, float} and type(theirs) in {int, float} and ours == theirs
    a, b = as_object(ours), as_object(theirs)
    if a is not None and b is not None:
        return a.keys() == b.keys() and all(_same(a[k], b[k], depth + 1) for k in a)
    x, y = as_list(ours), as_list(theirs)
    if x is not None and y is not None:
        return len(x) == len(y) and all(_same(i, j, depth + 1) for i, j in zip(x, y, strict=True))
    if type(ours) in {str, bool, int}:
        return ours == theirs
    if type(ours) is float:
        return ours == theirs or (math.isnan(ours) and math.isnan(theirs))  # type: ignore[arg-type]
    return False


def _deliver(call: _Call, reply: Reply | BaseException) -> None:
    """On the loop: hand *reply* to whoever waits for *call*."""
    for future in (call.future, call.final):
        if future is None or future.done():
            continue
        if isinstance(reply, BaseException):
            future.set_exception(reply)
            future.exception()  # retrieved: whoever awaits it still gets it
        else:
            future.set_result(reply)
        return


@dataclass
class _Mirror:
    """One of the suite's signals as the child holds it (``HAR-SIGNAL-2``)."""

    handle: str
    signal: AbortSignal
    remove: Callable[[], None] | None = None
    forwarded: bool = False


@dataclass(eq=False)
class Session:
    """One subject in the child, used from the event loop it was opened in."""

    connection: Connection
    loop: asyncio.AbstractEventLoop
    subject: str = ""
    name: str = ""
    codec: Codec = field(init=False)
    #: The suite's providers registered with a service subject, by handle.
    providers: dict[str, object] = field(default_factory=dict[str, object])
    #: The child's pending ``provider.ask`` calls, by call id.
    served: dict[str, asyncio.Task[None]] = field(default_factory=dict[str, "asyncio.Task[None]"])
    #: What the harness found that no check can see, as (requirement, message) pairs.
    findings: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    transcript: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=_TRANSCRIPT)
    )
    #: The longest a ping went unanswered, in seconds.
    stall: float = 0.0
    #: What :attr:`Connection.probe` said of that ping, when it is set.
    stall_waiting: float | None = None
    #: The ping with the longest wait not spent waiting for a CPU: (seconds, waiting).
    worst_ping: tuple[float, float | None] = (0.0, None)
    closed: bool = False
    _outbox: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _outbox_calls: list[_Call] = field(default_factory=list[_Call])
    #: The calls of this subject other than pings, in the order they were made.
    _made: list[_Call] = field(default_factory=list[_Call])
    _mirrors: dict[str, _Mirror] = field(default_factory=dict[str, _Mirror])
    #: The handles each ask in :meth:`holding` uses (``HAR-RELEASE-1``).
    _held: list[set[str]] = field(default_factory=list[set[str]])
    #: Handles released, whose objects are kept until the child's reply says it forgot them.
    _releasing: set[str] = field(default_factory=set[str])
    _seq: int = 0
    #: The number of the last message that can settle a call by itself (an abort, a disposal).
    settling: int = 0
    #: The number of the last message written to the child: those after it share the next write.
    written: int = 0
    _pending: set[_Call] = field(default_factory=set[_Call])
    _child_cancelled: set[str] = field(default_factory=set[str])
    _closing: bool = False
    #: Pings sent (``HAR-PING-1``).
    pings: int = 0
    _beat: asyncio.Task[None] | None = None
    _ping: _Call | None = None
    _ping_waiting: Callable[[], float | None] | None = None
    #: Whether every abort of ours is sent at once (a session without pings).
    _every_abort: bool = False

    def __post_init__(self) -> None:
        self.codec = Codec(self.connection.mint)
        self.codec.on_signal = self._watch

    @property
    def bound(self) -> float:
        """The run's bound, in seconds."""
        return self.connection.bound

    def start(self, *, heartbeat: bool = True) -> None:
        """Start pinging the child, the loop requirement's measure, unless told not to.

        Without pings, nothing else may be written for a long while, so an abort
        of ours is sent the moment it happens, even before the child has said
        it listens (``HAR-SIGNAL-1`` only asks for it before the next message).
        """
        if heartbeat:
            self._beat = self.loop.create_task(self._heartbeat(), name="dsh-harness-ping")
        else:
            self._every_abort = True

    async def ask(
        self,
        method: str,
        request: object,
        *,
        extra: dict[str, Any] | None = None,
        bound: float | None = None,
        mirror: bool = False,
        held: set[str] | None = None,
    ) -> object:
        """Call *method* about *request* (``ask``, ``perform``, ``is_shown``); its value.

        The request goes with its handle (``HAR-REF-2``). A ``throw`` is raised
        as the error it stands for. With *mirror*, a change the child made to
        the request is made to ours too (``HAR-MUTATE-1``). *held*, from
        :meth:`holding`, gathers the handles the call uses.
        """
        with self._collecting(held):
            encoded, handle = self.codec.encode_top(request)
        params: dict[str, Any] = {"subject": self.subject, "request": encoded}
        if handle is not None:
            params["handle"] = handle
        params.update(extra or {})
        reply = await self.result(self.call(method, params), bound=bound)
        with self._collecting(held):
            return self._value_of(method, reply, mirror=mirror, request=request)

    def _collecting(self, held: set[str] | None) -> contextlib.AbstractContextManager[object]:
        return self.codec.collecting(held) if held is not None else contextlib.nullcontext()

    # -- releasing (HAR-RELEASE-1) ---------------------------------------

    @contextlib.contextmanager
    def holding(self) -> Generator[set[str]]:
        """A set for :meth:`ask`'s *held*; when the block ends, release what no ask holds.

        A lifelong subject calls this around each ask, so that what a settled ask
        carried (its request, signal, agent and answer) is forgotten on both
        sides, and each ask costs what the first did. Handles in use by another
        pending ask stay, so identity holds across the asks pending together.
        """
        held: set[str] = set()
        self._held.append(held)
        try:
            yield held
        finally:
            self._held.remove(held)
            self.release_unused()

    def release_unused(self) -> None:
        """Release every handle no ask in :meth:`holding` uses, if the child can forget."""
        if self.closed or self._closing or not self.connection.releases:
            return
        kept = set[str]().union(*self._held)
        dropped = [h for h in self.codec.objects if h not in kept and h not in self._releasing]
        if not dropped:
            return
        self.codec.release(dropped)
        self._releasing.update(dropped)
        for handle in dropped:
            mirror = self._mirrors.pop(handle, None)
            if mirror is not None and mirror.remove is not None:
                mirror.remove()
        # Only calls still waiting for a reply matter to a hang report now.
        self._made = [call for call in self._made if not call.answered]
        call = self.call("release", {"subject": self.subject, "handles": dropped})
        assert call.future is not None
        call.future.add_done_callback(lambda done: self._released(call, dropped, done))

    def _released(self, call: _Call, handles: list[str], done: asyncio.Future[Reply]) -> None:
        """The child has answered ``release``: what it wrote since names none of *handles*."""
        self._pending.discard(call)
        self._releasing.difference_update(handles)
        self.codec.forget(handles)
        if done.cancelled():
            return
        error = done.exception()
        reply = done.result() if error is None else None
        if reply is not None and reply.type != "return":
            self._protocol(f"the child refused release (HAR-RELEASE-1): {reply.type}")

    def _value_of(self, method: str, reply: Reply, *, mirror: bool, request: object) -> object:
        left = reply.message.get("leftovers")
        if method == "ask" and type(left) is list and left:
            shown = "; ".join(str(item) for item in cast("list[object]", left)[:5])
            leak = "PRV-LEAK-1" if self.connection.role == "provider" else "SVC-LEAK-1"
            self.findings.append((leak, f"the child says the ask left running: {shown}"))
        try:
            self._changes(reply.message)
            if mirror:
                self._mirror(request, reply.message)
            if reply.type == "return":
                message = reply.message
                return self.codec.decode_top(message.get("value"), message.get("handle"), "value")
            if reply.type == "throw":
                raw = reply.message.get("error")
                error = self.codec.decode_error(raw, "error")
            else:
                self._protocol(f"{method} was cancelled, though the suite never cancelled it")
                raise asyncio.CancelledError
        except WireError as problem:
            self._protocol(f"the reply to {method}: {problem}")
            raise ChildFailed(
                f"the child's reply to {method} breaks the protocol: {problem}"
            ) from None
        fields = as_object(raw) or {}
        if self.connection.role == "service" and fields.get("synchronous") is True:
            self.findings.append(
                ("SVC-ASYNC-1", f"the child's {method}() threw synchronously: {error}")
            )
        raise error

    def _mirror(self, request: object, message: dict[str, Any]) -> None:
        if "request" not in message:
            self._protocol(
                f"the reply to ask lacks the request (HAR-MUTATE-1): {message.get('type')}"
            )
            return
        state = message["request"]
        tag = (as_object(state) or {}).get("$")
        if type(request) in {dict, list} and (tag == "ref" or type(state) is not type(request)):
            # A ref says nothing of its content: the request's state must be a value.
            self._protocol(
                f"the reply to ask gives the request as {json.dumps(state)[:80]}, "
                "not as its value (HAR-MUTATE-1)"
            )
            return
        self._apply(request, self.codec.decode(state, "request"))

    def _changes(self, message: dict[str, Any]) -> None:
        """Apply a reply's ``requests``: the child's requests that changed (``HAR-MUTATE-1``)."""
        if "requests" not in message:
            return
        changed = as_object(message["requests"])
        if changed is None:
            raise WireError("'requests' is not an object")
        for handle, state in changed.items():
            if handle not in self.codec.objects:
                raise WireError(f"'requests' names {handle!r}, which no request was sent as")
            self._apply(self.codec.objects[handle], self.codec.decode(state, f"requests.{handle}"))

    @staticmethod
    def _apply(request: object, state: object) -> None:
        """Make our *request* what the child says it now is (``HAR-MUTATE-1``, ``-2``)."""
        mine, theirs = as_object(request), as_object(state)
        if mine is None or theirs is None or mine is theirs:
            return
        if not _same(mine, theirs):
            mine.clear()
            mine.update(theirs)

    # -- sending ---------------------------------------------------------

    def send(self, message: dict[str, Any], call: _Call | None = None) -> int:
        """Queue *message* for this turn's write; its number in the session."""
        self._forward_aborts()
        self._seq += 1
        self._outbox.append(message)
        if call is not None:
            call.seq = self._seq
            self._outbox_calls.append(call)
        if len(self._outbox) == 1:
            self.loop.call_soon(self.loop.call_soon, self.flush)
        return self._seq

    def flush(self) -> None:
        """Write what is queued, now."""
        if not self._outbox:
            return
        messages, calls = self._outbox, self._outbox_calls
        self._outbox, self._outbox_calls = [], []
        self.written = self._seq
        self.connection._write(calls, messages, self)  # noqa: SLF001 - the session's own connection

    def notify(self, method: str, params: dict[str, Any]) -> int:
        """Send a notification."""
        return self.send({"type": "notify", "method": method, "params": params})

    def call(self, method: str, params: dict[str, Any]) -> _Call:
        """Start a call; await :meth:`result` for its reply."""
        call = self.connection._new_call(method, self, self.loop)  # noqa: SLF001
        self._pending.add(call)
        if method != "ping":
            self._made.append(call)
        self.send(Connection._message(call, params), call)  # noqa: SLF001
        return call

    def unanswered(self) -> list[str]:
        """The calls the child never answered with a value or an error, oldest first.

        Each is its message as the transcript shows it, and how it ended: for a
        hang, these are what the child was stuck on, which a transcript full of
        pings no longer shows.
        """
        how = {"cancelled": "cancelled by the suite, and the child confirmed"}
        return [
            f"{call.line}  ({how.get(call.answered, 'never answered')})"
            for call in self._made
            if call.answered not in {"return", "throw"}
        ]

    async def request(
        self, method: str, params: dict[str, Any], *, bound: float | None = None
    ) -> Reply:
        """Call *method* and return the reply; see :meth:`result`."""
        return await self.result(self.call(method, params), bound=bound)

    async def result(self, call: _Call, *, bound: float | None = None) -> Reply:
        """The reply to *call*, within *bound* seconds if given (``HAR-TIME-1``).

        When the awaiting task is cancelled, sends ``cancel`` and applies
        ``HAR-CANCEL-3``: raises ``CancelledError``, or relays the child's
        last word as a reply when it is the child's own doing.
        """
        future = call.future
        assert future is not None
        try:
            if bound is None:
                return await future
            async with asyncio.timeout(bound):
                return await future
        except TimeoutError:
            if future.done() and not future.cancelled():
                raise  # the call itself failed with a TimeoutError
            self._abandon(call)
            raise ChildFailed(
                self.connection._why(  # noqa: SLF001
                    f"the child did not answer {call.method} within {bound:g} s (HAR-TIME-1)"
                )
            ) from None
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                raise  # the reply came in the same turn: the cancellation wins
            last = await self._after_cancel(call)
            if last is None or last.type == "cancelled":
                raise
            error = as_object(last.message.get("error")) or {}
            if last.type == "throw" and error.get("cancellation") is True:
                # Read by its type, not by what it decodes to (HAR-CANCEL-1).
                requirement = (
                    "PRV-CANCEL-1" if self.connection.role == "provider" else "SVC-CANCEL-1"
                )
                self.findings.append((
                    requirement,
                    f"the child answered the cancelled {call.method} with a throw of a "
                    "cancellation, not the reply 'cancelled' (HAR-CANCEL-1)",
                ))  # fmt: skip
                raise
            return last
        finally:
            self._pending.discard(call)

    async def _after_cancel(self, call: _Call) -> Reply | None:
        """Tell the child; wait for its last word when it can hear us. ``None``: none counts.

        ``HAR-CANCEL-3``'s excuse: an abort or a disposal sent after the call, in
        an earlier write than this cancel, may have settled it first. One still
        waiting to be written goes out with the cancel, in one write, so the
        child hears the two in one turn (``HAR-TURN-1``), as they happened here.
        """
        excused = call.seq < self.settling <= self.written
        call.cancelled = True
        call.final = self.loop.create_future()
        self.notify("cancel", {"id": call.id})
        if not self.connection.cancellable:
            self._abandon(call)
            return None
        try:
            async with asyncio.timeout(self.connection.cancel_grace):
                last = await call.final
        except asyncio.CancelledError:
            self._abandon(call)
            return None
        except (TimeoutError, ChildFailed):
            self._abandon(call)
            return None
        return None if excused else last

    def _abandon(self, call: _Call) -> None:
        self.connection._forget(call)  # noqa: SLF001
        self._pending.discard(call)

    def call_sync(self, method: str, params: dict[str, Any], *, settles: bool = False) -> Reply:
        """Call *method* and block until it answers, within the bound.

        *settles* says the call can settle pending asks by itself (a disposal).
        """
        self.flush()
        self._forward_aborts()
        self.flush()
        self._seq += 1
        if settles:
            self.settling = self._seq
        call = self.connection._new_call(method, self, None)  # noqa: SLF001
        call.seq = self.written = self._seq
        self.connection._write([call], [Connection._message(call, params)], self)  # noqa: SLF001
        event = call.event
        assert event is not None
        if not event.wait(self.bound):
            self.connection._forget(call)  # noqa: SLF001
            raise ChildFailed(
                self.connection._why(  # noqa: SLF001
                    f"the child did not answer {method} within {self.bound:g} s (HAR-TIME-1)"
                )
            )
        reply = call.reply
        if isinstance(reply, BaseException):
            raise reply
        assert reply is not None
        return reply

    # -- signals ---------------------------------------------------------

    def _watch(self, handle: str, signal: AbortSignal) -> None:
        mirror = self._mirrors[handle] = _Mirror(handle, signal)
        if self._every_abort:
            mirror.remove = signal.add_listener(lambda _signal: self._forward(mirror))

    def _forward_aborts(self) -> None:
        """Send ``abort`` for our signals that aborted unheard (``HAR-SIGNAL-1``)."""
        for mirror in self._mirrors.values():
            if not mirror.forwarded and mirror.signal.aborted:
                self._forward(mirror)

    def _forward(self, mirror: _Mirror) -> None:
        if mirror.forwarded:
            return
        mirror.forwarded = True
        # The reason may come back in a pending ask's reply: those asks hold it.
        holders = [held for held in self._held if mirror.handle in held]
        with self.codec.collecting(set()) as used:
            reason = self.codec.encode(mirror.signal.reason)
        for held in holders:
            held.update(used)
        self.settling = self.notify("abort", {"signal": mirror.handle, "reason": reason})

    def _listeners(self, handle: object, count: object) -> None:
        mirror = self._mirrors.get(handle) if type(handle) is str else None
        if mirror is None or type(count) is not int or count < 0:
            self._protocol(f"'listeners' for {handle!r} with count {count!r}")
            return
        if count and mirror.signal.aborted:
            self._forward(mirror)  # it listens on a signal that already aborted: tell it now
        elif count and mirror.remove is None:
            mirror.remove = mirror.signal.add_listener(lambda _signal: self._forward(mirror))
        elif not count and mirror.remove is not None and not self._every_abort:
            mirror.remove()
            mirror.remove = None

    # -- receiving -------------------------------------------------------

    def _protocol(self, what: str) -> None:
        self.connection.note_problem(what)

    def receive(self, message: dict[str, Any]) -> None:
        """On the loop: a call or notification from the child."""
        params: dict[str, Any] = message.get("params") or {}
        method = message.get("method")
        if message.get("type") == "call":
            self._serve_call(message, params)
        elif method == "listeners":
            self._listeners(params.get("signal"), params.get("count"))
        elif method == "abort":
            self._their_abort(params)
        elif method == "cancel":
            task = self.served.get(_text(params.get("id")))
            if task is not None:
                self._child_cancelled.add(str(params.get("id")))
                # A step later: a call and its cancel read together still start the call,
                # as a provider call cancelled in-process has started (SVC-DISPOSE-1 counts).
                self.loop.call_soon(task.cancel)
        else:
            self._protocol(f"an unknown notification {method!r}")

    def _their_abort(self, params: dict[str, Any]) -> None:
        handle = params.get("signal")
        controller = self.codec.controllers.get(handle) if type(handle) is str else None
        if controller is None:
            self._protocol(f"'abort' for {handle!r}, which is none of the child's signals")
            return
        try:
            reason = self.codec.decode(params.get("reason"), "abort reason")
        except WireError as error:
            self._protocol(str(error))
            reason = None
        controller.abort(reason)

    def _serve_call(self, message: dict[str, Any], params: dict[str, Any]) -> None:
        call_id = str(message.get("id"))
        provider = self.providers.get(_text(params.get("provider")))
        try:
            if message.get("method") != "provider.ask" or provider is None:
                raise WireError(f"no such call: {message.get('method')!r} for this subject")
            request = self.codec.decode_top(params.get("request"), params.get("handle"), "request")
            if "state" in params:
                self._apply(request, self.codec.decode(params["state"], "state"))
        except WireError as error:
            self._protocol(str(error))
            self.send({"type": "throw", "id": call_id, "error": self.codec.encode_error(error)})
            return
        ask = cast("Callable[[object], Awaitable[object]]", provider.ask)  # type: ignore[attr-defined]
        task = self.loop.create_task(self._serve(call_id, ask, request))
        self.served[call_id] = task
        task.add_done_callback(lambda done: self._unstarted(call_id, done))

    def _unstarted(self, call_id: str, task: asyncio.Task[None]) -> None:
        """A call cancelled before its task ever ran still gets its reply (``HAR-CALL-2``)."""
        if self.served.pop(call_id, None) is task and task.cancelled() and not self.closed:
            self._child_cancelled.discard(call_id)
            self.send({"type": "cancelled", "id": call_id})

    async def _serve(
        self, call_id: str, ask: Callable[[object], Awaitable[object]], request: object
    ) -> None:
        reply: dict[str, Any]
        try:
            answer = await ask(request)
        except asyncio.CancelledError as error:
            if call_id in self._child_cancelled or self._closing:
                reply = {"type": "cancelled", "id": call_id}
            else:  # the provider's own CancelledError: an error like any other
                reply = {"type": "throw", "id": call_id, "error": self.codec.encode_error(error)}
        except BaseException as error:  # noqa: BLE001 - every outcome goes back to the child
            reply = {"type": "throw", "id": call_id, "error": self.codec.encode_error(error)}
        else:
            value, handle = self.codec.encode_top(answer)
            reply = {"type": "return", "id": call_id, "value": value}
            if handle is not None:
                reply["handle"] = handle
        finally:
            self.served.pop(call_id, None)
            self._child_cancelled.discard(call_id)
        if not self.closed:
            self.send(reply)

    # -- the heartbeat, and closing ----------------------------------------

    async def _heartbeat(self) -> None:
        # The first ping goes at once, so every subject is pinged at least once.
        while True:
            ping = self._ping = self.call("ping", {})
            probe = self.connection.probe
            self._ping_waiting = probe() if probe is not None else None
            self.pings += 1
            self.connection._ping_ids.add(ping.id)  # noqa: SLF001 - its own connection
            assert ping.future is not None
            # Waited for without cancelling it, so that closing never waits on a ping.
            await asyncio.wait({ping.future}, timeout=3 * self.bound)
            self._measure(ping)
            self._abandon(ping)
            self._ping = None
            await asyncio.sleep(PING_EVERY)

    def _measure(self, ping: _Call) -> None:
        if math.isnan(ping.sent_at):
            return
        end = ping.received_at if not math.isnan(ping.received_at) else time.monotonic()
        seconds = end - ping.sent_at
        waiting = self._ping_waiting() if self._ping_waiting is not None else None
        if seconds > self.stall:
            self.stall, self.stall_waiting = seconds, waiting
        worst, worst_waiting = self.worst_ping
        if seconds - (waiting or 0.0) > worst - (worst_waiting or 0.0):
            self.worst_ping = (seconds, waiting)

    async def aclose(self, leak: str) -> None:
        """``close`` the subject (``HAR-CLOSE-1``); what it leaves fails *leak*.

        The pings go on until the child answers, so a loop blocked while it
        closes is measured too. ``close`` is never cancelled: it has most of
        the bound, and a child that does not answer in time is stopped, so
        the next subject starts a fresh one.
        """
        if self.closed or self._closing:
            return
        self._closing = True
        for task in list(self.served.values()):
            task.cancel()
        call = self.call("close", {"subject": self.subject})
        assert call.future is not None
        limit = 0.8 * self.bound
        await asyncio.wait({call.future}, timeout=limit)
        beat, self._beat = self._beat, None
        if beat is not None:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError, ChildFailed):
                await beat
        if self._ping is not None:
            self._measure(self._ping)
            self._abandon(self._ping)
        try:
            if not call.future.done():
                self._abandon(call)
                why = self.connection._why(  # noqa: SLF001
                    f"the child did not answer close within {limit:g} s (HAR-TIME-1)"
                )
                self.findings.append((leak, why))
                self.connection.give_up(why)
            elif call.future.exception() is not None:
                self.findings.append((leak, f"close: {call.future.exception()}"))
            else:
                self._leftovers(leak, call.future.result())
        finally:
            self._pending.discard(call)
            self.closed = True
            self.connection._drop(self)  # noqa: SLF001
            self.connection.count_pings(self)
            for mirror in self._mirrors.values():
                if mirror.remove is not None:
                    mirror.remove()
                    mirror.remove = None
        unanswered = [c for c in self._pending if c.future is not None and not c.future.done()]
        if unanswered:
            methods = ", ".join(sorted({c.method for c in unanswered}))
            self.findings.append(
                (leak, f"close left {len(unanswered)} call(s) unanswered: {methods}")
            )
            for pending in unanswered:
                self._abandon(pending)
                _deliver(pending, ChildFailed("the subject was closed"))
        for task in list(self.served.values()):
            with contextlib.suppress(BaseException):
                await task

    def _leftovers(self, leak: str, reply: Reply) -> None:
        leftovers = (as_object(reply.message.get("value")) or {}).get("leftovers")
        if reply.type != "return" or type(leftovers) is not list:
            self.findings.append((leak, f"close gave {json.dumps(reply.message)[:_SHOWN]}"))
        elif leftovers:
            shown = "; ".join(str(item) for item in cast("list[object]", leftovers)[:5])
            self.findings.append((leak, f"the child left running after close: {shown}"))
