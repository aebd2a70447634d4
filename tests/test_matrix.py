"""The conformance matrix: real reports of several runs, side by side, as Markdown and HTML."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dsh_user_interaction import ScriptedProvider
from dsh_user_interaction_conformance import (
    Capabilities,
    Matrix,
    MatrixCell,
    MatrixColumn,
    Report,
    ReportError,
    ScriptedDriver,
    ServiceFactory,
    Subject,
    SubjectFactory,
    build_matrix,
    read_report,
    reference_service,
    reference_subject,
    requirements,
    run_suite,
    with_capabilities,
)
from dsh_user_interaction_conformance.__main__ import main

from .gallery.providers import SHOULD_PROVIDERS
from .gallery.services import AsksBeforeChecking

_NO_DISMISS = Capabilities(can_dismiss=False)


@with_capabilities(_NO_DISMISS)
def _cannot_dismiss() -> Subject:
    provider = ScriptedProvider()
    return Subject(provider, ScriptedDriver(provider, _NO_DISMISS))


def _write(path: Path, report: Report) -> Path:
    path.write_text(json.dumps(report.as_dict()), encoding="utf-8")
    return path


def _run(
    only: str,
    subject: SubjectFactory | None = None,
    service: ServiceFactory | None = None,
    baseline: dict[str, str] | None = None,
) -> Report:
    return run_suite(
        subject_factory=subject,
        service_factory=service,
        only=[only],
        seed=3,
        profile="quick",
        shrink=False,
        baseline=baseline,
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real reports: two providers (one cannot dismiss), a failing, a baselined and a sound service."""
    folder = tmp_path_factory.mktemp("reports")
    baseline = {"SVC-PASS-1": "asks the provider before checking the request"}
    runs = {
        "passing": _run("provider-lifecycle", subject=reference_subject),
        "no-dismiss": _run("provider-lifecycle", subject=_cannot_dismiss),
        "failing": _run("service-order", service=AsksBeforeChecking),
        "baselined": _run("service-order", service=AsksBeforeChecking, baseline=baseline),
        "service": _run("service-order", service=reference_service),
    }
    return {name: _write(folder / f"{name}.json", report) for name, report in runs.items()}


def test_the_report_and_the_matrix_name_each_should_a_subject_breaks(tmp_path: Path) -> None:
    """A SHOULD broken is a warning that passes the run, listed in ``shoulds_broken`` and the matrix.

    Before, only its result's status said so, among a hundred results.
    """
    factory, requirement = SHOULD_PROVIDERS["multi-select-reversed"]
    report = _run("provider-answers", subject=factory)
    assert report.ok
    data = report.as_dict()
    assert data["shoulds_broken"] == [requirement]
    clean = _run("provider-answers", subject=reference_subject)
    assert clean.as_dict()["shoulds_broken"] == []
    columns = [
        read_report(_write(tmp_path / "warns.json", report), "warns"),
        read_report(_write(tmp_path / "clean.json", clean), "clean"),
    ]
    assert f"| *SHOULDs broken* | {requirement} | none |" in build_matrix(columns).markdown()


def _by_id(matrix: Matrix, column: MatrixColumn) -> dict[str, str]:
    return {rid: (c.words() if (c := matrix.cell(column, rid)) else "") for rid, _ in matrix.rows}


def test_each_cell_is_its_reports_verdict(reports: dict[str, Path]) -> None:
    """Passed, failed, expected failure with its reason, skipped by capability, not judged."""
    columns = [read_report(reports[name], name) for name in reports]
    matrix = build_matrix(columns)
    passing, no_dismiss, failing, baselined, service = (_by_id(matrix, c) for c in columns)
    assert passing["PRV-DISMISS-1"] == "passed"
    assert no_dismiss["PRV-DISMISS-1"].startswith("skipped: ")
    assert failing["SVC-PASS-1"] == "failed"
    assert baselined["SVC-PASS-1"] == (
        "expected failure: asks the provider before checking the request"
    )
    assert service["SVC-PASS-1"] == "passed"
    # A provider's requirement in a service's report: not judged, never passed.
    assert failing["PRV-DISMISS-1"] == ""
    assert matrix.cell(columns[2], "PRV-DISMISS-1") is None
    # Every requirement any report judges is a row, in the spec's order, with its level.
    known = list(requirements())
    ids = [rid for rid, _ in matrix.rows]
    assert ids == sorted(ids, key=known.index)
    assert {rid for c in columns for rid in c.cells} == set(ids)
    assert dict(matrix.rows)["PRV-DISMISS-1"] == requirements()["PRV-DISMISS-1"].level
    # The run details of each column.
    assert [c.ok for c in columns] == [True, True, False, True, True]
    assert {c.seed for c in columns} == {3}
    assert {c.profile for c in columns} == {"quick"}
    assert columns[0].kinds == ("provider",)
    assert columns[2].kinds == ("service",)


def test_a_column_is_named_after_its_subject_unless_named(reports: dict[str, Path]) -> None:
    """Without a name, a column takes its subject's, as the report gives it."""
    column = read_report(reports["passing"])
    subject = json.loads(reports["passing"].read_text(encoding="utf-8"))["subjects"]["provider"]
    assert column.name == subject.split(" (", 1)[0]
    assert read_report(reports["passing"], "mine").name == "mine"


def test_the_markdown_and_the_page_show_every_column_and_row(reports: dict[str, Path]) -> None:
    """One Markdown row per requirement and detail, a failure in bold; the page escapes text."""
    matrix = build_matrix(
        [read_report(reports["failing"], "<b>x</b>"), read_report(reports["passing"])]
    )
    text = matrix.markdown()
    lines = text.splitlines()
    assert len(lines) == 2 + 7 + len(matrix.rows)
    assert all(line.count(" | ") == 2 for line in lines if line.startswith("| "))
    assert "| `SVC-PASS-1` (MUST) | **failed** | not judged |" in lines
    assert "| *verdict* | FAILED | PASSED |" in lines
    assert "&lt;b>x&lt;/b>" in lines[0]
    page = matrix.html("A <title>")
    assert "<b>x</b>" not in page
    assert html.escape("<b>x</b>") in page
    assert "<title>A &lt;title&gt;</title>" in page
    assert page.count("<tr>") == 1 + len(matrix.rows)  # the head, then a row each


def test_the_command_writes_markdown_and_a_page(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``matrix`` prints Markdown, or writes the files it is given; ``NAME=`` names a column."""
    assert main(["matrix", f"ours={reports['passing']}", str(reports["baselined"])]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| requirement | ours | ")
    markdown, page = tmp_path / "m.md", tmp_path / "m.html"
    status = main(
        ["matrix", str(reports["failing"]), "--markdown", str(markdown), "--html", str(page)]
    )
    assert status == 0
    assert capsys.readouterr().out == ""
    assert "**failed**" in markdown.read_text(encoding="utf-8")
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json", "not a JSON report"),
        ("[1]", "not a JSON object"),
        ("{}", "no 'subjects' field"),
        ('{"subjects": {}, "results": 3}', "'results' is 3, not a list"),
        ('{"subjects": {}, "results": [{"id": "X"}]}', "results[0]: no 'status' field"),
        (
            '{"subjects": {}, "results": [{"id": "X", "status": "fine"}]}',
            "results[0]: 'status' is 'fine', not one of passed",
        ),
    ],
)
def test_a_report_the_matrix_cannot_read_names_its_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, said: str
) -> None:
    """The error names the file and what is wrong; the command exits 2 and writes nothing."""
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ReportError, match=re.escape(said)) as raised:
        read_report(path)
    assert str(path) in str(raised.value)
    out = tmp_path / "m.md"
    assert main(["matrix", str(path), "--markdown", str(out)]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()


class _Tags(HTMLParser):
    """The names of the tags a page opens."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)


#: Every tag the matrix's page itself writes.
_PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "div", "table", "thead", "tbody",
    "tr", "th", "td", "code", "small",
}  # fmt: skip

_TEXT = st.text(st.characters(codec="utf-8"), max_size=30)


@given(name=_TEXT, note=_TEXT)
@example(name="<script>alert(1)</script>", note="<img src=x onerror=alert(1)> | a\nb")
def test_any_text_keeps_the_table_whole_and_the_page_inert(name: str, note: str) -> None:
    """Whatever a report's names and reasons hold, rows keep their cells and no tag gets in."""
    cell = MatrixCell("expected-failure", note, "MUST")
    column = MatrixColumn(name, ("service",), "0", "0", None, "default", True, {"SVC-PASS-1": cell})
    matrix = build_matrix([column, column])
    for line in matrix.markdown().splitlines():
        # Three cells: the requirement and two columns (an escaped bar is no separator).
        assert len(re.split(r"(?<!\\)\|", line)) == 5, line
    tags = _Tags()
    tags.feed(matrix.html())
    tags.feed(matrix.html_table(compact=True, styled=True))
    assert tags.seen <= _PAGE_TAGS


def test_the_compact_table_says_each_verdict_in_a_word_and_in_full_as_its_title(
    reports: dict[str, Path],
) -> None:
    """The docs' table fits a page's column: one word a cell, the full verdict on pointing.

    It scrolls sideways in its own box where the page is narrower (a phone),
    with the requirement column kept in view.
    """
    matrix = build_matrix(
        [read_report(reports["failing"], "failing"), read_report(reports["passing"], "passing")]
    )
    table = matrix.html_table(compact=True, styled=True)
    assert table.startswith("<style>")
    assert '<div class="matrix-scroll"><table class="matrix compact">' in table
    assert '<td class="failed" title="failed">FAIL</td>' in table
    assert '<td class="not-judged" title="not judged">\u2013</td>' in table
    assert ">passed<" not in table  # every verdict is a word, its full words the title
    assert "overflow-x: auto" in table
    assert "position: sticky" in table
    # The standalone page writes each verdict out, in the same scrolling box.
    page = matrix.html()
    assert '<div class="matrix-scroll"><table class="matrix">' in page
    assert '<td class="failed">failed</td>' in page


def _docs_extension(monkeypatch: pytest.MonkeyPatch, *implementations: Any) -> Any:
    """The docs' ``conformance_matrix`` extension, loaded as the build loads it.

    It runs *implementations* (name, options, need) instead of the site's.
    """
    path = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "conformance_matrix.py"
    spec = importlib.util.spec_from_file_location("conformance_matrix", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "IMPLEMENTATIONS", implementations)
    return module


@pytest.mark.slow
def test_the_docs_page_runs_each_implementation_and_names_what_it_could_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The site's matrix: one column per run, a failure shown failed, a missing tool named."""
    extension = _docs_extension(
        monkeypatch,
        ("reference", ("--only", "service-order"), None),
        ("broken", ("--service", "tests.gallery.services:AsksBeforeChecking",
                    "--only", "service-order"), None),
        ("needs a browser", ("--provider", "x:y"), "Chromium"),
    )  # fmt: skip

    def chromium_missing(need: str | None) -> bool:
        return need == "Chromium"

    monkeypatch.setattr(extension, "_missing", chromium_missing)
    runs = extension.run_all(tmp_path)
    assert [name for name, _ in runs.reports] == ["reference", "broken"]
    assert runs.not_run == [("needs a browser", "needs Chromium")]
    matrix: Matrix = runs.matrix
    reference, broken = matrix.columns
    assert reference.ok
    assert not broken.ok
    assert matrix.cell(broken, "SVC-PASS-1") == MatrixCell("failed", "", "MUST")
    assert {(c.seed, c.profile) for c in matrix.columns} == {(1, "quick")}


@pytest.mark.slow
def test_a_run_the_machine_was_too_busy_to_judge_is_made_again_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 3b's "too little CPU to tell" in a report: that run is made again, by itself.

    The page's nine runs share the machine; under other load the terminal's
    run once left ``PRV-LOOP-1`` untested that way, a failed column for the
    machine's load alone.
    """
    extension = _docs_extension(
        monkeypatch,
        ("reference", ("--only", "service-registration"), None),
        ("broken", ("--service", "tests.gallery.services:AsksBeforeChecking",
                    "--only", "service-order"), None),
    )  # fmt: skip
    judged: list[str] = []

    def busy_once(report: Path) -> bool:
        judged.append(report.name)
        return report.name == "00.json" and judged.count(report.name) == 1

    monkeypatch.setattr(extension, "too_busy", busy_once)
    runs = extension.run_all(tmp_path)
    assert runs.again == ["reference"]
    assert judged == ["00.json", "00.json", "01.json"]
    assert [name for name, _ in runs.reports] == ["reference", "broken"]
    reference, broken = runs.matrix.columns
    assert reference.ok
    assert not broken.ok


def test_a_report_is_too_busy_only_for_a_requirement_untested_for_want_of_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only Rule 3b's reason makes a run again; a failure, or untested for another, does not."""
    extension = _docs_extension(monkeypatch)
    busy = "not judged: the machine gave the event loop too little CPU to tell a blocking subject"
    cases = {
        "busy": [{"status": "untested", "message": busy}],
        "failed": [{"status": "failed", "message": busy}],
        "unjudged": [{"status": "untested", "message": "no example judged it"}],
        "passed": [{"status": "passed", "message": ""}],
    }
    found = {}
    for name, results in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"results": results}), encoding="utf-8")
        found[name] = extension.too_busy(path)
    assert found == {"busy": True, "failed": False, "unjudged": False, "passed": False}


@pytest.mark.slow
def test_a_run_that_writes_no_report_fails_the_docs_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subject the command line cannot load writes no report: the build stops, naming it."""
    extension = _docs_extension(monkeypatch, ("nowhere", ("--provider", "no_such_module:x"), None))
    with pytest.raises(RuntimeError, match="no report for nowhere"):
        extension.run_all(tmp_path)
