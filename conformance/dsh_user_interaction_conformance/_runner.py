"""Run the checks, judge each requirement on its own, and apply a baseline.

A requirement's verdict (:data:`Status`):

* ``failed``: an example broke it (a ``MUST``); ``warning`` for a ``SHOULD``.
* ``passed``: examples judged it, and none broke it.
* ``untested``: a check that covers it ran, but no example judged it, or
  (a loop requirement) the machine gave the event loop too little CPU to
  tell a blocking subject from a busy machine. For a ``MUST`` this fails
  the run: a green run must be earned.
* ``skipped``: the subject's declared capabilities exclude it. It is not
  part of the claim.
* ``expected-failure``: it failed, and the baseline names it.

The binding's own checks (its abort signal, its errors) are judged apart,
in :attr:`Report.binding`, and never count as the subject's passes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import dsh_user_interaction

# isort: off
# The check modules register themselves on import, in the order they run.
from ._service import _binding as _binding_checks
from ._service import _policies as _policy_checks
from ._provider import _checks as _provider_checks
from ._service import _checks as _service_checks

# isort: on
from ._baseline import BaselineEntry
from ._capabilities import Capabilities
from ._engine import (
    CHECKS,
    PROFILES,
    Check,
    CheckOutcome,
    FailureRecord,
    Runtime,
    SetupError,
    preflight,
    run_check,
    under_ci,
)
from ._registry import Requirement, requirements
from ._subject import (
    ServiceFactory,
    SubjectFactory,
    declared_capabilities,
    declared_policies,
    reference_service,
    reference_subject,
)
from ._surfaces import _checks as _surface_checks
from ._web import _checks as _web_checks

__all__ = ["KINDS", "Report", "RequirementResult", "SetupError", "run_suite"]

# The check modules register themselves on import (the surfaces and the web
# profile after the others: their checks run last).
_ = (
    _binding_checks,
    _policy_checks,
    _provider_checks,
    _service_checks,
    _surface_checks,
    _web_checks,
)

SUITE_VERSION = dsh_user_interaction.__version__
Status = Literal["passed", "failed", "warning", "untested", "skipped", "expected-failure"]
#: The kinds of check, in the order they run.
KINDS = ("provider", "service", "binding")


@dataclass
class RequirementResult:
    """The verdict on one requirement."""

    requirement: Requirement
    status: Status
    message: str = ""
    #: The checks that cover it.
    checks: list[str] = field(default_factory=list[str])
    #: Examples that judged it (in the clean runs of its checks).
    examples: int = 0
    #: The example that broke it, one line per drawn value.
    example: list[str] = field(default_factory=list[str])
    #: The check (and case) whose example broke it.
    failed_in: str = ""
    #: Whether the example is the smallest Hypothesis found.
    shrunk: bool = True
    #: Every failing example's record, over its checks and their cases.
    failures: list[FailureRecord] = field(default_factory=list[FailureRecord])

    @property
    def not_shrunk_because(self) -> str:
        """Why the example shown was not shrunk, in words; ``""`` when it was."""
        shown = next((f for f in self.failures if f.example == self.example), None)
        return shown.not_shrunk_because if shown is not None and not self.shrunk else ""

    @property
    def knock_on_of(self) -> list[str]:
        """The requirements whose fault this warning follows from; empty for a fault of its own.

        A SHOULD requirement is a knock-on when every one of its failing
        examples broke it as a consequence of a fault that failed another
        requirement in the same example: a duplicated label, say, is also out
        of option order. It is still a warning; the report names the failure
        to fix first.
        """
        if self.status != "warning" or not self.failures:
            return []
        if not all(failure.knock_on_of for failure in self.failures):
            return []
        return sorted({cause for failure in self.failures for cause in failure.knock_on_of})

    def causes(self) -> list[tuple[str, str, int]]:
        """Each distinct way it failed: check case, cause (code or type), and how many examples."""
        counted: dict[tuple[str, str], int] = {}
        for failure in self.failures:
            key = (failure.check, failure.cause)
            counted[key] = counted.get(key, 0) + 1
        return [(check, cause, count) for (check, cause), count in counted.items()]

    @property
    def fails_run(self) -> bool:
        """Whether this verdict makes the run fail."""
        if self.status == "failed":
            return True
        return self.status == "untested" and self.requirement.mandatory

    def as_dict(self) -> dict[str, Any]:
        """The JSON form used in reports."""
        found: dict[str, Any] = {
            "id": self.requirement.id,
            "level": self.requirement.level,
            "status": self.status,
            "message": self.message,
            "examples": self.examples,
            "checks": self.checks,
        }
        if self.example:
            found["example"] = self.example
            found["failed_in"] = self.failed_in
            found["shrunk"] = self.shrunk
            if not self.shrunk:
                found["not_shrunk_because"] = self.not_shrunk_because
        if self.knock_on_of:
            found["knock_on_of"] = self.knock_on_of
        if self.failures:
            found["failing_examples"] = len(self.failures)
            found["causes"] = [
                {"check": check, "cause": cause, "examples": count}
                for check, cause, count in self.causes()
            ]
        return found


@dataclass
class Report:
    """A whole run: what was claimed, and the verdict per requirement."""

    #: The seed, or ``None`` when the run was derandomised (under ``CI``).
    seed: int | None
    profile: str
    capabilities: Capabilities
    subjects: dict[str, str]
    #: The verdicts on the subject's requirements.
    results: list[RequirementResult]
    #: The verdicts of the binding's own checks.
    binding: list[RequirementResult]
    outcomes: list[CheckOutcome]

    @property
    def ok(self) -> bool:
        """Whether every MUST requirement passed, was skipped by capability, or is baselined."""
        return not any(r.fails_run for r in [*self.results, *self.binding])

    @property
    def derandomized(self) -> bool:
        """Whether Hypothesis derandomised the run (under ``CI``, without a seed)."""
        return self.seed is None

    def as_dict(self) -> dict[str, Any]:
        """The machine-readable report."""
        return {
            "suite_version": SUITE_VERSION,
            "spec_version": dsh_user_interaction.SPEC_VERSION,
            "seed": self.seed,
            "derandomized": self.derandomized,
            "profile": self.profile,
            "capabilities": self.capabilities.as_dict(),
            "ways": self.capabilities.ways_as_dict(),
            "surfaces": self.capabilities.surfaces,
            "subjects": self.subjects,
            "ok": self.ok,
            "summary": status_counts(self.results),
            # Each SHOULD the subject breaks, in the spec's order: warnings never fail a
            # run, so they are listed here, where a porter reading the report sees them.
            "shoulds_broken": [r.requirement.id for r in self.results if r.status == "warning"],
            "results": [result.as_dict() for result in self.results],
            "binding": [result.as_dict() for result in self.binding],
            "checks": [
                {
                    "name": o.check.name,
                    "kind": o.check.kind,
                    "status": o.status,
                    "examples": o.examples,
                    "seconds": round(o.seconds, 3),
                    # Every stall over the stall limit, and how it was judged.
                    "stalls": [stall.as_dict() for stall in o.stalls],
                }
                for o in self.outcomes
            ],
        }


def status_counts(results: list[RequirementResult]) -> dict[str, int]:
    """How many of *results* have each status: a report's summary."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    return counts


def failed_result(
    requirement: Requirement, failures: list[FailureRecord], checks: list[str]
) -> RequirementResult:
    """The verdict on *requirement*, which *failures* broke, shown by the first of them.

    ``failed`` for a MUST, ``warning`` for a SHOULD; *checks* are the checks that cover it.
    """
    first = failures[0]
    status: Status = "failed" if requirement.mandatory else "warning"
    return RequirementResult(
        requirement,
        status,
        first.message,
        checks,
        0,
        first.example,
        first.check,
        first.shrunk,
        failures,
    )


def _fold(
    requirement: Requirement, outcomes: list[CheckOutcome], capabilities: Capabilities
) -> RequirementResult | None:
    rid = requirement.id
    covering = [o for o in outcomes if rid in o.check.requirements]
    failures = [f for o in outcomes for f in o.every_failure if f.requirement == rid]
    names = [o.check.name for o in covering]
    if failures:
        return failed_result(requirement, failures, names)
    if not covering:
        return None
    ran = [
        o
        for o in covering
        if o.status == "ran" and (rid not in o.check.gates or o.check.gates[rid](capabilities))
    ]
    if not ran:
        why = next((o.message for o in covering if o.message), "")
        return RequirementResult(
            requirement, "skipped", why or "the subject's capabilities exclude it", names
        )
    count = sum(o.judged[rid] for o in ran)
    untold = next((o.untold[rid] for o in ran if rid in o.untold), None)
    if untold is not None:
        # Never a green the machine did not earn (the engine's Rule 3b).
        return RequirementResult(requirement, "untested", untold, names, count)
    if count:
        return RequirementResult(requirement, "passed", "", names, count)
    why = next((o.unjudged[rid] for o in ran if rid in o.unjudged), "no example judged it")
    return RequirementResult(requirement, "untested", why, names)


def factory_name(factory: object) -> str:
    """How reports name a factory: ``module:qualname``."""
    module = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", None)
    if not isinstance(name, str):
        name = repr(factory)
    return f"{module}:{name}" if module and module != "builtins" else name


def finite_number(value: float) -> bool:
    """Whether *value* is a finite number (a ``bool`` is not one, nor a string)."""
    try:
        return not isinstance(value, bool) and math.isfinite(value)
    except TypeError:
        return False


def drawn_seed(seed: int | None) -> int | None:
    """The seed a run uses: *seed*, else a random one; ``None`` under ``CI`` (derandomised)."""
    if seed is None and not under_ci():
        return random.randrange(2**32)  # noqa: S311 - a test seed
    return seed


def _validate(profile: str, bound: float, only: Collection[str], kinds: Collection[str]) -> None:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    if not finite_number(bound):
        raise ValueError(f"bound must be a finite number of seconds, got {bound!r}")
    if bound <= 0:
        raise ValueError(f"bound must be positive, got {bound!r}")
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")
    known = {c.name for c in CHECKS}
    for name in only:
        if name not in known:
            raise ValueError(f"unknown check {name!r}; see --list")


def check_baseline(baseline: Mapping[str, object]) -> None:
    """Raise :class:`ValueError` naming the first baseline ID the spec does not define."""
    known = requirements()
    for rid in baseline:
        if rid not in known:
            raise ValueError(f"the baseline names {rid!r}, which is no requirement of the spec")


def run_suite(
    *,
    subject_factory: SubjectFactory | None = None,
    service_factory: ServiceFactory | None = None,
    capabilities: Capabilities | None = None,
    profile: str = "default",
    seed: int | None = None,
    bound: float = 1.0,
    only: Collection[str] = (),
    kinds: Collection[str] = KINDS,
    baseline: Mapping[str, str | BaselineEntry] | None = None,
    shrink: bool = True,
    on_check: Callable[[CheckOutcome], None] | None = None,
    stop_on: Collection[str] = (),
    every_case: bool = False,
) -> Report:
    """Run the suite and return its report.

    With no factories, the subject is the reference provider and the service
    the reference service. *capabilities* says what the subject's UI can do;
    by default the factory's declaration (:func:`with_capabilities`), else
    everything. *only* limits the run to the named checks; *baseline* maps
    requirement IDs to the reason they are expected to fail, or to a
    :class:`BaselineEntry` that also records how (any other failure of the
    requirement is then a new failure, see ``_baseline.py``). *on_check* is
    called as each check finishes. With *stop_on*, the run stops as soon as
    a check fails one of those requirement IDs: that check judges nothing
    more (what it had not judged is reported untested), and the checks after
    it are left out of the report, as with *only* (a gallery judges a broken
    implementation this way, and stops once it is caught). With *every_case*,
    each case of a check looks again for every requirement an earlier case
    failed, so the report lists every way each one fails, as recording a
    baseline needs (requirements with a recorded baseline entry are always
    looked for so).

    Raises :class:`ValueError` for a bad argument and :class:`SetupError`
    when a factory raises or returns the wrong kind of object.
    """
    _validate(profile, bound, only, kinds)
    stopping = frozenset(stop_on)
    if unknown := sorted(stopping - set(requirements())):
        raise ValueError(f"stop_on: unknown requirement {unknown[0]!r}")
    check_baseline(baseline or {})
    entries = {
        rid: BaselineEntry(entry) if isinstance(entry, str) else entry
        for rid, entry in (baseline or {}).items()
    }
    subjects_from: Callable[[], object] = subject_factory or reference_subject
    services_from: Callable[[], object] = service_factory or reference_service
    if capabilities is None:
        capabilities = declared_capabilities(subjects_from) or Capabilities()
        service_declared = declared_capabilities(services_from)
        if service_declared is not None and not service_declared.cancellable:
            # A service in a language without call cancellation (HAR-CANCEL-2).
            capabilities = replace(capabilities, cancellable=False)
    seed = drawn_seed(seed)
    runtime = Runtime(
        subjects_from,
        services_from,
        factory_name(subjects_from),
        factory_name(services_from),
        capabilities,
        PROFILES[profile],
        seed,
        float(bound),
        shrink,
        stopping,
        recorded=frozenset(requirements())
        if every_case
        else frozenset(rid for rid, entry in entries.items() if entry.failures is not None),
        policies=declared_policies(services_from),
    )
    selected: list[Check] = [c for c in CHECKS if c.kind in kinds and (not only or c.name in only)]
    if not selected:
        chosen = ", ".join(only) if only else "every check"
        raise ValueError(
            f"nothing would be checked: {chosen}, of the kinds {', '.join(kinds) or 'none'}; "
            "see --list"
        )
    preflight(runtime, selected)
    outcomes: list[CheckOutcome] = []
    for item in selected:
        outcome = run_check(item, runtime)
        outcomes.append(outcome)
        if on_check is not None:
            on_check(outcome)
        if not stopping.isdisjoint(outcome.failures):
            break
    subject_outcomes = [o for o in outcomes if o.check.kind != "binding"]
    binding_outcomes = [o for o in outcomes if o.check.kind == "binding"]
    results = [
        r
        for q in requirements().values()
        if (r := _fold(q, subject_outcomes, capabilities)) is not None
    ]
    binding = [
        r
        for q in requirements().values()
        if (r := _fold(q, binding_outcomes, capabilities)) is not None
    ]
    for result in results:
        entry = entries.get(result.requirement.id)
        if entry is None:
            continue
        reason = entry.reason
        if result.status in {"failed", "warning"}:
            new = entry.unexpected(result.failures)
            if not new:
                result.status, result.message = "expected-failure", f"baselined: {reason}"
                continue
            # A baselined requirement failing another way is a new failure: show that one.
            first = new[0]
            result.status = "failed" if result.requirement.mandatory else "warning"
            how = f"{first.check}, {first.cause or 'no error'}"
            result.message = (
                f"a new way of failing ({how}), besides the baselined ones ({reason}): "
                f"{first.message}"
            )
            result.example, result.failed_in, result.shrunk = (
                first.example,
                first.check,
                first.shrunk,
            )
        elif result.status == "passed":
            result.status = "failed"
            result.message = (
                f"stale baseline: it passes now, remove it from the baseline ({reason})"
            )
    ran_kinds = {o.check.kind for o in subject_outcomes}
    subjects: dict[str, str] = {}
    if "provider" in ran_kinds:
        names = ", ".join(sorted(runtime.subject_names))
        subjects["provider"] = (
            f"{names} ({runtime.subject_name})" if names else runtime.subject_name
        )
    if "service" in ran_kinds:
        subjects["service"] = runtime.service_name
    return Report(seed, profile, capabilities, subjects, results, binding, outcomes)
