"""How checks are declared, run with Hypothesis, and turned into per-requirement results.

A check is a plain function that takes a :class:`Context`. It draws examples
with :meth:`Context.given`, drives the subject, and raises :class:`Failure`
naming the requirement an example broke. ``SHOULD`` findings are recorded
with :meth:`Context.warn` instead, so they never hide a ``MUST`` failure.
Every wait goes through :meth:`Context.run`, which bounds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.reporting import with_reporter

from ._capabilities import Capabilities
from ._subject import ServiceFactory, SubjectFactory

__all__ = ["CHECKS", "PROFILES", "Check", "Context", "Failure", "Outcome", "check"]

T = TypeVar("T")
Kind = Literal["provider", "service", "binding"]

#: Examples per generated check, by profile.
PROFILES: dict[str, int] = {"quick": 8, "default": 40, "thorough": 250}


class Failure(AssertionError):
    """An example broke *requirement*; *message* says how."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.message = message


@dataclass(frozen=True)
class Check:
    """One check of the suite and the requirements it covers."""

    name: str
    kind: Kind
    requirements: tuple[str, ...]
    run: Callable[[Context], None]
    #: The capabilities it needs; ``None`` means none.
    needs: Callable[[Capabilities], bool] | None = None
    doc: str = ""


#: Every check, in the order they run.
CHECKS: list[Check] = []


def check(
    name: str,
    *requirements: str,
    kind: Kind,
    needs: Callable[[Capabilities], bool] | None = None,
) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register the decorated function as the check *name* covering *requirements*."""

    def register(function: Callable[[Context], None]) -> Callable[[Context], None]:
        doc = (function.__doc__ or "").strip().splitlines()[0] if function.__doc__ else ""
        CHECKS.append(Check(name, kind, requirements, function, needs, doc))
        return function

    return register


@dataclass
class Context:
    """What a check runs against, and how hard it tries."""

    subject_factory: SubjectFactory
    service_factory: ServiceFactory
    capabilities: Capabilities
    examples: int
    seed: int
    #: Seconds a subject may take to settle after an abort or an answer.
    bound: float = 1.0
    #: Whether to shrink failures to a minimal example (slower, clearer).
    shrink: bool = True
    warnings: dict[str, str] = field(default_factory=dict[str, str])

    def given(
        self, *strategies: st.SearchStrategy[Any]
    ) -> Callable[[Callable[..., None]], Callable[[], None]]:
        """Turn the decorated function into a seeded, bounded Hypothesis test."""

        def wrap(function: Callable[..., None]) -> Callable[[], None]:
            test = given(*strategies)(function)
            test = settings(
                max_examples=self.examples,
                deadline=None,
                database=None,
                # The explain phase traces every line; too slow for a shrinking subject.
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
                + ([Phase.shrink] if self.shrink else []),
                suppress_health_check=[
                    HealthCheck.too_slow,
                    HealthCheck.data_too_large,
                    HealthCheck.filter_too_much,
                ],
            )(test)
            if not os.environ.get("CI"):
                # Under CI, Hypothesis's own ci profile derandomizes the run instead.
                test = seed(self.seed)(test)
            return test

        return wrap

    def run(self, coro: Coroutine[Any, Any, T], *, requirement: str, what: str) -> T:
        """Run *coro* in a fresh loop; a hang fails *requirement* instead of the run."""
        limit = max(10 * self.bound, 5.0)

        async def bounded() -> T:
            try:
                async with asyncio.timeout(limit):
                    return await coro
            except TimeoutError:
                raise Failure(requirement, f"{what} did not settle within {limit:g} s") from None

        return asyncio.run(bounded())

    def warn(self, requirement: str, message: str) -> None:
        """Record a ``SHOULD`` finding; the first message per requirement is kept."""
        self.warnings.setdefault(requirement, message)


@dataclass
class Outcome:
    """How one check ended."""

    check: Check
    status: Literal["passed", "failed", "skipped"]
    requirement: str | None = None
    message: str = ""
    example: list[str] = field(default_factory=list[str])
    warnings: dict[str, str] = field(default_factory=dict[str, str])


def _captured(lines: list[str]) -> contextlib.AbstractContextManager[None]:
    reporter: Callable[[object], None] = lambda value: lines.append(str(value))  # noqa: E731
    return with_reporter(reporter)


def _first_failure(error: BaseException) -> Failure | None:
    if isinstance(error, Failure):
        return error
    if isinstance(error, BaseExceptionGroup):
        group: BaseExceptionGroup[BaseException] = error  # pyright: ignore[reportUnknownVariableType]
        for inner in group.exceptions:
            found = _first_failure(inner)
            if found is not None:
                return found
    return None


def run_check(item: Check, context: Context) -> Outcome:
    """Run one check and say how it ended."""
    if item.needs is not None and not item.needs(context.capabilities):
        return Outcome(item, "skipped", message="the subject's capabilities exclude it")
    lines: list[str] = []
    context.warnings = {}
    try:
        with _captured(lines):
            item.run(context)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - a crashing subject is a result, not a crash of the suite
        failure = _first_failure(error)
        if failure is None:
            detail = "".join(traceback.format_exception_only(error)).strip()
            failure = Failure(item.requirements[0], f"the check raised {detail}")
        # Hypothesis attaches the falsifying example to the error as notes.
        notes: list[str] = [*getattr(failure, "__notes__", ()), *getattr(error, "__notes__", ())]
        example = [line for line in [*lines, *dict.fromkeys(notes)] if line.strip()]
        return Outcome(
            item, "failed", failure.requirement, failure.message, example, dict(context.warnings)
        )
    return Outcome(item, "passed", warnings=dict(context.warnings))
