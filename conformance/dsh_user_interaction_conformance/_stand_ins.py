"""Stand-in providers the service checks register, and small outcome helpers.

The suite owns these providers, so it knows exactly what reached them and how
they were cancelled. The project's own tests use them too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)

__all__ = [
    "Converting",
    "Ignoring",
    "Recording",
    "StandInFailed",
    "Stubborn",
    "Swallowing",
    "code_of",
    "settle",
]


class StandInFailed(Exception):
    """The suite's own stand-in provider could not do its part: not the subject's bug as such.

    A stand-in that reads the request it is given (to skip every question,
    say) fails this way when a service hands it something that is not a
    well-formed request; the report then names the suite's stand-in and what
    it was given, instead of blaming the error on the service's own code.
    """


class Recording:
    """A provider that records each request and returns a given answer (or skips all)."""

    def __init__(self, *answer: object) -> None:
        self.seen: list[AskUserQuestionRequest] = []
        self.answer = answer

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.seen.append(request)
        if self.answer:
            return self.answer[0]  # type: ignore[return-value] # deliberately any answer
        try:
            return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}
        except Exception as error:
            msg = (
                "the stand-in provider of the suite could not skip the questions of the request "
                f"the service passed it ({error!r}): {request!r:.200}"
            )
            raise StandInFailed(msg) from error


class _Waiting:
    """Shows the request and waits forever; ``started`` is set once it is waiting.

    ``cancelled`` counts the cancellations its calls received.
    """

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled: int = 0

    async def _wait(self) -> None:
        self.started.set()
        await asyncio.Event().wait()


class Ignoring(_Waiting):
    """A provider that ignores its signal and waits forever, counting its cancellations."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            await self._wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError  # pragma: no cover - the wait never ends


class Swallowing(_Waiting):
    """A provider that swallows its cancellation and answers late."""

    def __init__(self, answer: AskUserQuestionAnswer) -> None:
        super().__init__()
        self.answer = answer

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            await self._wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            return self.answer
        raise AssertionError  # pragma: no cover - the wait never ends


class Converting(_Waiting):
    """A provider that turns its cancellation into ``ASK_ABORTED``, as some UIs do."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            await self._wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED) from None
        raise AssertionError  # pragma: no cover - the wait never ends


class Stubborn(_Waiting):
    """A provider that ignores its cancellation and stays pending until :meth:`release`.

    What a JavaScript provider that ignores its signal does: the call goes on
    as if nothing happened. Released, it ends its call by re-raising the
    cancellation at last (or ``ASK_CANCELLED`` if it never had one), and sets
    ``ended``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._released = asyncio.Event()
        self.ended = asyncio.Event()

    def release(self) -> None:
        """Let every pending call end."""
        self._released.set()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started.set()
        try:
            while not self._released.is_set():
                try:
                    await self._released.wait()
                except asyncio.CancelledError:
                    self.cancelled += 1  # and wait on regardless
            if self.cancelled:
                raise asyncio.CancelledError
            raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)
        finally:
            self.ended.set()


def code_of(outcome: object) -> object:
    """The ``code`` an outcome carries, or ``None``; services in any style may pass."""
    return getattr(outcome, "code", None)


async def settle(awaitable: Awaitable[object]) -> object:
    """Await *awaitable* and return its result or the exception it raised."""
    try:
        return await awaitable
    except BaseException as error:  # noqa: BLE001 - every outcome is judged by the caller
        return error
