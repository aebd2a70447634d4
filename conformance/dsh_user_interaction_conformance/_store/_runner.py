"""Run the store suite, judge each requirement on its own, and report.

The state machine of :mod:`._machine` runs as one Hypothesis test
(``run_state_machine_as_test``). As in the provider and service suite, a
requirement that failed is *masked* and the machine runs again, so every
other requirement is still judged; the run that finds nothing new is the
clean run, whose counts say how many examples judged each requirement. A
requirement no example of the clean run judged is ``untested``, which
fails the run: a green run must be earned. Then the durable path's
scenarios (:mod:`._scenarios`) run the reference's provider, relays
and expiry on the same store, each on a few drawn requests.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, Protocol, cast

from hypothesis import settings, stateful
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.reporting import with_reporter

import dsh_user_interaction

from .._engine import (
    Failure,
    FailureRecord,
    SetupAbort,
    SetupError,
    replayable,
    seeded,
    suite_settings,
)
from .._registry import Requirement, requirements
from .._runner import (
    RequirementResult,
    drawn_seed,
    factory_name,
    failed_result,
    finite_number,
    status_counts,
)
from ._durable import DURABLE_CHECKS
from ._example import Attempt, StopExample, make_subject
from ._loop import Late, StoreLoop, Stuck
from ._machine import STORE_CHECK, StoreMachine, store_requirements
from ._scenarios import run_scenario
from ._subject import StoreFactory, sqlite_store_subject

__all__ = [
    "STORE_CHECKS",
    "STORE_PROFILES",
    "StoreProfile",
    "StoreReport",
    "StoreRun",
    "run_store_suite",
    "store_suite_requirements",
]


class StoreProfile(NamedTuple):
    """How hard a profile tries."""

    #: Examples of the state machine.
    examples: int
    #: Steps each example takes at most.
    steps: int
    #: Examples of each durable-path scenario.
    scenarios: int


#: The profiles' sizes.
STORE_PROFILES: Final[dict[str, StoreProfile]] = {
    "quick": StoreProfile(10, 25, 1),
    "default": StoreProfile(50, 40, 3),
    "thorough": StoreProfile(300, 60, 20),
}

#: The store suite's checks, in the order they run.
STORE_CHECKS: Final = (STORE_CHECK, *(check.name for check in DURABLE_CHECKS))


class _RunsMachines(Protocol):
    def __call__(
        self, state_machine_factory: Callable[[], StoreMachine], *, settings: settings
    ) -> None: ...


#: Hypothesis's runner of a state machine, typed as its documentation says.
# Read from the module, so that the cast holds whether or not the installed Hypothesis
# annotates the machine factory (6.155 does not; later releases do).
_run_as_test = cast("_RunsMachines", vars(stateful)["run_state_machine_as_test"])

#: The machine runs again at most this many times to judge what did not fail yet.
_MAX_RUNS: Final = 10
#: After this many runs stopped by a hang, the suite stops; the rest is untested.
_MAX_HANGS: Final = 2


@dataclass
class StoreRun:
    """One Hypothesis run of a check (the state machine, or a scenario), for the report."""

    #: The check it ran.
    check: str
    #: The requirements that had failed before it, and were not looked for.
    masked: list[str]
    examples: int
    steps: int
    seconds: float
    #: What it found broken.
    failed: list[str] = field(default_factory=list[str])
    #: The requirement whose call did not return in time, when one did not.
    hung: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form used in reports."""
        return {
            "check": self.check,
            "masked": self.masked,
            "examples": self.examples,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "failed": self.failed,
            "hung": self.hung,
        }


@dataclass
class StoreReport:
    """A run of the store suite: the store, how it was run, and the verdict per requirement.

    Replay a run with the same *seed* and *profile* (a report with no seed
    was derandomised, under ``CI``: run it under ``CI`` again).
    """

    #: The seed, or ``None`` when the run was derandomised (under ``CI``).
    seed: int | None
    profile: str
    #: Seconds each call on a store may take, and a watcher to show a change.
    bound: float
    #: The store under test, named by its subject and its factory.
    store: str
    #: The verdict on each requirement, in the spec's order.
    results: list[RequirementResult]
    #: Each run of the state machine (one, when nothing failed).
    runs: list[StoreRun]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every MUST requirement passed."""
        return not any(result.fails_run for result in self.results)

    @property
    def derandomized(self) -> bool:
        """Whether Hypothesis derandomised the run (under ``CI``, without a seed)."""
        return self.seed is None

    def as_dict(self) -> dict[str, Any]:
        """The machine-readable report."""
        return {
            "suite": "store",
            "suite_version": dsh_user_interaction.__version__,
            "spec_version": dsh_user_interaction.SPEC_VERSION,
            "seed": self.seed,
            "derandomized": self.derandomized,
            "profile": self.profile,
            "bound": self.bound,
            "store": self.store,
            "ok": self.ok,
            "summary": status_counts(self.results),
            "results": [result.as_dict() for result in self.results],
            "runs": [run.as_dict() for run in self.runs],
            "seconds": round(self.seconds, 3),
        }


def _shrink_budget(bound: float) -> float:
    """Seconds spent shrinking one run's failure before the smallest so far is kept."""
    return max(5.0, 2 * bound)


def _run_machine(
    attempt: Attempt, examples: int, steps: int, *, run_seed: int | None, shrink: bool
) -> str:
    """Run the state machine once; return why its failure was not shrunk (``""``: it was)."""
    why_not: list[str] = [] if shrink else ["shrinking is off for this run"]
    budget = _shrink_budget(attempt.bound)

    def machine() -> StoreMachine:
        if attempt.first_failure is not None and time.monotonic() - attempt.first_failure > budget:
            why_not.append(
                f"shrinking stopped after its budget of {budget:g} s; this is the smallest "
                "example found by then"
            )
            raise StopExample
        return StoreMachine(attempt)

    test: Callable[[], StoreMachine] = seeded(machine, run_seed)
    run_settings = settings(
        suite_settings(examples, run_seed, shrink=shrink), stateful_step_count=steps
    )
    try:
        with with_reporter(lambda _value: None), replayable():
            _run_as_test(test, settings=run_settings)
    except SetupAbort as abort:
        raise abort.error from None
    except StopExample:
        pass
    except Flaky:
        why_not.append("the failure did not repeat when its example ran again (a race)")
    except (Failure, HypothesisException):
        pass  # the verdicts are in the attempt already
    except BaseExceptionGroup as group:
        aborted = group.subgroup(SetupAbort)
        if aborted is not None:
            first = aborted.exceptions[0]
            if isinstance(first, SetupAbort):
                raise first.error from None
    if attempt.hung is not None:
        why_not.insert(
            0,
            "a call did not return within the bound, and every further try would wait it out again",
        )
    return why_not[0] if why_not else ""


def _preflight(factory: Callable[[], object], name: str, bound: float) -> None:
    """Make a subject, open and close one store on it, and clean it away; or a SetupError."""
    loop = StoreLoop()

    async def probe() -> None:
        subject = await make_subject(factory, name)
        try:
            store: object = await subject.open()
            close = getattr(store, "close", None)
            if callable(close):
                await cast("Callable[[], Awaitable[object]]", close)()
        finally:
            await subject.cleanup()

    try:
        loop.call(probe, 6 * bound)
    except SetupError:
        raise
    except (Late, Stuck) as error:
        raise SetupError(
            f"the store factory {name}: making a subject, opening a store on it and cleaning "
            f"it away {error}",
            "store",
        ) from None
    except Exception as error:  # noqa: BLE001 - any error of the subject is a set-up error
        raise SetupError(
            f"the store factory {name}: making a subject, opening a store on it and cleaning "
            f"it away raised {error!r}",
            "store",
        ) from None
    finally:
        loop.close(bound)


def _validate(profile: str, bound: float, stop_on: Collection[str], only: Collection[str]) -> None:
    if profile not in STORE_PROFILES:
        raise ValueError(f"profile must be one of {', '.join(STORE_PROFILES)}, got {profile!r}")
    if not finite_number(bound) or bound <= 0:
        raise ValueError(f"bound must be a finite positive number of seconds, got {bound!r}")
    unknown = sorted(set(stop_on) - set(store_suite_requirements()))
    if unknown:
        raise ValueError(f"stop_on: {unknown[0]!r} is no requirement of the store suite")
    unknown = sorted(set(only) - set(STORE_CHECKS))
    if unknown:
        raise ValueError(f"unknown check {unknown[0]!r}; the store suite's are {STORE_CHECKS}")


def store_suite_requirements() -> dict[str, Requirement]:
    """Every requirement the store suite judges, in the spec's order."""
    covered = {*store_requirements(), *(r for c in DURABLE_CHECKS for r in c.requirements)}
    return {rid: q for rid, q in requirements().items() if rid in covered}


@dataclass
class _Found:
    """What the checks found, requirement by requirement."""

    failures: dict[str, list[FailureRecord]] = field(default_factory=dict[str, list[FailureRecord]])
    judged: dict[str, int] = field(default_factory=dict[str, int])
    #: Why a requirement no clean run judged was not judged, by requirement.
    unjudged: dict[str, str] = field(default_factory=dict[str, str])
    runs: list[StoreRun] = field(default_factory=list[StoreRun])
    subject_name: str = ""

    def failed(self, record: FailureRecord) -> None:
        self.failures.setdefault(record.requirement, []).append(record)


def _machine(
    found: _Found,
    factory: Callable[[], object],
    name: str,
    *,
    profile: StoreProfile,
    run_seed: int | None,
    bound: float,
    shrink: bool,
    stopping: frozenset[str],
) -> None:
    """Run the state machine until a run finds nothing new (the engine's Rule 2)."""
    masked: set[str] = set()
    hangs = 0
    why = ""
    for _ in range(_MAX_RUNS):
        attempt = Attempt(factory, name, bound, frozenset(masked))
        began = time.monotonic()
        why_not = _run_machine(
            attempt, profile.examples, profile.steps, run_seed=run_seed, shrink=shrink
        )
        found.subject_name = found.subject_name or attempt.subject_name
        found.runs.append(
            StoreRun(
                STORE_CHECK,
                sorted(masked),
                attempt.examples,
                attempt.steps,
                time.monotonic() - began,
                sorted(attempt.failures),
                attempt.hung,
            )
        )
        for rid, (message, lines) in attempt.failures.items():
            found.failed(FailureRecord(rid, message, STORE_CHECK, lines, not why_not, why_not))
        if attempt.hung is not None:
            hangs += 1
            why = f"not judged: a call did not return in time ({attempt.hung})"
        if not attempt.failures:
            if attempt.hung is None:
                found.judged.update(attempt.judged)
                return
            break
        masked.update(attempt.failures)
        if not stopping.isdisjoint(masked):
            why = "not judged: the run stopped once it failed what it looked for"
            break
        if hangs >= _MAX_HANGS or masked.issuperset(store_requirements()):
            break
    for rid in store_requirements():
        found.unjudged[rid] = why or "not judged: the store failed too many requirements"


def run_store_suite(
    factory: StoreFactory | None = None,
    *,
    seed: int | None = None,
    profile: str = "default",
    bound: float = 5.0,
    shrink: bool = True,
    stop_on: Collection[str] = (),
    only: Collection[str] = (),
) -> StoreReport:
    """Run the store suite against the stores *factory*'s subjects open; return the report.

    *factory* makes a :class:`StoreSubject` with fresh, empty data each time
    it is called; by default the embedded SQLite store
    (:func:`sqlite_store_subject`). First a state machine of agents and UIs
    judges the store's own rules (``store-machine``), then the durable
    path's scenarios run the reference's provider, relays and expiry on it
    (``durable-*``); *only* names the checks to run. *bound* is the
    seconds any call on a store may take, and a watcher to show a change
    made through another store; past it, the call fails its requirement.
    With *stop_on*, the run stops as soon as one of those requirement IDs
    fails (a gallery judges a broken store this way). Without a *seed*, one
    is drawn, except under ``CI``, where Hypothesis derandomises the run.

    Raises :class:`ValueError` for a bad argument and :class:`SetupError`
    when the factory raises, returns something that is not a subject, or its
    subject cannot open a store.
    """
    _validate(profile, bound, stop_on, only)
    made_by: Callable[[], object] = factory or sqlite_store_subject
    name = factory_name(made_by)
    stopping = frozenset(stop_on)
    seed = drawn_seed(seed)
    sizes = STORE_PROFILES[profile]
    started = time.monotonic()
    _preflight(made_by, name, float(bound))
    found = _Found()
    checks: dict[str, tuple[str, ...]] = {}
    if not only or STORE_CHECK in only:
        checks[STORE_CHECK] = tuple(store_requirements())
        _machine(
            found,
            made_by,
            name,
            profile=sizes,
            run_seed=seed,
            bound=float(bound),
            shrink=shrink,
            stopping=stopping,
        )
    for check in DURABLE_CHECKS:
        if only and check.name not in only:
            continue
        checks[check.name] = check.requirements
        if not stopping.isdisjoint(found.failures):
            for rid in check.requirements:
                found.unjudged.setdefault(
                    rid, "not judged: the run stopped once it failed what it looked for"
                )
            continue
        outcome = run_scenario(
            check, made_by, name, sizes.scenarios, run_seed=seed, bound=float(bound)
        )
        found.runs.append(
            StoreRun(
                check.name,
                [],
                outcome.examples,
                0,
                outcome.seconds,
                sorted(outcome.failures),
                check.requirements[0] if outcome.hung else None,
            )
        )
        for record in outcome.failures.values():
            found.failed(record)
        for rid, count in outcome.judged.items():
            found.judged[rid] = found.judged.get(rid, 0) + count
    results = [
        _verdict(requirement, found, [c for c, covered in checks.items() if rid in covered])
        for rid, requirement in store_suite_requirements().items()
        if any(rid in covered for covered in checks.values())
    ]
    subject_name = found.subject_name
    store = f"{subject_name} ({name})" if subject_name else name
    return StoreReport(
        seed, profile, float(bound), store, results, found.runs, time.monotonic() - started
    )


def _verdict(requirement: Requirement, found: _Found, covering: list[str]) -> RequirementResult:
    rid = requirement.id
    failures = found.failures.get(rid)
    if failures:
        return failed_result(requirement, failures, covering)
    if found.judged.get(rid):
        return RequirementResult(requirement, "passed", "", covering, found.judged[rid])
    why = found.unjudged.get(rid, "no example judged it")
    return RequirementResult(requirement, "untested", why, covering)
