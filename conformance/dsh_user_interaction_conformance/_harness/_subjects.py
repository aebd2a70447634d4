"""Subjects in other processes: the suite's side of ``spec/harness.md``.

:class:`HarnessSubjects` and :class:`HarnessServices` are the factories
behind ``--provider-cmd`` and ``--service-cmd``. Each starts one child at
construction (before any example runs, so no example starts a thread) and
opens one fresh subject in it per example. The proxies they return are
ordinary providers, drivers and services, so every check runs unchanged;
what a check cannot see across the pipe (what it leaves after ``close``, a
synchronous throw) the proxies report through :meth:`findings`, and the
engine judges it with the example. A blocked loop in the child shows as a
late ping reply: the proxies give the engine their pings as stalls
(:meth:`ping_stalls`), judged by the same rule as a stall in-process, with
the time the processes on the ping's path waited for a CPU (:class:`_PathProbe`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, TypeVar, cast

import dsh_user_interaction
from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionProvider,
)
from dsh_user_interaction.extra.stdio import ChildFailed
from dsh_user_interaction.extra.stdio._session import Connection, Session
from dsh_user_interaction.extra.stdio._values import Codec, as_object

from .._behaviour import Behaviour, Dismiss, Nothing, Pick, Revise, Skip, TypeText
from .._capabilities import Capabilities
from .._loop import Stall, note_waited_on, process_collecting
from .._subject import Subject

__all__ = [
    "HarnessServices",
    "HarnessSubjects",
    "RemoteDriver",
    "RemoteProvider",
    "RemoteService",
    "protocol_validator",
]

T = TypeVar("T")

_CAPABILITY_FIELDS: Final = tuple(
    name
    for name in Capabilities.__dataclass_fields__
    # A child's UI is driven over the pipe: one surface, no HTTP probe.
    if name not in {"cancellable", "ways", "surfaces", "serves_http"}
)


@cache
def _schema() -> dict[str, Any]:
    name = "harness.schema.json"
    packaged = resources.files("dsh_user_interaction_conformance") / "spec" / "schema" / name
    if packaged.is_file():
        text = packaged.read_text(encoding="utf-8")
    else:  # an editable install runs from the source tree
        text = (Path(__file__).resolve().parents[3] / "spec" / "schema" / name).read_text("utf-8")
    found: dict[str, Any] = json.loads(text)
    return found


def protocol_validator() -> Any:  # noqa: ANN401 - a Validator, typed by the session module
    """A validator of messages against ``schema/harness.schema.json`` (``HAR-VALIDATE-1``).

    Called with a direction (``"to-child"``, ``"from-child"`` or ``"hello"``,
    the hello value) and a message; returns the schema's complaint or ``None``.
    """
    try:
        import jsonschema  # noqa: PLC0415 - only -V needs it
    except ImportError as missing:  # pragma: no cover - a conformance extra dependency
        raise RuntimeError(
            "-V needs jsonschema: pip install 'dsh-user-interaction[conformance]'"
        ) from missing
    schema = _schema()
    library: Any = jsonschema  # its stubs leave parts unknown
    validators: dict[str, Any] = {
        direction: library.Draft202012Validator(
            {**schema, "anyOf": [{"$ref": f"#/$defs/{target}"}]}
        )
        for direction, target in (
            ("to-child", "to-child"),
            ("from-child", "from-child"),
            ("hello", "hello_result"),
        )
    }

    def validate(direction: str, message: dict[str, Any]) -> str | None:
        found: Any = library.exceptions.best_match(validators[direction].iter_errors(message))
        if found is None:
            return None
        path: list[object] = list(found.absolute_path)
        where = "".join(f"[{p!r}]" for p in path) or "the message"
        text = str(found.message)
        return f"{where}: {text[:300]} (HAR-VALIDATE-1)"

    return validate


def _capabilities(hello: dict[str, Any], cancellable: bool) -> Capabilities:
    """The capabilities a child's hello declares (``HAR-HELLO-1``); a missing one is true."""
    declared = hello.get("capabilities", {})
    found = as_object(declared)
    if found is None:
        raise ChildFailed(f"the child's capabilities are {declared!r}, not an object (HAR-HELLO-1)")
    flags: dict[str, Any] = {}
    for name in _CAPABILITY_FIELDS:
        value = found.get(name, True)
        if type(value) is not bool:
            raise ChildFailed(f"the child's capability {name!r} is {value!r}, not a boolean")
        flags[name] = value
    unknown = sorted(set(found) - {*_CAPABILITY_FIELDS, "ways"})
    if unknown:
        raise ChildFailed(f"the child declares an unknown capability {unknown[0]!r}")
    ways = found.get("ways", {})
    try:
        declared_ways = Capabilities(ways=ways)
    except (TypeError, ValueError) as error:
        raise ChildFailed(f"the child's capability 'ways' is refused: {error}") from None
    return replace(declared_ways, cancellable=cancellable, **flags)


def _way(wire: dict[str, Any], way: str | None) -> dict[str, Any]:
    """*wire*, with the way it is done when it names one (``HAR-HELLO-1``)."""
    if way is not None:
        wire["way"] = way
    return wire


def _step(kind: str, value: str) -> dict[str, str]:
    """One step of a revision on the wire: ``{"step": "pick", "label": ...}`` and so on."""
    if kind in {"pick", "unpick"}:
        return {"step": kind, "label": value}
    if kind == "type":
        return {"step": kind, "text": value}
    return {"step": kind}


def _behaviour(behaviour: Behaviour) -> dict[str, Any]:
    if isinstance(behaviour, Dismiss):
        return _way({"kind": "dismiss"}, behaviour.way)
    if isinstance(behaviour, Nothing):
        return {"kind": "nothing"}
    actions: list[dict[str, Any]] = []
    for action in behaviour:
        if isinstance(action, Revise):
            actions.append(
                {"do": "revise", "steps": [_step(kind, value) for kind, value in action.steps]}
            )
            continue
        if isinstance(action, Skip):
            wire: dict[str, Any] = {"do": "skip"}
        elif isinstance(action, TypeText):
            wire = {"do": "type", "text": action.text, "labels": list(action.labels)}
        else:
            wire = {"do": "pick", "labels": list(action.labels)}
        actions.append(_way(wire, action.way))
    return {"kind": "actions", "actions": actions}


#: What one question's action is, to tell a behaviour from other drawn tuples.
_ACTIONS: Final = (Pick, TypeText, Skip, Revise)


def _is_actions(value: object) -> bool:
    """Whether *value* is one action per question, as a drawn behaviour is."""
    if type(value) is not tuple:
        return False
    items = cast("tuple[object, ...]", value)
    return bool(items) and all(isinstance(item, _ACTIONS) for item in items)


def _display_handles() -> Callable[[], str]:
    """Handles for a displayed value: ``s1``, ``s2``, ... (the suite's side mints them)."""
    counter = itertools.count(1)
    return lambda: f"s{next(counter)}"


class _Remote:
    """What a proxy reports beyond its calls: the engine reads these after each example."""

    def __init__(self, session: Session, kind: str) -> None:
        self._session = session
        self._kind = kind

    def show(self, value: object) -> str:
        """A drawn value as the JSON that crosses the pipe, for a failure's example.

        ``null``, not ``None``; a signal as its tag; an expected error or a
        broken rule after the JSON, in words. A fresh codec writes it, so its
        handles are this example's own, not the transcript's.
        """
        from ..strategies import InvalidAnswer, InvalidRequest  # noqa: PLC0415 - a failure only

        codec = Codec(_display_handles(), suite=True)

        def wire(found: object) -> str:
            return json.dumps(codec.encode_value(found), ensure_ascii=True)

        if isinstance(value, InvalidRequest):
            field = f", field {value.field!r}" if value.field else ""
            must = f"must raise {value.code.value}: {value.requirement}{field}"
            return f"{wire(value.request)}  ({must})"
        if isinstance(value, InvalidAnswer):
            return f"{wire(value.answer)}  (breaks {value.requirement})"
        if isinstance(value, Dismiss | Nothing) or _is_actions(value):
            return json.dumps(_behaviour(cast("Behaviour", value)), ensure_ascii=True)
        return wire(value)

    def findings(self) -> list[tuple[str, str]]:
        """(requirement, message) pairs the harness found in this example.

        A late ping is not among them: see :meth:`ping_stalls`.
        """
        return list(self._session.findings)

    def ping_stalls(self) -> list[Stall]:
        """The longest ping of this example, and the one least explained by waiting for a CPU.

        Each is a :class:`Stall` whose ``waiting`` is the time the child's
        processes and the suite's pipe threads waited for a CPU during it
        (``None`` where that cannot be read); the engine judges them.
        """
        session = self._session
        longest = Stall(
            session.stall,
            waiting=session.stall_waiting,
            preempted=_preempted(session.stall_waiting),
        )
        seconds, waiting = session.worst_ping
        worst = Stall(seconds, waiting=waiting, preempted=_preempted(waiting))
        return [longest] if worst == longest else [longest, worst]

    def transcript(self) -> list[str]:
        """The messages of this example, both directions, in order (the newest 80).

        Then the calls the child never answered (what a hang was stuck on), and
        the end of the child's standard error, when it wrote any: a failing
        example of a child that logs shows what it logged, not only a crash's.
        """
        lines = list(self._session.transcript)
        unanswered = self._session.unanswered()
        if unanswered:
            lines.append("calls the child had not answered when the example ended:")
            lines += [f"  {line}" for line in unanswered]
        tail = self._session.connection.link.stderr_tail()
        if tail:
            lines.append("the child's standard error ended with:")
            lines += [f"  {line}" for line in tail.splitlines()]
        return lines


class _Waited(float):
    """Seconds waited for a CPU on a ping's path, and how often the child was preempted.

    A ``float`` to the session that keeps it; :attr:`preempted` is the most
    times one of the child's threads was preempted (switched off a CPU it
    still wanted) during the ping: a stretch of the child's own code is
    preempted again and again on a busy machine, a loop that only waited
    for its turn hardly ever.
    """

    preempted: int | None = None


def _preempted(waiting: float | None) -> int | None:
    return waiting.preempted if isinstance(waiting, _Waited) else None


class _PathProbe:
    """The time the processes on a ping's path waited for a CPU (``Connection.probe``).

    Linux only: the run-queue waits (``schedstat``) of every thread of the
    child and of its descendants, and of every thread of the suite's own
    process (its pipe threads, and the threads whose interpreter lock they
    may wait on). Elsewhere every reading is ``None``. The sum over them all
    is more than the ping waited, never less: what is left of the ping is at
    least the child's own, and a stall is called blocked only on that.
    """

    #: The most processes and threads read per ping, so a child with many costs little.
    _MOST = 256

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def __call__(self) -> Callable[[], float | None]:
        """Start a reading; the function returned gives the seconds waited since.

        The suite's own garbage collections in the window count as waiting
        too: while one runs, the pipe threads cannot read the reply.
        """
        start = self._waits()
        if start is None:
            return lambda: None
        collecting = process_collecting()

        def waited() -> float | None:
            now = self._waits()
            if now is None:
                return None
            # A thread that started meanwhile waited all its waits in the window.
            queued = sum(
                max(0.0, wait - start.get(key, (0.0, None))[0]) for key, (wait, _) in now.items()
            )
            preempted = [
                count - (start.get(key, (0.0, None))[1] or 0)
                for key, (_, count) in now.items()
                if count is not None
            ]
            found = _Waited(queued + process_collecting() - collecting)
            found.preempted = max(preempted) if preempted else None
            return found

        return waited

    def _waits(self) -> dict[tuple[int, int], tuple[float, int | None]] | None:
        """Each thread's wait for a CPU, and (the child's) its preemptions, by (pid, tid)."""
        if sys.platform != "linux":
            return None
        link = self._connection.link
        process = link._process  # noqa: SLF001 - the suite's own link
        found: dict[tuple[int, int], tuple[float, int | None]] = {}
        own = os.getpid()
        try:
            mine = os.listdir(f"/proc/{own}/task")
        except OSError:
            mine = []
        for name in mine[: self._MOST]:
            wait = _waiting(f"/proc/{own}/task/{name}/schedstat")
            if wait is not None:
                found[own, int(name)] = (wait, None)
        if process is None:
            return found
        queue = [process.pid]
        seen: set[int] = set()
        while queue and len(found) < self._MOST:
            pid = queue.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for name in tids[: self._MOST]:
                wait = _waiting(f"/proc/{pid}/task/{name}/schedstat")
                if wait is not None:
                    found[pid, int(name)] = (wait, _involuntary(f"/proc/{pid}/task/{name}/status"))
            path = f"/proc/{pid}/task/{pid}/children"
            with contextlib.suppress(OSError, ValueError), open(path, "rb") as children:
                queue.extend(int(child) for child in children.read().split())
        return found


def _waiting(path: str) -> float | None:
    """The run-queue wait in one ``schedstat`` file, in seconds; ``None`` if unreadable."""
    try:
        with open(path, "rb") as file:
            fields = file.read(128).split()
    except OSError:
        return None
    if len(fields) < 3 or not fields[1].isdigit() or fields[2] == b"0":
        return None  # unreadable, or "0 0 0": a kernel without scheduler statistics
    return int(fields[1]) / 1e9


_INVOLUNTARY: Final = b"nonvoluntary_ctxt_switches:"


def _involuntary(path: str) -> int | None:
    """A thread's involuntary context switches, from its ``status`` file; ``None`` if unreadable."""
    try:
        with open(path, "rb") as file:
            text = file.read()
    except OSError:
        return None
    at = text.find(_INVOLUNTARY)
    if at < 0:
        return None
    number = text[at + len(_INVOLUNTARY) :].split(maxsplit=1)
    return int(number[0]) if number and number[0].isdigit() else None


def _waited_on(session: Session, call: Callable[[], T]) -> T:
    """*call* (a synchronous call to the child), noting what its path waited for a CPU meanwhile.

    The example's loop sleeps in it; the waits keep that sleep from being
    judged blocked for the machine's load (``note_waited_on``).
    """
    probe = session.connection.probe
    waited = probe() if probe is not None else None
    try:
        return call()
    finally:
        seconds = waited() if waited is not None else None
        if seconds is not None:
            note_waited_on(seconds)


class RemoteProvider(_Remote):
    """The child's provider, as a Python provider."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """``ask`` in the child; its answer, or its error raised here."""
        return await self._session.ask("ask", request, mirror=True)  # type: ignore[return-value] # judged by the checks


class RemoteDriver:
    """The child's driver, as a Python driver."""

    def __init__(self, session: Session, capabilities: Capabilities) -> None:
        self._session = session
        self.capabilities = capabilities

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """``perform`` in the child."""
        await self._session.ask("perform", request, extra={"behaviour": _behaviour(behaviour)})

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """``is_shown`` in the child, within the bound."""
        shown = await self._session.ask("is_shown", request, bound=self._session.bound)
        if type(shown) is not bool:
            raise ChildFailed(f"is_shown returned {shown!r}, not a boolean")
        return shown


class RemoteRegistration:
    """A registration in the child's service."""

    def __init__(self, session: Session, handle: str) -> None:
        self._session = session
        self._handle = handle

    def dispose(self) -> None:
        """``dispose`` in the child, synchronously, as Python's seam does."""
        session = self._session
        params = {"subject": session.subject, "registration": self._handle}
        reply = _waited_on(session, lambda: session.call_sync("dispose", params, settles=True))
        if reply.type == "throw":
            raise session.codec.decode_error(reply.message.get("error"), "error")

    def __call__(self) -> None:
        self.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.dispose()


class RemoteService(_Remote):
    """The child's service, as a Python service."""

    def register_provider(self, provider: UserInteractionProvider, /) -> RemoteRegistration:
        """``register`` in the child, synchronously; the suite's *provider* answers its calls."""
        session = self._session
        handle = session.codec.remember(provider)
        session.providers[handle] = provider
        params = {"subject": session.subject, "provider": handle}
        reply = _waited_on(session, lambda: session.call_sync("register", params))
        if reply.type == "throw":
            raise session.codec.decode_error(reply.message.get("error"), "error")
        value = as_object(reply.message.get("value")) or {}
        registration = value.get("registration")
        if type(registration) is not str:
            raise ChildFailed(f"register gave {value!r}, not a registration handle")
        return RemoteRegistration(session, registration)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """``ask`` in the child."""
        return await self._session.ask("ask", request)  # type: ignore[return-value] # judged by the checks

    async def aclose(self) -> None:
        """``close`` the subject; the engine calls it after each example."""
        await self._session.aclose("SVC-LEAK-1")


class _Factory:
    """A child for the whole run, and a fresh subject in it per example.

    *command* is a command line (split as a shell would) or a list of
    arguments. *bound* is the run's bound: it times the child's set-up calls
    (``HAR-TIME-1``) and sets the stall limit of its pings, so pass the same
    one to :func:`run_suite` (the command line does). *validate* checks every
    message against the protocol's schema (``-V``). *cwd* and *env* are the
    child's. The child starts, and shakes hands, here: a child that cannot
    raises :class:`~dsh_user_interaction.extra.stdio.ChildFailed`.
    """

    role: str = ""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        bound: float = 1.0,
        validate: bool = False,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("the command is empty")
        self.command = shlex.join(argv)
        self.connection = Connection(
            argv,
            role=self.role,
            bound=bound,
            validate=protocol_validator() if validate else None,
            suite=dsh_user_interaction.__version__,
            spec=dsh_user_interaction.SPEC_VERSION,
            cwd=cwd,
            env=env,
        )
        self.connection.probe = _PathProbe(self.connection)
        try:
            hello = self.connection.connect()
        except BaseException:
            self.connection.close()
            raise
        try:
            self.capabilities = _capabilities(hello, self.connection.cancellable)
        except ChildFailed:
            self.connection.close()
            raise
        self.__qualname__ = f"{self.connection.name} ({self.command})"
        self.__module__ = ""

    @property
    def protocol_errors(self) -> list[str]:
        """Every protocol problem seen so far (``HAR-LINE-2``, ``HAR-VALIDATE-1``)."""
        return self.connection.problems()

    async def _open(self) -> Session:
        return await self.connection.open(asyncio.get_running_loop())

    def close(self) -> None:
        """Stop the child."""
        self.connection.close()


class HarnessSubjects(_Factory):
    """A subject factory for a provider (and its driver) in a child process.

    *command* is a command line (split as a shell would) or a list of
    arguments. *bound* is the run's bound: it times the child's set-up calls
    (``HAR-TIME-1``) and sets the stall limit of its pings, so pass the same
    one to :func:`run_suite` (the command line does). *validate* checks every
    message against the protocol's schema (``-V``); ``protocol_errors``
    lists what it found. *cwd* and *env* are the child's. The child starts,
    and shakes hands, here: one that cannot raises
    :class:`~dsh_user_interaction.extra.stdio.ChildFailed`. Call
    ``close()`` when the run is done.

    The child's ``hello`` declares the capabilities, so ``run_suite`` needs
    no ``capabilities`` argument for it.
    """

    role = "provider"

    async def __call__(self) -> Subject:
        """Open a fresh subject in the child."""
        session = await self._open()
        return Subject(
            provider=RemoteProvider(session, "provider"),
            driver=RemoteDriver(session, self.capabilities),
            name=session.name,
            aclose=lambda: session.aclose("PRV-LEAK-1"),
        )


class HarnessServices(_Factory):
    """A service factory for a service in a child process; arguments as :class:`HarnessSubjects`.

    A child that declares ``cancellable: false`` has ``SVC-CANCEL-1`` skipped.
    """

    role = "service"

    async def __call__(self) -> RemoteService:
        """Open a fresh service in the child."""
        return RemoteService(await self._open(), "service")
