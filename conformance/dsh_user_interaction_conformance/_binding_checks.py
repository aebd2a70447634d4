"""Checks of the binding's own primitives: the abort signal and the errors."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable

from hypothesis import strategies as st

from dsh_user_interaction import AbortController, AbortSignal, ErrorCode, UserInteractionError

from ._engine import Context, Failure, check

__all__: list[str] = []


@check("binding-abort-signal", "ABT-ONCE-1", "ABT-ISOLATE-1", "ABT-REMOVE-1", kind="binding")
def binding_abort_signal(context: Context) -> None:
    """Listeners run once, in order, in isolation; removal leaves nothing behind."""

    @context.given(st.lists(st.sampled_from(["keep", "remove", "raise"]), max_size=12))
    def example(plan: list[str]) -> None:
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
        if controller.signal.listener_count != live:
            raise Failure(
                "ABT-REMOVE-1", f"{controller.signal.listener_count} listeners held, {live} live"
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
        if calls != expected:
            requirement = "ABT-ISOLATE-1" if "raise" in plan else "ABT-ONCE-1"
            raise Failure(requirement, f"listeners ran as {calls}, expected {expected}")
        if controller.signal.listener_count:
            raise Failure("ABT-REMOVE-1", "listeners are still held after the abort")

    example()


@check("binding-errors", "ERR-CODE-1", "ERR-PICKLE-1", kind="binding")
def binding_errors(context: Context) -> None:
    """Errors carry the spec's codes and survive pickling with their answer."""
    expected = {
        "EMPTY_QUESTIONS", "BAD_INTENT", "NO_PROVIDER", "DUPLICATE_PROVIDER", "ASK_ABORTED",
        "ASK_CANCELLED", "BAD_REQUEST", "BAD_ANSWER", "PROVIDER_DISPOSED",
    }  # fmt: skip
    if {str(code) for code in ErrorCode} != expected:
        raise Failure("ERR-CODE-1", f"codes are {sorted(map(str, ErrorCode))}")

    @context.given(st.sampled_from(ErrorCode), st.text())
    def example(code: ErrorCode, message: str) -> None:
        error = UserInteractionError(message, code, answer={"answers": []})
        copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - bytes we just made
        if (str(copy), copy.code, copy.answer) != (message, code, {"answers": []}):
            raise Failure("ERR-PICKLE-1", f"{error!r} came back as {copy!r}")

    example()
