"""A ``conformance-matrix`` directive: every implementation in this repository, judged fresh.

When the build starts, the suite runs against each implementation, all at
once, from the command line (``--profile quick --seed 1 --json``), and the
directive shows their reports side by side (the suite's own ``matrix``). An
implementation that needs what the machine lacks (Chromium for the web page,
Node.js for the Node examples) is listed as not run, with what it needs; a
run that writes no report fails the build. A run that found the machine
too busy to judge its loop requirement (``untested``, "too little CPU to
tell") is made again alone, up to twice, so the page shows the
implementations' verdicts rather than the build machine's load. The same
matrix is written as a standalone page, ``conformance-matrix.html``, beside
the site's pages.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from dsh_user_interaction.extra.web.testing import chromium_executable
from dsh_user_interaction_conformance import Matrix, build_matrix, read_report

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
#: The page that shows the matrix (read again in every build).
PAGE = "matrix"
#: The seed and profile of every run on the page.
SEED = 1
PROFILE = "quick"
#: Seconds the runs may take together before the build fails.
PATIENCE = 600.0
#: How many times a run the machine was too busy to judge is made again, alone.
AGAIN = 2
#: What the suite says of a loop requirement it could not judge on a busy machine.
_TOO_BUSY = "too little CPU to tell"
#: What the one-word cells of the HTML table say.
LEGEND = (
    "\n*pass*: passed; **FAIL**: failed; *warn*: a `SHOULD` that failed; *expected*: an "
    "expected failure (the baseline names it); *skip*: skipped, the subject's capabilities "
    "exclude it; *untested*: no example judged it; a dash: not judged, the requirement is "
    "not of that kind of subject. Point at a cell for its full verdict, or see the "
    "standalone page, `conformance-matrix.html`, which writes each one out.\n"
)
_CHILD = f"{shlex.quote(sys.executable)} -m dsh_user_interaction_conformance.child"

#: Each implementation: its column's name, the command line's subject options,
#: and what it needs from the machine beyond this package's extras.
IMPLEMENTATIONS: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("reference", (), None),
    (
        "terminal",
        ("--provider", "dsh_user_interaction.extra.terminal.testing:terminal_subject"),
        None,
    ),
    ("web page", ("--provider", "dsh_user_interaction.extra.web.testing:web_subject"), "Chromium"),
    ("MCP bridge", ("--provider", "dsh_user_interaction.extra.mcp.testing:mcp_subject"), None),
    (
        "MCP bridge, 2026-07-28",
        ("--provider", "dsh_user_interaction.extra.mcp.testing:mcp_round_trip_subject"),
        None,
    ),
    ("Node provider", ("--provider-cmd", "node examples/node/provider.mjs"), "Node.js"),
    ("Node service", ("--service-cmd", "node examples/node/service.mjs"), "Node.js"),
    (
        "Python child provider",
        (
            "--provider-cmd",
            f"{_CHILD} --provider dsh_user_interaction_conformance:reference_subject",
        ),
        None,
    ),
    (
        "Python child service",
        ("--service-cmd", f"{_CHILD} --service dsh_user_interaction_conformance:reference_service"),
        None,
    ),
)


def _missing(need: str | None) -> bool:
    if need == "Chromium":
        return chromium_executable() is None
    if need == "Node.js":
        return shutil.which("node") is None
    return False


@dataclass
class _Runs:
    """The runs of this build: started at its start, waited for when the page is read."""

    started: list[tuple[str, Path, subprocess.Popen[str]]] = field(
        default_factory=list[tuple[str, Path, subprocess.Popen[str]]]
    )
    reports: list[tuple[str, Path]] = field(default_factory=list[tuple[str, Path]])
    not_run: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    #: Each run's command line, by its column's name.
    commands: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    #: The names of the runs made again alone, the machine too busy the first time.
    again: list[str] = field(default_factory=list[str])
    matrix: Matrix | None = None
    deadline: float = 0.0

    def finish(self) -> Matrix:
        """Wait for every run (once); their matrix. A run that wrote no report raises.

        The runs share the machine (nine suites at once on two cores, and
        whatever else it runs), so a run whose stall judgement found the
        machine too busy to tell (a requirement ``untested`` for too little
        CPU: the run fails, as it must) is made again alone, up to
        :data:`AGAIN` times; the page shows the last. At idle none is.
        """
        if self.matrix is not None:
            return self.matrix
        try:
            for name, report, process in self.started:
                self._wait(name, report, process)
                for _ in range(AGAIN):
                    if not too_busy(report):
                        break
                    self.again.append(name)
                    report.unlink()
                    self._wait(name, report, _start(self.commands[name]))
                self.reports.append((name, report))
        finally:
            self.stop()
        self.matrix = build_matrix([read_report(path, name) for name, path in self.reports])
        return self.matrix

    def _wait(self, name: str, report: Path, process: subprocess.Popen[str]) -> None:
        try:
            out, _ = process.communicate(timeout=max(1.0, self.deadline - time.monotonic()))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if not report.exists():
            status = process.returncode
            msg = f"the suite wrote no report for {name} (status {status}):\n{out}"
            raise RuntimeError(msg)

    def stop(self) -> None:
        """Kill any run still going (the build failed, or ran out of patience)."""
        for _, _, process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait()


_RUNS: dict[int, _Runs] = {}


def start_all(folder: Path) -> _Runs:
    """Start the suite on every implementation the machine can serve, all at once."""
    folder.mkdir(parents=True, exist_ok=True)
    runs = _Runs(deadline=time.monotonic() + PATIENCE)
    try:
        for index, (name, options, need) in enumerate(IMPLEMENTATIONS):
            if need is not None and _missing(need):
                runs.not_run.append((name, f"needs {need}"))
                continue
            report = folder / f"{index:02d}.json"
            report.unlink(missing_ok=True)
            command = [
                sys.executable, "-m", "dsh_user_interaction_conformance", *options,
                "--profile", PROFILE, "--seed", str(SEED), "--json", str(report),
            ]  # fmt: skip
            runs.commands[name] = command
            runs.started.append((name, report, _start(command)))
    except BaseException:
        runs.stop()
        raise
    return runs


def _start(command: list[str]) -> subprocess.Popen[str]:
    """One run of the suite, its output kept for a failure's message."""
    return subprocess.Popen(  # noqa: S603 - this interpreter, fixed arguments
        command,
        cwd=ROOT,
        env={**os.environ, "CI": ""},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def too_busy(report: Path) -> bool:
    """Whether the run behind *report* left a requirement untested for too little CPU."""
    found: dict[str, list[dict[str, object]]] = json.loads(report.read_text(encoding="utf-8"))
    return any(
        result.get("status") == "untested" and _TOO_BUSY in str(result.get("message", ""))
        for result in found.get("results", [])
    )


def run_all(folder: Path) -> _Runs:
    """Run the suite on every implementation the machine can serve, at once; their reports."""
    runs = start_all(folder)
    runs.finish()
    return runs


class ConformanceMatrix(SphinxDirective):
    """The matrix of this build's runs, with what could not run."""

    def run(self) -> list[nodes.Node]:
        """Parse the matrix's Markdown table in place, and say what was not run."""
        runs = _RUNS.get(id(self.env.app))
        if runs is None:
            logger.warning("the conformance matrix was not built", location=self.get_location())
            return []
        matrix = runs.finish()
        container = nodes.container(classes=["conformance-matrix"])
        if self.env.app.builder.format == "html":
            # One word a cell, the full verdict its title, in a box that scrolls
            # sideways with the requirement column kept in view: the table fits
            # the page's column at 1280 px, and scrolls on a phone.
            table = matrix.html_table(compact=True, styled=True)
            container += nodes.raw("", table, format="html")
            text = LEGEND
        else:
            text = matrix.markdown()
        if runs.not_run:
            missing = "; ".join(f"{name} ({why})" for name, why in runs.not_run)
            text += f"\nNot run in this build, for want of what they need: {missing}.\n"
        self.state.nested_parse(StringList(text.splitlines(), source="matrix"), 0, container)
        return [container]


def _generate(app: Sphinx) -> None:
    # The runs go on while Sphinx reads the other pages; the matrix's page waits for them.
    _RUNS[id(app)] = start_all(Path(app.outdir).parent / "conformance-reports")


def _page(app: Sphinx, exception: BaseException | None) -> None:
    runs = _RUNS.pop(id(app), None)
    if runs is None:
        return
    if exception is not None:
        runs.stop()
        return
    matrix = runs.finish()
    if app.builder.format == "html":
        page = matrix.html("dsh-user-interaction: the conformance matrix")
        (Path(app.outdir) / "conformance-matrix.html").write_text(page, encoding="utf-8")


def _always(
    _app: Sphinx, _env: object, _added: set[str], _changed: set[str], _removed: set[str]
) -> list[str]:
    return [PAGE]


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive and the runs."""
    app.add_directive("conformance-matrix", ConformanceMatrix)
    app.connect("builder-inited", _generate)
    # The page shows this build's runs, so it is read again in every build.
    app.connect("env-get-outdated", _always)
    app.connect("build-finished", _page)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
