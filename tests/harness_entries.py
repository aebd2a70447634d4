"""Subjects for the harness tests, served by ``python -m dsh_user_interaction_conformance.child``.

The child imports a factory by name, so each is a module attribute here. The
gallery's entries are reached through :class:`Entry`, which picks one by the
environment variable ``DSH_ENTRY`` and declares its capabilities.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from typing import Any

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
)
from dsh_user_interaction_conformance import Capabilities, ScriptedDriver, Subject
from dsh_user_interaction_conformance._subject import declared_capabilities

from .gallery.providers import BROKEN_PROVIDERS
from .gallery.services import BROKEN_SERVICES


class Entry:
    """The gallery entry ``DSH_ENTRY`` names, as a zero-argument factory."""

    def __init__(self, table: dict[str, tuple[Any, str]]) -> None:
        found = table.get(os.environ.get("DSH_ENTRY", ""))
        self._factory = found[0] if found is not None else None
        self.capabilities = (
            declared_capabilities(self._factory) if self._factory is not None else None
        ) or Capabilities()
        self.__qualname__ = os.environ.get("DSH_ENTRY", "entry")

    def __call__(self) -> object:
        assert self._factory is not None, "DSH_ENTRY names no gallery entry"
        return self._factory()


broken_provider = Entry(BROKEN_PROVIDERS)
broken_service = Entry(BROKEN_SERVICES)


def _skips(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}


def answering() -> Subject:
    """A provider whose human skips every question at once."""
    provider = ScriptedProvider(respond=_skips)
    return Subject(provider=provider, driver=ScriptedDriver(provider), name="answering")


def _logs_and_skips(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    sys.stderr.write(f"log: skipping all {len(request['questions'])} questions\n")
    sys.stderr.flush()
    return _skips(request)


def logs_and_skips() -> Subject:
    """A provider that skips every question whatever the human does, and logs it."""
    provider = ScriptedProvider(respond=_logs_and_skips)
    return Subject(provider=provider, driver=ScriptedDriver(provider), name="logs-and-skips")


class _Flawed:
    """A provider that misbehaves in the way *how* names when asked."""

    def __init__(self, how: str) -> None:
        self.how = how

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if self.how == "exits":
            sys.stderr.write("about to exit with status 3\n")
            sys.stderr.flush()
            os._exit(3)
        if self.how == "garbage":
            sys.stdout.buffer.write(b"debug: showing the question\n")
            sys.stdout.buffer.flush()
        if self.how == "closes-output":
            os.close(sys.stdout.fileno())  # and runs on, its ask pending for ever
        if self.how == "freezes":
            time.sleep(30)  # noqa: ASYNC251 - the point: the whole child stops, no reply, no ping
        await asyncio.Event().wait()
        raise AssertionError


def _flawed(how: str) -> Subject:
    provider = _Flawed(how)
    scripted = ScriptedProvider()
    return Subject(provider=provider, driver=ScriptedDriver(scripted), name=how)


def exits_on_ask() -> Subject:
    """Exits with status 3 when asked."""
    return _flawed("exits")


def prints_garbage_on_ask() -> Subject:
    """Writes a debug line on standard output when asked."""
    return _flawed("garbage")


def closes_output_on_ask() -> Subject:
    """Closes its standard output when asked, and keeps running."""
    return _flawed("closes-output")


def never_answers() -> Subject:
    """Keeps every ask pending for ever, while the child answers its pings."""
    return _flawed("never")


def freezes_on_ask() -> Subject:
    """Blocks the whole child for 30 seconds when asked."""
    return _flawed("freezes")


def service() -> UserInteractionService:
    """The reference service."""
    return UserInteractionService()


class _SyncRaising:
    """A service whose ask() raises before it returns an awaitable."""

    def __init__(self) -> None:
        self._inner = UserInteractionService()

    def register_provider(self, provider: Any) -> Any:
        return self._inner.register_provider(provider)

    def ask(self, request: AskUserQuestionRequest) -> Any:
        if not request.get("questions"):
            raise ValueError("no questions")  # before any awaitable exists
        return self._inner.ask(request)


def sync_raising() -> _SyncRaising:
    """A service that raises synchronously for an empty batch (SVC-ASYNC-1)."""
    return _SyncRaising()


class _ThreadLeaking:
    """A provider that starts a thread per ask and never stops it."""

    def __init__(self, *, daemon: bool = True) -> None:
        self.scripted = ScriptedProvider()
        self.daemon = daemon

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        threading.Thread(
            target=time.sleep, args=(30,), name="leaky-poller", daemon=self.daemon
        ).start()
        return await self.scripted.ask(request)


def thread_leaking() -> Subject:
    """A provider that leaves a thread running after every ask (PRV-LEAK-1)."""
    provider = _ThreadLeaking()
    return Subject(provider=provider, driver=ScriptedDriver(provider.scripted), name="leaking")


def non_daemon_thread_leaking() -> Subject:
    """The same, with threads that are not daemons: an interpreter's exit would wait for them."""
    provider = _ThreadLeaking(daemon=False)
    return Subject(provider=provider, driver=ScriptedDriver(provider.scripted), name="leaking")


class _RewritesEarlier:
    """A provider that, while it shows a request, rewrites the one it showed before."""

    def __init__(self, respond: Any = None) -> None:
        self.scripted = ScriptedProvider(respond=respond)
        self.last: Any = None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        earlier, self.last = self.last, request
        if earlier is not None and earlier is not request and earlier["questions"]:
            first: Any = earlier["questions"][0]
            first["question"] = f"{first['question']} (seen)"
        return await self.scripted.ask(request)


def rewrites_earlier() -> Subject:
    """Changes a request after its ask settled (PRV-MUTATE-1)."""
    provider = _RewritesEarlier()
    return Subject(provider=provider, driver=ScriptedDriver(provider.scripted), name="rewrites")


def rewrites_earlier_and_skips() -> Subject:
    """Skips every question at once, after rewriting the request it showed before."""
    provider = _RewritesEarlier(respond=_skips)
    return Subject(provider=provider, driver=ScriptedDriver(provider.scripted), name="rewrites")


class _LeavesTask:
    """A service whose every ask starts a task that outlives it."""

    def __init__(self) -> None:
        self._inner = UserInteractionService()
        self._held: set[asyncio.Task[None]] = set()

    def register_provider(self, provider: Any) -> Any:
        return self._inner.register_provider(provider)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        task = asyncio.get_running_loop().create_task(asyncio.sleep(30), name="reminder")
        self._held.add(task)
        return await self._inner.ask(request)


def leaves_task() -> _LeavesTask:
    """A service that leaves a task running after every ask (SVC-LEAK-1)."""
    return _LeavesTask()
