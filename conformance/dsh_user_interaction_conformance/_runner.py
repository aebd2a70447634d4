"""Run the checks, fold them into one result per requirement, and apply a baseline."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import dsh_user_interaction

from . import _binding_checks, _provider_checks, _service_checks
from ._capabilities import Capabilities
from ._engine import CHECKS, PROFILES, Check, Context, Outcome, run_check
from ._registry import Requirement, requirements
from ._subject import ServiceFactory, SubjectFactory, reference_service, reference_subject

__all__ = ["Report", "RequirementResult", "run_suite"]

# The check modules register themselves on import.
_ = (_binding_checks, _provider_checks, _service_checks)

SUITE_VERSION = dsh_user_interaction.__version__
Status = Literal["passed", "failed", "warning", "skipped", "expected-failure"]


@dataclass
class RequirementResult:
    """The verdict on one requirement."""

    requirement: Requirement
    status: Status
    message: str = ""
    checks: list[str] = field(default_factory=list[str])
    example: list[str] = field(default_factory=list[str])
    reproducer: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form used in reports."""
        return {
            "id": self.requirement.id,
            "level": self.requirement.level,
            "status": self.status,
            "message": self.message,
            "checks": self.checks,
        }


@dataclass
class Report:
    """A whole run: what was claimed, and the verdict per requirement."""

    seed: int
    profile: str
    capabilities: Capabilities
    subjects: dict[str, str]
    results: list[RequirementResult]
    outcomes: list[Outcome]

    @property
    def ok(self) -> bool:
        """Whether every MUST requirement passed or is baselined."""
        return not any(r.status == "failed" for r in self.results)

    def as_dict(self) -> dict[str, Any]:
        """The machine-readable report."""
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.status] = counts.get(result.status, 0) + 1
        return {
            "suite_version": SUITE_VERSION,
            "spec_version": dsh_user_interaction.SPEC_VERSION,
            "seed": self.seed,
            "profile": self.profile,
            "capabilities": self.capabilities.as_dict(),
            "subjects": self.subjects,
            "summary": counts,
            "results": [result.as_dict() for result in self.results],
        }


def _fold(requirement: Requirement, outcomes: list[Outcome]) -> RequirementResult:
    covering = [o for o in outcomes if requirement.id in o.check.requirements]
    names = [o.check.name for o in covering]
    failed = [o for o in covering if o.status == "failed" and o.requirement == requirement.id]
    if failed:
        first = failed[0]
        status: Status = "failed" if requirement.mandatory else "warning"
        return RequirementResult(requirement, status, first.message, names, first.example)
    for outcome in covering:
        if requirement.id in outcome.warnings:
            return RequirementResult(
                requirement, "warning", outcome.warnings[requirement.id], names
            )
    ran = [o for o in covering if o.status != "skipped"]
    if not ran:
        why = covering[0].message if covering else "no check covers it"
        return RequirementResult(requirement, "skipped", why, names)
    if all(o.status == "failed" for o in ran):
        return RequirementResult(
            requirement, "skipped", "not reached: its checks failed first", names
        )
    return RequirementResult(requirement, "passed", "", names)


def run_suite(
    *,
    subject_factory: SubjectFactory | None = None,
    service_factory: ServiceFactory | None = None,
    profile: str = "default",
    seed: int | None = None,
    bound: float = 1.0,
    only: Collection[str] = (),
    kinds: Collection[str] = ("provider", "service", "binding"),
    baseline: Mapping[str, str] | None = None,
    shrink: bool = True,
) -> Report:
    """Run the suite and return its report.

    With no factories, the subject is the reference provider and the service the
    reference service. *only* limits the run to the named checks; *baseline*
    maps requirement IDs to the reason they are expected to fail.
    """
    subject_factory = subject_factory or reference_subject
    service_factory = service_factory or reference_service
    seed = seed if seed is not None else random.randrange(2**32)  # noqa: S311 - a test seed
    capabilities = subject_factory().driver.capabilities
    context = Context(
        subject_factory, service_factory, capabilities, PROFILES[profile], seed, bound, shrink
    )
    selected: list[Check] = [c for c in CHECKS if c.kind in kinds and (not only or c.name in only)]
    outcomes = [run_check(item, context) for item in selected]
    ran_ids = {rid for item in selected for rid in item.requirements}
    results = [_fold(r, outcomes) for r in requirements().values() if r.id in ran_ids]
    for result in results:
        reason = (baseline or {}).get(result.requirement.id)
        if reason is None:
            continue
        if result.status == "failed":
            result.status, result.message = "expected-failure", f"baselined: {reason}"
        elif result.status == "passed":
            result.status = "failed"
            result.message = (
                f"stale baseline: it passes now, remove it from the baseline ({reason})"
            )
    subjects = {
        "provider": getattr(subject_factory, "__qualname__", repr(subject_factory)),
        "service": getattr(service_factory, "__qualname__", repr(service_factory)),
    }
    return Report(seed, profile, capabilities, subjects, results, outcomes)
