"""Waiting for what a driver sees, shared by the extras' conformance drivers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["poll_until"]


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
