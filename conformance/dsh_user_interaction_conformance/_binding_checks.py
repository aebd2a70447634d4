"""Checks of this binding's own primitives: its abort signal and its errors.

They judge this package, not the subject: the report lists them apart, and
they never count as a subject's passes.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable
from typing import Final

from hypothesis import strategies as st

from dsh_user_interaction import AbortController, AbortSignal, ErrorCode, UserInteractionError

from ._engine import Draws, Example, Scenario, Setup, check

__all__: list[str] = []

_PLANS: Final = st.lists(st.sampled_from(["keep", "remove", "raise"]), max_size=12)
_ERRORS: Final = st.tuples(st.sampled_from(ErrorCode), st.text())
#: The codes ERR-CODE-1 lists.
_CODES: Final = frozenset(
    {
        "EMPTY_QUESTIONS", "BAD_INTENT", "NO_PROVIDER", "DUPLICATE_PROVIDER", "ASK_ABORTED",
        "ASK_CANCELLED", "BAD_REQUEST", "BAD_ANSWER", "PROVIDER_DISPOSED",
    }
)  # fmt: skip


@check("binding-abort-signal", "ABT-ONCE-1", "ABT-ISOLATE-1", "ABT-REMOVE-1", kind="binding")
def binding_abort_signal(draw: Draws, setup: Setup) -> Scenario:
    """Listeners run once, in order, in isolation; removal leaves nothing behind."""
    plan = draw(_PLANS, "listeners")

    async def scenario(example: Example) -> None:
        controller = AbortController()
        calls: list[int] = []

        def listener(number: int, raises: bool) -> Callable[[AbortSignal], None]:
            def call(_signal: AbortSignal) -> None:
                calls.append(number)
                if raises:
                    raise RuntimeError(number)

            return call

        removers = [
            controller.signal.add_listener(listener(i, kind == "raise"))
            for i, kind in enumerate(plan)
        ]
        for remover, kind in zip(removers, plan, strict=True):
            if kind == "remove":
                remover()
        live = sum(kind != "remove" for kind in plan)
        example.verify(
            "ABT-REMOVE-1",
            controller.signal.listener_count == live,
            lambda: f"{controller.signal.listener_count} listeners held, {live} live",
        )
        hook = sys.unraisablehook
        reported: list[object] = []
        sys.unraisablehook = reported.append
        try:
            controller.abort()
            controller.abort()
        finally:
            sys.unraisablehook = hook
        expected = [i for i, kind in enumerate(plan) if kind != "remove"]
        requirement = "ABT-ISOLATE-1" if "raise" in plan else "ABT-ONCE-1"
        example.judge("ABT-ONCE-1")
        example.verify(
            requirement, calls == expected, lambda: f"listeners ran as {calls}, expected {expected}"
        )
        example.verify(
            "ABT-REMOVE-1",
            not controller.signal.listener_count,
            "listeners are still held after the abort",
        )

    return scenario


@check("binding-errors", "ERR-CODE-1", "ERR-PICKLE-1", kind="binding")
def binding_errors(draw: Draws, setup: Setup) -> Scenario:
    """The binding's errors carry the spec's codes and survive pickling with their answer."""
    code, message = draw(_ERRORS, "code and message")

    async def scenario(example: Example) -> None:
        example.verify(
            "ERR-CODE-1",
            frozenset(str(c) for c in ErrorCode) == _CODES,
            lambda: f"codes are {sorted(map(str, ErrorCode))}",
        )
        error = UserInteractionError(message, code, answer={"answers": []})
        copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - bytes we just made
        example.verify(
            "ERR-PICKLE-1",
            (str(copy), copy.code, copy.answer) == (message, code, {"answers": []}),
            lambda: f"{error!r} came back as {copy!r}",
        )

    return scenario
