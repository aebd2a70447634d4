"""The store suite: it passes a sound store, catches each broken one by name, and always ends."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest

from dsh_user_interaction.durable import AskRecord
from dsh_user_interaction_conformance import (
    SetupError,
    StoreSubject,
    requirements,
    run_store_suite,
    sqlite_store_subject,
)
from dsh_user_interaction_conformance.__main__ import main
from dsh_user_interaction_conformance._reference_only import REFERENCE_ONLY
from dsh_user_interaction_conformance._store._durable import DURABLE_CHECKS
from dsh_user_interaction_conformance._store._machine import STORE_REQUIREMENTS
from dsh_user_interaction_conformance._store._runner import STORE_CHECKS, store_suite_requirements

from .gallery.stores import BROKEN_STORES, BROKEN_UNDER_FAULTS, FAITHFUL, Wrapped, subject_of
from .helpers import GALLERY_SEEDS

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parent.parent


def test_every_requirement_the_store_suite_judges_is_in_the_spec() -> None:
    """The state machine and the scenarios cite spec IDs, and judge every store requirement.

    The durable requirements of the reference only (:data:`REFERENCE_ONLY`)
    are judged by its own tests instead.
    """
    known = requirements()
    cited = {*STORE_REQUIREMENTS, *(r for check in DURABLE_CHECKS for r in check.requirements)}
    assert cited <= set(known), cited - set(known)
    assert set(store_suite_requirements()) == cited
    assert {rid for rid in known if rid.startswith("DUR-")} - set(REFERENCE_ONLY) <= cited
    assert set(REFERENCE_ONLY) <= set(known)
    assert not set(REFERENCE_ONLY) & cited


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_sound_store_passes_every_requirement_at_the_quick_profile() -> None:
    """The gallery's unbroken wrapper of the SQLite store passes, each requirement judged."""
    report = run_store_suite(FAITHFUL, profile="quick", seed=1)
    assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]
    assert {r.status for r in report.results} == {"passed"}
    assert all(r.examples > 0 for r in report.results)
    assert {r.requirement.id for r in report.results} == set(store_suite_requirements())
    assert [run.check for run in report.runs] == list(STORE_CHECKS)


def test_the_sqlite_store_passes_the_suite() -> None:
    """The embedded store, the suite's default, passes at the quick profile."""
    report = run_store_suite(profile="quick", seed=1)
    assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_the_report_is_replayable() -> None:
    """The JSON report names the suite, both versions, the seed and profile; a seed replays.

    It replays the very example found: the race that finds this store out
    interleaves as the seed drew it, not as the store's threads happened to run.
    """
    factory, _ = BROKEN_STORES["last-writer-wins"]
    runs = [
        run_store_suite(
            factory,
            profile="quick",
            seed=11,
            shrink=False,
            stop_on={"DUR-ONCE-1"},
            only=["store-machine"],
        )
        for _ in range(2)
    ]
    found = runs[0].as_dict()
    assert found["suite"] == "store"
    assert found["spec_version"] == "1.7.0"
    assert {"suite_version", "seed", "profile", "bound", "store", "runs"} <= set(found)
    assert found["seed"] == 11
    assert found["profile"] == "quick"
    assert found["ok"] is False
    first, second = ({r.requirement.id: r for r in run.results} for run in runs)
    assert first["DUR-ONCE-1"].status == "failed"
    assert second["DUR-ONCE-1"].status == "failed"
    assert first["DUR-ONCE-1"].example == second["DUR-ONCE-1"].example
    json.dumps(found)  # plain JSON data throughout


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"profile": "huge"}, "profile must be one of"),
        ({"bound": 0}, "finite positive"),
        ({"bound": float("nan")}, "finite positive"),
        ({"stop_on": ["PRV-ABORT-1"]}, "no requirement of the store suite"),
        ({"only": ["provider-answers"]}, "unknown check"),
    ],
)
def test_run_store_suite_rejects_bad_arguments(arguments: dict[str, Any], fragment: str) -> None:
    """A bad argument is a ValueError naming it, before any store is made."""
    with pytest.raises(ValueError, match=fragment):
        run_store_suite(FAITHFUL, **arguments)


def _raising() -> StoreSubject:
    raise OSError("no disk")


def _not_a_subject() -> object:
    return "a store"


class _CannotOpen:
    name = "CannotOpen"

    async def open(self) -> Any:
        raise ConnectionRefusedError("no server")

    async def cleanup(self) -> None:
        pass


@pytest.mark.parametrize(
    ("factory", "fragment"),
    [
        (_raising, "raised OSError('no disk')"),
        (_not_a_subject, "returned str, which has no open or cleanup method"),
        (_CannotOpen, "ConnectionRefusedError('no server')"),
    ],
)
def test_an_unusable_factory_is_a_setup_error(factory: Any, fragment: str) -> None:
    """A factory that raises, returns no subject, or whose subject cannot open: SetupError."""
    with pytest.raises(SetupError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        run_store_suite(factory, profile="quick", seed=1)


class _PendingHangs(Wrapped):
    """pending() never returns."""

    async def pending(self) -> list[AskRecord]:
        await asyncio.Event().wait()
        return []


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_call_that_never_returns_fails_its_requirement_and_the_run_ends() -> None:
    """A hung call fails the requirement it was judging, unshrunk, within a few bounds."""
    started = time.monotonic()
    report = run_store_suite(
        subject_of(_PendingHangs), profile="quick", seed=2, bound=0.3, only=["store-machine"]
    )
    seconds = time.monotonic() - started
    result = {r.requirement.id: r for r in report.results}["DUR-STORE-2"]
    assert result.status == "failed"
    assert "did not return within 0.3 s" in result.message
    assert not result.shrunk
    assert seconds < 120  # it ends: a hang would never get here (the bound is generous)


class _BlocksTheLoop(Wrapped):
    """get() blocks its event loop's thread: no timeout on that loop can fire."""

    async def get(self, ask_id: str) -> AskRecord | None:
        time.sleep(2.5)  # noqa: ASYNC251 - the defect under test
        return await super().get(ask_id)


@pytest.mark.slow
def test_a_store_that_blocks_its_loop_is_abandoned_and_the_run_ends() -> None:
    """A loop held by a blocking call is given up after its patience; the verdict names it."""
    started = time.monotonic()
    report = run_store_suite(
        subject_of(_BlocksTheLoop), profile="quick", seed=3, bound=0.5, only=["store-machine"]
    )
    failed = [r for r in report.results if r.status == "failed"]
    assert failed
    assert any("event loop did not run again" in r.message for r in failed), failed
    assert time.monotonic() - started < 120  # it ends (a generous bound, not a speed goal)


def test_the_gallery_of_stores_is_large_enough() -> None:
    """At least the nine broken stores the suite was built to catch, and more."""
    assert len(BROKEN_STORES) >= 9
    assert {rid for _, wanted in BROKEN_STORES.values() for rid in wanted.split("|")} <= set(
        requirements()
    )


_SEEDS = pytest.mark.parametrize("seed", GALLERY_SEEDS, ids=[f"seed{s}" for s in GALLERY_SEEDS])


@pytest.mark.slow
@_SEEDS
@pytest.mark.parametrize("name", sorted(BROKEN_STORES))
def test_broken_store_is_caught(name: str, seed: int) -> None:
    """The state machine fails the store at the default profile, names what it breaks, and ends."""
    factory, requirement = BROKEN_STORES[name]
    wanted = set(requirement.split("|"))
    report = run_store_suite(
        factory, seed=seed, shrink=False, stop_on=wanted, only=["store-machine"]
    )
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    assert not report.ok
    assert failed & wanted, failed


@pytest.mark.slow
@_SEEDS
@pytest.mark.parametrize("name", sorted(BROKEN_UNDER_FAULTS))
def test_broken_store_under_faults_is_caught(name: str, seed: int) -> None:
    """``durable-faults`` fails a store that keeps every rule alone but lies under a fault."""
    factory, requirement = BROKEN_UNDER_FAULTS[name]
    report = run_store_suite(factory, seed=seed, shrink=False, only=["durable-faults"])
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    assert requirement in failed, report.results
    (result,) = [r for r in report.results if r.requirement.id == requirement]
    assert "the agent received" in result.message or "UI" in result.message, result.message


@pytest.mark.slow
def test_a_broken_store_under_faults_keeps_every_rule_alone() -> None:
    """The state machine alone passes the store that lies only when a write meets a lock."""
    factory, _ = BROKEN_UNDER_FAULTS["swallows-locked-writes"]
    report = run_store_suite(factory, seed=7, profile="quick", only=["store-machine"])
    assert report.ok, [
        (r.requirement.id, r.message) for r in report.results if r.status != "passed"
    ]


#: CPU-bound processes beside the faults: a busy machine, as the issue measured it.
_BURNERS: Final = 4


@pytest.mark.slow
def test_a_sound_store_agrees_under_faults_beside_cpu_bound_processes() -> None:
    """DUR-AGREE-1: the SQLite store passes ``durable-faults`` on three seeds, four CPUs spinning.

    The faults are ordered by events, never by time, so a busy machine slows
    the scenario down but cannot change its verdict.
    """
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(_BURNERS)
    ]
    try:
        for seed in (1, 2, 3):
            report = run_store_suite(
                sqlite_store_subject, seed=seed, shrink=False, only=["durable-faults"]
            )
            assert report.ok, [(r.requirement.id, r.message) for r in report.results]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


# -- the command line ---------------------------------------------------------------------


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_cli_runs_the_store_suite_and_writes_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store MODULE:ATTR`` exits 0 on a sound store, with a JSON report of the store suite."""
    out = tmp_path / "report.json"
    argv = ["--store", "tests.gallery.stores:FAITHFUL", "--profile", "quick", "--seed", "4"]
    assert main([*argv, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["suite"] == "store"
    assert report["seed"] == 4
    assert {r["status"] for r in report["results"]} == {"passed"}
    printed = capsys.readouterr().out
    assert "the store suite" in printed.splitlines()[0]
    assert "seed:         4" in printed
    assert printed.rstrip().endswith("PASSED")


@pytest.mark.slow
def test_cli_fails_a_broken_store_and_prints_a_reproducer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A broken store exits 1, with the requirement, the spec, the example and a reproducer."""
    argv = [
        "--profile", "quick", "--seed", "5", "--store", "tests.gallery.stores:PUT_REPLACES",
        "--stop-on", "DUR-STORE-1", "--only", "store-machine",
    ]  # fmt: skip
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "=== FAILED: DUR-STORE-1 (MUST), found by store-machine" in out
    assert "spec: Putting an ask id the store does not know" in out
    assert "example" in out
    assert (
        "reproduce: python -m dsh_user_interaction_conformance --profile quick --stop-on "
        "DUR-STORE-1 --seed 5 --only store-machine "
        "--store=tests.gallery.stores:PUT_REPLACES"
    ) in out
    assert "Falsifying" not in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--store", "--provider", "x:y"], "drop --provider"),
        (["--store", "--only", "provider-answers"], "unknown check 'provider-answers'"),
        (["--store", "--stop-on", "PRV-ABORT-1"], "no requirement of the store suite"),
        (["--store", "nocolon"], "MODULE:ATTR"),
        (["--store", "tests.test_store_suite:_raising"], "raised OSError"),
    ],
)
def test_store_usage_errors_exit_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Usage and set-up errors of the store suite exit 2 with a one-line message."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert fragment in err


def test_cli_lists_the_store_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """``--store --list`` names each store check and the requirements it judges."""
    assert main(["--store", "--list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == list(STORE_CHECKS)
    assert "DUR-WATCH-1" in out


@pytest.mark.slow
def test_cli_in_a_process_of_its_own() -> None:
    """``python -m dsh_user_interaction_conformance --store`` runs as a program and exits 0."""
    command = [sys.executable, "-m", "dsh_user_interaction_conformance", "--store"]
    options = ["tests.gallery.stores:FAITHFUL", "--profile", "quick", "--seed", "6"]
    done = subprocess.run(
        [*command, *options], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("PASSED")


# -- the pytest plugin ----------------------------------------------------------------------


@pytest.mark.slow
def test_pytest_plugin_runs_the_store_checks_from_a_fixture(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An implementer defines the store fixture and one test: every store check runs and passes."""
    pytester.syspathinsert(ROOT)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(
        """
        import pytest
        from tests.gallery.stores import FAITHFUL

        @pytest.fixture
        def dsh_user_interaction_store():
            return FAITHFUL
        """
    )
    (pytester.path / "test_store.py").write_text(
        "def test_store(dsh_store_check):\n    dsh_store_check()\n"
    )
    result = pytester.runpytest_subprocess("--dsh-profile", "quick", "--dsh-seed", "3")
    result.assert_outcomes(passed=len(STORE_CHECKS))


@pytest.mark.slow
def test_pytest_plugin_takes_the_store_from_its_option_and_fails_a_broken_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--dsh-store MODULE:ATTR`` names the factory; a broken store fails with a reproducer."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    (pytester.path / "test_store.py").write_text(
        "def test_store(dsh_store_check):\n    dsh_store_check()\n"
    )
    result = pytester.runpytest_subprocess(
        "--dsh-profile", "quick", "--dsh-seed", "9",
        "--dsh-store", "tests.gallery.stores:PUT_REPLACES", "-k", "store-machine",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*FAILED: DUR-STORE-1 (MUST)*", "*reproduce: pytest*--dsh-seed 9*--dsh-store*"]
    )


@pytest.mark.slow
def test_pytest_plugin_skips_the_store_checks_without_a_store(pytester: pytest.Pytester) -> None:
    """Without the fixture or the option, the store checks are skipped, saying what to define."""
    (pytester.path / "test_store.py").write_text(
        "def test_store(dsh_store_check):\n    dsh_store_check()\n"
    )
    result = pytester.runpytest_subprocess("-rs")
    result.assert_outcomes(skipped=len(STORE_CHECKS))
    result.stdout.fnmatch_lines(["*define the dsh_user_interaction_store fixture*"])


def test_the_default_factory_is_the_sqlite_store() -> None:
    """``sqlite_store_subject`` opens SQLite stores on a file of its own, cleaned away after."""

    async def scenario() -> bool:
        subject = sqlite_store_subject()
        store = await subject.open()
        try:
            await store.put("a", {"questions": []}, asked_at=1.0)
            other = await subject.open()
            seen = await other.get("a")
            await other.close()
        finally:
            await store.close()
            await subject.cleanup()
        return seen is not None

    assert asyncio.run(scenario())
