"""Small shared helpers for the tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest

T = TypeVar("T")

#: No test waits longer than this for anything; a hang fails instead.
BOUND = 5.0


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run *coro* in a fresh loop, failing after ``BOUND`` seconds."""

    async def bounded() -> T:
        async with asyncio.timeout(BOUND):
            return await coro

    return asyncio.run(bounded())


async def settle(awaitable: Awaitable[T]) -> T | BaseException:
    """Await *awaitable* and return its result or the exception it raised."""
    try:
        return await awaitable
    except BaseException as error:  # noqa: BLE001 - the tests inspect every outcome
        return error


class Ignoring:
    """A provider that ignores its signal and never answers."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


def one_question(question_id: str = "q") -> AskUserQuestionRequest:
    """A minimal well-formed request."""
    return {"questions": [{"id": question_id, "question": "Proceed?"}]}
