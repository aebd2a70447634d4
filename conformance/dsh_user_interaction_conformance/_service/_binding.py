"""Checks of this binding's own primitives: its abort signal and its errors.

They judge this package, not the subject: the report lists them apart, and
they never count as a subject's passes. Each runs a quarter of the profile's
examples (``_SHARE``): every run judges the same binding, whatever its
subject, so a run spends its time on the subject, and this package's own
tests (``tests/test_abort.py``, ``tests/test_errors.py``) test the binding
at full strength.
"""

from __future__ import annotations

import asyncio
import gc
import pickle
import sys
from collections.abc import Callable
from typing import Final

from hypothesis import strategies as st

from dsh_user_interaction import AbortController, AbortSignal, ErrorCode, UserInteractionError

from .._engine import Draws, Example, Scenario, Setup, check

__all__: list[str] = []

#: The share of the profile's examples each binding check runs: 10 at the default.
_SHARE: Final = 0.25

_PLANS: Final = st.lists(st.sampled_from(["keep", "remove", "raise"]), max_size=12)
_ERRORS: Final = st.tuples(st.sampled_from(ErrorCode), st.text())
#: The codes ERR-CODE-1 lists.
_CODES: Final = frozenset(
    {
        "EMPTY_QUESTIONS", "BAD_INTENT", "NO_PROVIDER", "DUPLICATE_PROVIDER", "ASK_ABORTED",
        "ASK_CANCELLED", "BAD_REQUEST", "BAD_ANSWER", "PROVIDER_DISPOSED",
        "CALLER_NOT_LIVE", "DELEGATED_CALLER", "STORE_FAILED",
    }
)  # fmt: skip


_NESTING: Final = st.tuples(st.integers(1, 3), st.integers(1, 4), st.booleans())
_BAD_SECONDS: Final = st.sampled_from(
    [
        (float("nan"), ValueError),
        (-1, ValueError),
        (True, TypeError),
        ("1", TypeError),
        (None, TypeError),
    ]
)


@check(
    "binding-abort-any",
    "ABT-ANY-1", "ABT-TIMEOUT-1", "ABT-REPORT-1",
    kind="binding",
    share=_SHARE,
)  # fmt: skip
def binding_abort_any(draw: Draws, setup: Setup) -> Scenario:
    """Dependents of any() keep their sources alive; timeouts are checked; errors are reported."""
    depth, width, via_timeout = draw(_NESTING, "nesting, sources, a timeout among them")
    source = draw(st.integers(0, width - 1), "the source that aborts")
    seconds, refusal = draw(_BAD_SECONDS, "a bad timeout")

    async def scenario(example: Example) -> None:
        controllers = [AbortController() for _ in range(width)]
        signals = [c.signal for c in controllers]
        if via_timeout:
            signals.append(AbortSignal.timeout(0.01))
        combined = AbortSignal.any(signals)
        for _ in range(depth - 1):
            combined = AbortSignal.any([combined])
        del signals
        gc.collect(1)  # young generations: where this example's signals are
        example.judge("ABT-ANY-1")
        if via_timeout:
            async with asyncio.timeout(max(setup.bound, 0.5)):
                while not combined.aborted:
                    await asyncio.sleep(0.005)
                    gc.collect(0)  # the youngest generation, where the dropped sources are
            example.verify(
                "ABT-ANY-1",
                isinstance(combined.reason, TimeoutError),
                lambda: f"a dependent of a timeout aborted with {combined.reason!r}",
            )
        else:
            controllers[source].abort(f"source {source}")
            example.verify(
                "ABT-ANY-1",
                combined.aborted and combined.reason == f"source {source}",
                lambda: f"a dependent {depth} deep took {combined.reason!r} from source {source}",
            )
        example.verify(
            "ABT-ANY-1",
            all(c.signal.listener_count == 0 for c in controllers),
            "the sources still hold something for an aborted dependent",
        )
        example.judge("ABT-TIMEOUT-1")
        try:
            AbortSignal.timeout(seconds)  # type: ignore[arg-type] # wrong on purpose
        except refusal as error:
            text = str(error)
            example.verify(
                "ABT-TIMEOUT-1",
                "seconds" in text,
                lambda: f"the refusal {text!r} does not name seconds",
            )
        except Exception as error:  # noqa: BLE001 - judged here
            example.fail("ABT-TIMEOUT-1", f"timeout({seconds!r}) raised {error!r}, not {refusal}")
        else:
            example.fail("ABT-TIMEOUT-1", f"timeout({seconds!r}) was accepted")
        controller = AbortController()
        controller.signal.add_listener(lambda _signal: 1 / 0)
        hook = sys.unraisablehook
        reported: list[object] = []
        sys.unraisablehook = reported.append
        try:
            controller.abort()
        finally:
            sys.unraisablehook = hook
        example.verify(
            "ABT-REPORT-1",
            len(reported) == 1 and type(reported[0]).__name__ == "UnraisableHookArgs",
            lambda: f"the listener's error was reported as {reported!r}",
        )

    return scenario


@check(
    "binding-abort-signal",
    "ABT-ONCE-1", "ABT-ISOLATE-1", "ABT-REMOVE-1",
    kind="binding",
    share=_SHARE,
)  # fmt: skip
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
        if "raise" not in plan:
            # Isolation is judged in every example, whatever the plan drew, so a
            # quick run never leaves it untested: a raising listener between two.
            probe = AbortController()
            ran: list[int] = []
            probe.signal.add_listener(lambda _signal: ran.append(0))
            probe.signal.add_listener(listener(1, raises=True))
            probe.signal.add_listener(lambda _signal: ran.append(2))
            sys.unraisablehook = reported.append
            try:
                probe.abort()
            finally:
                sys.unraisablehook = hook
            example.verify(
                "ABT-ISOLATE-1",
                calls[-1:] == [1] and ran == [0, 2],
                lambda: f"around a raising listener, the others ran as {ran}",
            )

    return scenario


@check("binding-errors", "ERR-CODE-1", "ERR-PICKLE-1", kind="binding", share=_SHARE)
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
