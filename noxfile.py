"""Every check of the project, as nox sessions.

``nox`` runs the default sessions, which are what CI runs: lint, the two
type checkers, the fast tier on every Python side by side (``versions``),
the conformance run and the docs. The tests come in two tiers.
The fast tier (everything not marked ``slow``: what can differ between
Pythons, that is the reference's units, asyncio and cancellation, doctests,
the extras' units and one pass of the reference through the suite and the
harness) runs on every Python, each property on 20 examples: ``nox -s
versions`` runs the three side by side (``nox -s checks`` with the type
checkers beside them), ``nox -s tests`` one after the other. The slow tier is the proof
to run before landing, with ``nox -s loaded``; it is not in the default set,
since it takes a quarter of an hour: the tests of the suite's own power (the
gallery, the harness matrix, the Node examples and variants, the statistics,
the load proof), the passes through other processes and programs (the
extras' whole-suite runs, the web provider's page and its broken variants in
Chromium, the command line, the plugin through pytester, fastmcp's client,
which its test installs into a virtual environment of its own under
``.venvs/``), every property at its full count, and the budget check. ``nox
-s slow`` runs it in one pytest run with the first Python's fast tier at
full count (one collection, and the fast tests' work fills the slow tests'
waits on children, browsers and servers), on every core (pytest-xdist); what
is marked ``alone`` (the load proof and the budget check) runs by itself
afterwards. ``nox -s loaded`` runs the fast tier beside two CPU-bound
processes a core. ``nox -s bench``, ``nox -s detection``, ``nox -s fuzz``
and ``nox -s soak`` are longer runs, and ``nox -s screenshots`` remakes the
web page's pictures in the docs; all are kept out of the default set.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO

import nox

# uv makes the venvs and installs from its cache, so the five installs cost seconds.
nox.options.default_venv_backend = "uv|venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHONS = ["3.11", "3.12", "3.13"]
#: CI's set: the fast tier runs on every Python side by side in ``versions``; the
#: slow tier (``slow``) is the proof run before landing, outside CI's five minutes.
nox.options.sessions = ["lint", "typecheck", "versions", "conformance", "docs"]
#: pytest-xdist workers for the test sessions: two more than the cores. Both
#: tiers wait on child processes, browsers, servers and bounded sleeps, and more
#: workers fill those waits on 2 cores: the fast tier from 56 s to 47 (two
#: workers against three, wall) and 41.0 to 37.9 (three against four), the slow
#: tier from 151 to 139 and 273 to 267, side by side on the idle machine. Under
#: four, the harness's pass of the reference service once failed SVC-LOOP-1
#: falsely: the suite's loop slept on the interpreter's lock held by a starved
#: pipe thread, which the stall judgement now counts as starvation
#: (docs/performance.md, section 7). docs/conftest.py's scheduler keeps each
#: docs page's examples in one worker.
_WORKERS = os.environ.get("DSH_TEST_WORKERS") or str((os.cpu_count() or 1) + 2)
#: pytest-xdist's option for those workers; one worker is the test process itself.
_PARALLEL = ("-n", "0" if _WORKERS == "1" else _WORKERS)


#: Seconds ``checks`` and ``versions`` wait for their runs before they stop them: a
#: red run must end.
_VERSIONS_PATIENCE = 1800

# Never download an interpreter; use the ones installed on the machine.
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
# Let the sessions' processes keep the bytecode they compile. uv installs no .pyc
# files, so with PYTHONDONTWRITEBYTECODE set (as on the CI machine) every process
# (each test worker, each harness child and command-line run) compiled Hypothesis,
# the MCP SDK and the rest from source again: the fast tier took 58 s instead of 43.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _expose_pyenv_versions() -> None:
    """Let pyenv's shims answer for every matrix Python, not only the selected one."""
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return
    listed = subprocess.run(  # noqa: S603 - a fixed command
        [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
    ).stdout.split()
    current = [v for v in os.environ.get("PYENV_VERSION", "").split(":") if v]
    wanted = [v for v in listed if any(v.startswith(f"{minor}.") for minor in PYTHONS)]
    merged = current + [v for v in wanted if v not in current]
    if merged:
        os.environ["PYENV_VERSION"] = ":".join(merged)


_expose_pyenv_versions()


def _install(session: nox.Session, extras: str = "dev") -> None:
    session.install("-e", f".[{extras}]")


def _tier_record(python: object) -> str:
    """Where a Python's fast tier writes its CPU record; the slow tier's budget test reads it."""
    return os.path.join(os.getcwd(), ".tier", f"fast-{python}.json")


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The fast tier, doctests included, on one Python; it records its CPU cost.

    Hypothesis properties run 20 examples each here (the ``versions``
    profile of the tests' conftest): what differs between Pythons shows in
    a few, and ``slow`` runs them at their full count on the first Python,
    where the budget test holds the fast tier to its ceiling.
    """
    _install(session)
    env = {"DSH_TIER_RECORD": _tier_record(session.python), "DSH_HYPOTHESIS_PROFILE": "versions"}
    session.run(
        "pytest", "-m", "not slow", *_PARALLEL, "--durations=10", *session.posargs, env=env
    )  # fmt: skip


def _side_by_side(
    session: nox.Session, names: list[str], *, behind: frozenset[str] = frozenset()
) -> None:
    """Run the nox sessions *names* all at once, each in processes of its own.

    Each test session runs in one test process (``DSH_TEST_WORKERS`` sets
    another count): their waits on children, browsers and servers fill one
    another's, and each Python compiles and imports the project and the
    extras' frameworks once, where pytest-xdist's workers each did it again
    (about 26 CPU s a process before the bytecode is written, 11 after).
    The sessions in *behind* run at the lowest CPU priority (``nice -n
    19``): they take what CPU the others leave, and the others run as if
    they were alone. Their output is printed when all have ended, each line
    after its session, then how long each took. The session fails when any does, and
    stops them all, with their tests, once ``_VERSIONS_PATIENCE`` has passed
    or when it is interrupted.
    """
    env = {**os.environ, "DSH_TEST_WORKERS": os.environ.get("DSH_TEST_WORKERS") or "1"}
    runs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []
    took: dict[str, float] = {}
    failed: list[str] = []
    started = time.monotonic()
    try:
        for name in names:
            output = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
            command = [sys.executable, "-m", "nox", "-s", name]
            nice = shutil.which("nice") if name in behind else None
            if nice is not None:
                command = [nice, "-n", "19", *command]
            if name.startswith("tests-"):
                command += ["--", *session.posargs]
            # A process group of its own, so that stopping it stops its tests too.
            process = subprocess.Popen(  # noqa: S603 - this noxfile, run again
                command, stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            if name in behind:
                _lowest_priority(process.pid)
            runs.append((name, process, output))
        while len(took) < len(runs) and time.monotonic() - started < _VERSIONS_PATIENCE:
            for name, process, _ in runs:
                if name not in took and process.poll() is not None:
                    took[name] = time.monotonic() - started
                    if process.returncode:
                        failed.append(f"{name} (exit status {process.returncode})")
            time.sleep(0.2)
        failed += [
            f"{name} (stopped after {_VERSIONS_PATIENCE} s)"
            for name, _, _ in runs
            if name not in took
        ]
    finally:
        for _, process, _ in runs:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    for name, _, log in runs:
        with log:
            log.seek(0)
            for line in log.read().decode(errors="replace").splitlines():
                print(f"[{name}] {line}")
    for name, seconds in took.items():
        # .ci/stamp.py prints these as the steps of this session.
        session.log(f"side by side: {name} took {seconds:.1f} s")
    if failed:
        session.error(f"failed: {', '.join(failed)}")


def _lowest_priority(pid: int) -> None:
    """Give the session *pid* leads the lowest CPU priority, where the kernel groups by session.

    Linux's autogroup shares the CPU between sessions first, and a process's
    nice value only counts within its session: a session of its own at nice
    19 still took a fair share beside the tests' sessions. Its group's nice
    value is set too; nothing happens where there is none.
    """
    with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as f:
        f.write("19")


@nox.session(python=False, default=False)
def checks(session: nox.Session) -> None:
    """The fast tier on every Python, with the type checkers behind it, side by side.

    Five processes on 2 cores: a test process a Python, and mypy and pyright
    at the lowest CPU priority, to take the CPU the tests leave while they
    wait on children, browsers, servers and sleeps (about 75 s a Python
    alone). Not CI's: in a fresh-clone CI run it took 349 s against 360 s
    for ``typecheck`` then ``versions``, and the whole run as long (467 s
    against 468 s): the two cores are the limit, not the waits
    (docs/performance.md, section 15).
    """
    _side_by_side(
        session,
        ["typecheck", *(f"tests-{python}" for python in PYTHONS)],
        behind=frozenset({"typecheck"}),
    )


@nox.session(python=False)
def versions(session: nox.Session) -> None:
    """The fast tier on every Python, side by side: CI's longest part."""
    _side_by_side(session, [f"tests-{python}" for python in PYTHONS])


@nox.session(python=PYTHONS[0])
def slow(session: nox.Session) -> None:
    """The slow tier and the first Python's fast tier, in one run; then what runs alone.

    One pytest run of both tiers collects once, and the fast tier's work
    fills the slow tier's waits: on the idle 2-core machine 261 s against
    233 s for the slow tier and 44 s for the fast tier run one after the
    other. The fast tier's record is written as in ``tests``; the budget
    check, which judges it, runs after, with the load proof.
    """
    _install(session)
    env = {"DSH_TIER_RECORD": _tier_record(session.python)}
    session.run(
        "pytest", "-m", "not alone", *_PARALLEL, "--durations=10", *session.posargs, env=env
    )  # fmt: skip
    # The load proof loads every core on purpose: by itself, so no other test shares its load.
    session.run("pytest", "-m", "alone", "--durations=3", *session.posargs, env=env)


@nox.session(python=PYTHONS[0], default=False)
def loaded(session: nox.Session) -> None:
    """The fast tier beside two CPU-bound processes a core: run it before landing.

    The tests must pass on a busy machine (no test judges speed; waits end on
    events, or on a patience calibrated to the machine's speed at the time),
    and this is where that is checked: ``bench/loaded.py`` starts the
    spinning processes, runs the first Python's fast tier as ``tests`` does
    (without writing its CPU record, which the budget judges at idle), and
    prints the exit status, the time and the load average seen. Not in the
    default set: it takes several times the fast tier's minute.
    ``tests/test_loaded.py`` runs part of it once in the slow tier, and
    ``python -m bench.loaded_nox`` runs the whole of ``nox`` the same way.
    """
    _install(session)
    burners = str(2 * (os.cpu_count() or 1))
    session.run(
        "python", "-m", "bench.loaded", "--burners", burners, "--json", ".tier/loaded.json",
        "--", "python", "-m", "pytest", "-m", "not slow", *_PARALLEL, *session.posargs,
        env={"PYTHONPATH": os.getcwd()},
    )  # fmt: skip


@nox.session(python="3.11")
def conformance(session: nox.Session) -> None:
    """Install the package as a user would and run the suite on the reference."""
    session.install(".[conformance]")
    session.run("python", "-m", "dsh_user_interaction_conformance", *session.posargs)


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    """Mypy --strict and pyright strict, including the assert_type checks.

    The two run side by side (each keeps to one core); pyright's report is
    printed after mypy's, and either one failing fails the session.
    """
    _install(session)
    # Pyright reads the packages of the session's venv, as mypy does (not those of
    # whatever python is first on PATH outside nox).
    python = os.path.join(session.bin, "python")
    pyright = subprocess.Popen(  # noqa: S603 - a fixed command from the session's venv
        [os.path.join(session.bin, "pyright"), "--pythonpath", python],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        session.run("mypy")
    finally:
        report, _ = pyright.communicate()
        print(report, end="")
    if pyright.returncode:
        session.error(f"pyright failed (exit status {pyright.returncode})")


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """Ruff lint and format check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """Build the HTML docs with warnings and broken references as errors."""
    _install(session)
    session.run(
        "sphinx-build", "-W", "-n", "--keep-going", "-b", "html", "docs", "docs/_build/html"
    )


@nox.session(python="3.11", default=False)
def screenshots(session: nox.Session) -> None:
    """The web page's pictures in the docs (phone and desktop width), then the docs' pages.

    ``docs/screenshots.py`` writes ``docs/_static/web-*.png`` from the real page;
    the start, spec and API pages are then shot from the built docs, to look at.
    """
    chromium = shutil.which("chromium") or session.error("install Debian's chromium first")
    _install(session)
    session.run("python", "docs/screenshots.py")
    docs(session)
    out = "docs/_build/screenshots"
    os.makedirs(out, exist_ok=True)
    for page in ("index", "spec", "api"):
        session.run(
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={session.create_tmp()}/chromium",
            "--window-size=1280,1600", f"--screenshot={out}/{page}.png",
            f"file://{os.getcwd()}/docs/_build/html/{page}.html",
            external=True,
        )  # fmt: skip


@nox.session(python="3.11", default=False)
def fuzz(session: nox.Session) -> None:
    """Fuzz the tool with seeded hostile inputs; ``nox -s fuzz -- 1000000`` for a million.

    ``-- COUNT --seed S`` repeats a run, ``-- --seed S --index I`` replays one input,
    and ``--stop-on-first`` stops at the first failure. Not part of CI.
    """
    _install(session)
    session.run("python", "fuzz/fuzz_tool.py", *session.posargs)


@nox.session(python="3.11", default=False)
def detection(session: nox.Session) -> None:
    """Detection rate of each gallery entry over N seeds (default 20). Not part of CI."""
    _install(session)
    session.run(
        "python", "-m", "bench.detection", *session.posargs, env={"PYTHONPATH": os.getcwd()}
    )


@nox.session(python="3.11", default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks; not part of CI. Results go to bench/results/.

    ``nox -s bench`` runs every section; ``nox -s bench -- honest --rounds 60``
    or ``nox -s bench -- suite_cost --profiles default`` runs one with options.
    """
    _install(session)
    session.install("pydantic", "msgspec", "jsonschema", "matplotlib", "pyinstrument")
    session.run("python", "-m", "bench", *session.posargs, env={"PYTHONPATH": os.getcwd()})


@nox.session(python="3.11", default=False)
def soak(session: nox.Session) -> None:
    """Soak the seam, then each bridge: longer runs, not part of CI.

    100,000 concurrent asks under random interrupts (``-- ASKS --seed S``), then
    10,000 asks through each bridge (``bench.soak_bridges``; needs Node.js).
    """
    _install(session)
    env = {"PYTHONPATH": os.getcwd()}
    session.run("python", "-m", "bench.soak", *session.posargs, env=env)
    session.run("python", "-m", "bench.soak_bridges", env=env)
