"""Recorded baselines hide only the failures they name: where, and with what.

A coarse baseline (``{"REQ-ID": "reason"}``) hides every failure of the
requirement, so a service baselined for one known fault could fail the same
requirement another way unseen. A recorded one names each way it fails (the
check case and the error code or type), and anything else is a new failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction_conformance import run_suite
from dsh_user_interaction_conformance._baseline import (
    BaselineEntry,
    FailureForm,
    parse_baseline,
    recorded_baseline,
)
from dsh_user_interaction_conformance._engine import FailureRecord

from .gallery.services import AsksBeforeChecking

ROOT = Path(__file__).resolve().parents[1]
#: The checks the two services below fail SVC-PASS-1 in, and nothing slower.
ONLY = ("service-order", "service-pass-through")


class AlsoCopies(AsksBeforeChecking):
    """Asks before checking, as the baselined service does, and also passes a copy on."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        copied: Any = dict(request)
        return await super().ask(copied)


def _run(factory: Any, baseline: dict[str, Any] | None = None, **options: Any) -> Any:
    return run_suite(
        service_factory=factory,
        kinds=["service"],
        only=ONLY,
        seed=3,
        profile="quick",
        bound=0.5,
        shrink=False,
        baseline=baseline,
        **options,
    )


def _status(report: Any, rid: str) -> Any:
    return next(r for r in report.results if r.requirement.id == rid)


@pytest.mark.slow
def test_a_recorded_baseline_reports_a_new_way_of_failing() -> None:
    """Recorded from the known fault, it passes that fault, and fails a second one.

    The coarse form of the same baseline hides the second fault: the case the
    issue measured.
    """
    known = _run(AsksBeforeChecking, every_case=True)
    failures = {r.requirement.id: r.failures for r in known.results if r.failures}
    assert "SVC-PASS-1" in failures
    recorded = parse_baseline(recorded_baseline(failures))
    assert {f.check.partition("[")[0] for f in recorded["SVC-PASS-1"].failures or ()} == {
        "service-order"
    }

    again = _run(AsksBeforeChecking, recorded)
    assert again.ok, [(r.requirement.id, r.message) for r in again.results if r.fails_run]
    assert _status(again, "SVC-PASS-1").status == "expected-failure"

    worse = _run(AlsoCopies, recorded)
    result = _status(worse, "SVC-PASS-1")
    assert not worse.ok
    assert result.status == "failed"
    assert result.message.startswith("a new way of failing (service-pass-through, no error)")
    assert result.failed_in == "service-pass-through"

    coarse = _run(AlsoCopies, {"SVC-PASS-1": "asks before checking"})
    assert _status(coarse, "SVC-PASS-1").status == "expected-failure"


@pytest.mark.slow
def test_a_requirement_failing_several_ways_lists_each_with_its_count() -> None:
    """The report counts the failing examples and lists each check case and cause."""
    report = _run(AsksBeforeChecking, every_case=True)
    result = _status(report, "SVC-PASS-1")
    causes = result.causes()
    assert len(result.failures) == sum(count for _, _, count in causes) >= 2
    assert len({check for check, _, _ in causes}) >= 2
    shown = result.as_dict()
    assert shown["failing_examples"] == len(result.failures)
    assert shown["causes"][0] == {"check": causes[0][0], "cause": causes[0][1], "examples": 1}


def test_a_recorded_entry_matches_by_check_case_and_cause() -> None:
    """A form matches the same check case with the same cause, nothing looser."""
    entry = BaselineEntry("known", (FailureForm("service-order[REQ-ID-1]", "TypeError"),))

    def failure(check: str, message: str) -> FailureRecord:
        return FailureRecord("REQ-ID-1", message, check, [])

    same = failure("service-order[REQ-ID-1]", "raised TypeError('x')")
    other_case = failure("service-order[REQ-ID-2]", "raised TypeError('x')")
    other_cause = failure("service-order[REQ-ID-1]", "gave UserInteractionError('m', 'BAD_INTENT')")
    assert entry.unexpected([same]) == []
    assert entry.unexpected([same, other_case, other_cause]) == [other_case, other_cause]
    assert BaselineEntry("coarse").unexpected([other_case]) == []


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ([], "expected-failures"),
        ({"expected-failures": {"NOPE-1": "x"}}, "'NOPE-1', which is no requirement"),
        ({"expected-failures": {"REQ-ID-1": 3}}, "REQ-ID-1: expected a reason or an object"),
        ({"expected-failures": {"REQ-ID-1": {"reason": ""}}}, "REQ-ID-1.reason: expected"),
        (
            {"expected-failures": {"REQ-ID-1": {"reason": "r", "failures": []}}},
            "REQ-ID-1.failures: expected a non-empty list",
        ),
        (
            {"expected-failures": {"REQ-ID-1": {"reason": "r", "failures": [{"cause": "x"}]}}},
            r"REQ-ID-1.failures\[0\]: expected the keys check and cause",
        ),
        (
            {"expected-failures": {"REQ-ID-1": {"reason": "r", "failures": [{"check": ""}]}}},
            r"REQ-ID-1.failures\[0\].check: expected a check name",
        ),
        (
            {"expected-failures": {"REQ-ID-1": {"reason": "r", "extra": 1}}},
            "REQ-ID-1: unknown key 'extra'",
        ),
    ],
)
def test_a_malformed_baseline_is_refused_naming_the_field(data: object, named: str) -> None:
    """Each mistake in a baseline file is an error that names where it is."""
    with pytest.raises(ValueError, match=named):
        parse_baseline(data)


@pytest.mark.slow
def test_the_command_line_writes_a_baseline_that_a_later_run_passes(tmp_path: Path) -> None:
    """``--write-baseline`` records the run's failures; ``--baseline`` with it exits 0."""
    written = tmp_path / "baseline.json"
    command = [
        sys.executable,
        "-m",
        "dsh_user_interaction_conformance",
        "--service",
        "tests.gallery.services:AsksBeforeChecking",
        "--seed",
        "3",
        "--profile",
        "quick",
        *(f"--only={name}" for name in ONLY),
    ]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *extra], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
        )

    first = run("--write-baseline", str(written))
    assert first.returncode == 1, first.stdout + first.stderr
    assert "failing examples:" in first.stdout
    recorded = json.loads(written.read_text(encoding="utf-8"))
    entry = recorded["expected-failures"]["SVC-PASS-1"]
    assert entry["reason"].startswith("recorded: ")
    assert all(form["check"].startswith("service-order[") for form in entry["failures"])
    second = run("--baseline", str(written))
    assert second.returncode == 0, second.stdout
    assert "expected  service-order" in second.stdout
