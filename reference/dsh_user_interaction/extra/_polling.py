"""Waiting for what a driver sees, shared by the extras' conformance drivers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

from dsh_user_interaction._types import AskUserQuestionRequest

__all__ = ["Handles", "poll_until"]


async def poll_until(
    check: Callable[[], bool], patience: float, timeout_message: Callable[[], str], *, eager: int
) -> None:
    """Poll until *check()* holds; every poll yields to the loop.

    The first *eager* polls only yield; later ones sleep 2 ms. After
    *patience* seconds, raise :class:`TimeoutError` with *timeout_message()*.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    polls = 0
    while not check():
        if loop.time() > deadline:
            raise TimeoutError(timeout_message())
        polls += 1
        await asyncio.sleep(0 if polls < eager else 0.002)


H = TypeVar("H")


class Handles(Generic[H]):
    """What a provider calls each request a driver acted on: its ask number, or its ask id.

    A provider names a request only while it is pending (``number_of``,
    ``ask_id_of``), and asks that look alike are told apart only by that
    name. The driver remembers the name it found, so that it can still say
    what became of a request once its ask has settled.
    """

    def __init__(self, lookup: Callable[[AskUserQuestionRequest], H | None]) -> None:
        self._lookup: Callable[[AskUserQuestionRequest], H | None] = lookup
        self._seen: list[tuple[AskUserQuestionRequest, H]] = []

    def of(self, request: AskUserQuestionRequest) -> H | None:
        """The name *request* was found under, else what the provider calls it now."""
        for seen, handle in reversed(self._seen):
            if seen is request:
                return handle
        return self._lookup(request)

    async def wait(
        self,
        request: AskUserQuestionRequest,
        patience: float,
        timeout_message: Callable[[], str],
        *,
        eager: int,
    ) -> H:
        """Poll until the provider names *request* (see :func:`poll_until`); remember the name."""
        found: list[H] = []

        def named() -> bool:
            handle = self._lookup(request)
            if handle is not None:
                found.append(handle)
            return handle is not None

        await poll_until(named, patience, timeout_message, eager=eager)
        self._seen.append((request, found[-1]))
        return found[-1]
