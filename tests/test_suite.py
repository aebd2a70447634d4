"""The suite's registry, command line, report, baseline and pytest plugin."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dsh_user_interaction_conformance import CHECKS, requirements
from dsh_user_interaction_conformance.__main__ import main

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parent.parent
#: A quick, seeded run of one check against a provider that echoes extra keys.
BROKEN_RUN = [
    "--provider", "tests.gallery.providers:FACTORY_EXTRA_KEYS",
    "--profile", "quick", "--seed", "9", "--only", "provider-answers",
]  # fmt: skip


def test_every_requirement_has_a_check_and_every_cited_id_exists() -> None:
    """The suite and the spec stay in step in both directions."""
    known = set(requirements())
    cited = {rid for check in CHECKS for rid in check.requirements}
    assert cited <= known, cited - known
    assert known <= cited, known - cited


def test_the_registry_reads_the_spec() -> None:
    """Levels and sentences come from the spec text."""
    spec = (ROOT / "spec" / "user-interaction.md").read_text(encoding="utf-8")
    assert len(requirements()) == len(re.findall(r"^- \*\*[A-Z-]+-\d+\*\* \(", spec, re.M))
    assert requirements()["PRV-MUTATE-1"].level == "MUST NOT"
    assert requirements()["ANS-MULTI-2"].level == "SHOULD"


def test_cli_runs_the_reference_and_writes_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0 on the reference, with a JSON report of every requirement."""
    out = tmp_path / "report.json"
    assert main(["--profile", "quick", "--seed", "5", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["seed"] == 5
    assert report["profile"] == "quick"
    assert report["spec_version"] == "1.0.0"
    assert report["capabilities"]["can_skip"] is True
    assert {r["status"] for r in report["results"]} == {"passed"}
    assert {r["id"] for r in report["results"]} == set(requirements())
    assert "61 requirements" in capsys.readouterr().out or len(requirements()) != 61


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--profile", "huge"], "invalid choice"),
        (["--provider", "nocolon"], "MODULE:ATTR"),
        (["--provider", "no_such_module_xyz:f"], "cannot import"),
        (["--service", "json:nothing_here"], "no attribute"),
        (["--only", "no-such-check"], "unknown check"),
        (["--bound", "0"], "must be positive"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Usage errors exit 2 with a one-line message naming the mistake."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert fragment in err


def test_failures_exit_1_and_print_a_reproducer(capsys: pytest.CaptureFixture[str]) -> None:
    """A broken subject exits 1; the output names the requirement, the spec and a reproducer."""
    code = main(BROKEN_RUN)
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED: ANS-KEYS-1 (MUST)" in out
    assert "spec: The answer has no key but" in out
    assert "minimal example:" in out
    assert "--seed 9 --only provider-answers" in out


def test_baseline_turns_failures_into_expected_and_flags_stale_entries(tmp_path: Path) -> None:
    """Baselined failures pass the run; a baselined requirement that passes fails it."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(
        json.dumps({"expected-failures": {"ANS-KEYS-1": "echoes question text until v2"}})
    )
    assert main([*BROKEN_RUN, "--baseline", str(baseline)]) == 0
    baseline.write_text(json.dumps({"expected-failures": {"PRV-CANCEL-1": "was broken"}}))
    reference = ["--profile", "quick", "--seed", "9", "--only", "provider-cancel"]
    assert main([*reference, "--baseline", str(baseline)]) == 1
    baseline.write_text("[]")
    assert main([*BROKEN_RUN, "--baseline", str(baseline)]) == 2


def test_pytest_plugin_runs_checks_from_a_fixture(pytester: pytest.Pytester) -> None:
    """An implementer defines the subject fixture and one test; every provider check runs."""
    pytester.makeconftest(
        """
        import pytest
        from dsh_user_interaction_conformance import reference_subject

        @pytest.fixture
        def dsh_user_interaction_subject():
            return reference_subject
        """
    )
    (pytester.path / "test_conformance.py").write_text(
        "def test_conformance(dsh_conformance_check):\n    dsh_conformance_check()\n"
    )
    result = pytester.runpytest_subprocess("--dsh-profile", "quick")
    provider_checks = sum(check.kind == "provider" for check in CHECKS)
    result.assert_outcomes(
        passed=provider_checks + sum(c.kind == "binding" for c in CHECKS),
        skipped=sum(c.kind == "service" for c in CHECKS),
    )
