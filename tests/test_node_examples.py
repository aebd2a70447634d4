"""The Node.js examples: an independent JavaScript seam judged by the suite through the harness.

They need Node.js (``.ci/run`` checks for it). The good examples pass the
default profile; each broken variant fails, naming its requirement, so the
harness path is proven able to fail too. They are of the slow tier: they
prove the suite and the JavaScript code, not something that differs between
Pythons.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from .helpers import GALLERY_SEEDS, claimed_only, need, policy_requirements
from .test_gallery import covering

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "node"


def _node() -> str:
    return need("node")  # Node.js 20 or newer; skipped without it, failed in CI


def _suite(role: str, script: str, *extra: str, report: Path) -> tuple[int, dict[str, object]]:
    """Run the suite on *script* in *role*; the exit status and the JSON report."""
    command = f"{_node()} {EXAMPLES / script}"
    done = subprocess.run(
        [
            sys.executable, "-m", "dsh_user_interaction_conformance",
            f"--{role}-cmd", command, "--json", str(report), *extra,
        ],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
        env={**os.environ, "CI": "true"},
    )  # fmt: skip
    assert done.returncode in {0, 1}, done.stdout + done.stderr
    found: dict[str, object] = json.loads(report.read_text(encoding="utf-8"))
    return done.returncode, found


def _results(report: dict[str, object]) -> list[dict[str, object]]:
    results = report["results"]
    assert isinstance(results, list)
    return cast("list[dict[str, object]]", results)


def _failed(report: dict[str, object]) -> set[str]:
    return {str(r["id"]) for r in _results(report) if r["status"] == "failed"}


def test_the_node_unit_tests_pass() -> None:
    """The adapter's codec, signals and framing, and the JavaScript seam, pass their own tests."""
    done = subprocess.run(
        [_node(), "--test", str(EXAMPLES / "test")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout


@pytest.mark.parametrize(
    ("role", "script"), [("provider", "provider.mjs"), ("service", "service.mjs")]
)
def test_the_node_examples_pass_the_default_profile(role: str, script: str, tmp_path: Path) -> None:
    """The JavaScript provider (with its driver) and service pass every requirement they claim."""
    status, report = _suite(role, script, report=tmp_path / "report.json")
    assert status == 0, _failed(report)
    assert report["ok"] is True
    results = _results(report)
    assert len(results) >= 20
    # A service through the harness declares no policy (spec section 8): skipped.
    policies = policy_requirements()
    judged = [r for r in results if r["id"] not in policies and not claimed_only(str(r["id"]))]
    assert {r["status"] for r in judged} == {"passed"}
    assert {r["status"] for r in results if r["id"] in policies} <= {"skipped"}
    assert report["protocol"] == {"ok": True, "problems": []}


@pytest.mark.parametrize(
    ("role", "script"), [("provider", "provider.mjs"), ("service", "service.mjs")]
)
def test_every_message_of_the_node_examples_is_valid(
    role: str, script: str, tmp_path: Path
) -> None:
    """With -V, no message in either direction breaks the protocol's schema."""
    status, report = _suite(role, script, "-V", "--profile", "quick", report=tmp_path / "r.json")
    assert status == 0, report.get("protocol")
    assert report["protocol"] == {"ok": True, "problems": []}


BROKEN = [
    ("provider", "broken/provider-trims-text.mjs", "PRV-TEXT-1"),
    ("provider", "broken/provider-stays-on-abort.mjs", "PRV-ABORT-2"),
    ("provider", "broken/provider-blocks-loop.mjs", "PRV-LOOP-1"),
    ("provider", "broken/provider-mutates-previous.mjs", "PRV-MUTATE-1"),
    ("service", "broken/service-copies-request.mjs", "SVC-PASS-1"),
    ("service", "broken/service-trusts-answers.mjs", "SVC-STRICT-1"),
    ("service", "broken/service-keeps-listener.mjs", "SVC-LEAK-1"),
]


@pytest.mark.parametrize("seed", GALLERY_SEEDS, ids=[f"seed{s}" for s in GALLERY_SEEDS])
@pytest.mark.parametrize(("role", "script", "requirement"), BROKEN)
def test_each_broken_node_variant_fails_its_requirement(
    role: str, script: str, requirement: str, seed: int, tmp_path: Path
) -> None:
    """A JavaScript implementation with one defect fails the run, naming that requirement.

    It is judged by the checks that must catch it, stopping at the first that
    does; ``nox -s detection`` is where whole runs over many seeds belong.
    """
    name = Path(script).stem
    only = [f"--only={check}" for check in covering(name, role, requirement)]
    status, report = _suite(
        role, script, *only, f"--stop-on={requirement}", f"--seed={seed}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert status == 1
    assert requirement in _failed(report)
