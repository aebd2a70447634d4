"""Small shared helpers for the tests."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from dsh_user_interaction import AskUserQuestionRequest

T = TypeVar("T")

#: No test waits longer than this for anything; a hang fails instead.
BOUND = 5.0


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run *coro* in a fresh loop, failing after ``BOUND`` seconds."""

    async def bounded() -> T:
        async with asyncio.timeout(BOUND):
            return await coro

    return asyncio.run(bounded())


def one_question(question_id: str = "q") -> AskUserQuestionRequest:
    """A minimal well-formed request."""
    return {"questions": [{"id": question_id, "question": "Proceed?"}]}
