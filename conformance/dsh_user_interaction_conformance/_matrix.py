"""The conformance matrix: several implementations' JSON reports side by side.

Design notes:

Rule 1: a cell says what its report says, and nothing more. Each report
(``--json``) is one column; each requirement one row, in the spec's order,
then any requirement a report names that this suite does not know, in the
order met. A cell is that report's verdict on that requirement: passed,
failed, warning (a ``SHOULD`` that failed), expected failure with the
baseline's reason, skipped with the capability that excludes it, or
untested. A requirement a report does not judge at all (a provider's, in a
service's report) is "not judged".

Rule 2: every report is checked before anything is written. A file that is
not JSON, or a report without a field the matrix shows, raises
:class:`ReportError`, naming the file and the field.

Rule 3: the text a report carries is text. In Markdown a ``|`` is escaped
and a line break is a space; in HTML everything is escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

from ._registry import requirements

__all__ = ["Matrix", "MatrixCell", "MatrixColumn", "ReportError", "build_matrix", "read_report"]

#: The statuses a report's verdicts take, and how the matrix words them.
_WORDS: Final = {
    "passed": "passed",
    "failed": "failed",
    "warning": "warning",
    "expected-failure": "expected failure",
    "skipped": "skipped",
    "untested": "untested",
}
#: The cell of a requirement the report does not judge.
NOT_JUDGED: Final = "not judged"
#: The same, in a word each, for a table that must fit a page's column
#: (:meth:`Matrix.html_table` with ``compact=True``); the full words are each
#: cell's title.
_SHORT: Final = {
    "passed": "pass",
    "failed": "FAIL",
    "warning": "warn",
    "expected-failure": "expected",
    "skipped": "skip",
    "untested": "untested",
}
_SHORT_NOT_JUDGED: Final = "\u2013"
#: The table's style, for the standalone page and the docs alike: it scrolls
#: sideways inside its box when the page is narrower than it (a phone), and
#: the requirement column stays in view meanwhile.
TABLE_STYLE: Final = """
.matrix-scroll { overflow-x: auto; max-width: 100%; -webkit-overflow-scrolling: touch; }
table.matrix { border-collapse: separate; border-spacing: 0; font-size: 0.8rem; margin: 0; }
table.matrix th, table.matrix td {
  border: 1px solid #bbb; padding: 0.15rem 0.35rem; text-align: left; vertical-align: top;
}
table.matrix.compact { font-size: 0.72rem; }
table.matrix.compact th, table.matrix.compact td { padding: 0.1rem 0.2rem; }
table.matrix thead th { vertical-align: bottom; }
table.matrix th[scope="row"] {
  position: sticky; left: 0; z-index: 1; white-space: nowrap;
  background: var(--color-background-primary, #fff);
}
table.matrix th[scope="row"] small { color: #666; }
table.matrix tr.detail td, table.matrix tr.detail th[scope="row"] { background: #f3f3f3; }
table.matrix td.passed { background: #e3f5e1; }
table.matrix td.failed { background: #f9d6d5; font-weight: bold; }
table.matrix td.warning, table.matrix td.expected-failure { background: #fcefd2; }
table.matrix td.skipped, table.matrix td.untested, table.matrix td.not-judged { color: #555; }
table.matrix.compact td { text-align: center; }
table.matrix.compact tbody tr:not(.detail) td { white-space: nowrap; }
"""


class ReportError(ValueError):
    """A report the matrix cannot read: the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class MatrixCell:
    """One report's verdict on one requirement."""

    #: ``passed``, ``failed``, ``warning``, ``expected-failure``, ``skipped`` or ``untested``.
    status: str
    #: The baseline's reason for an expected failure, or the capability that excludes a skip.
    note: str = ""
    #: The requirement's level as the report gives it (``MUST``, ``SHOULD``...).
    level: str = ""

    def words(self) -> str:
        """The cell as a reader sees it: the status, and its reason where it has one."""
        said = _WORDS.get(self.status, self.status)
        return f"{said}: {self.note}" if self.note else said


@dataclass(frozen=True, slots=True)
class MatrixColumn:
    """One implementation: what its report says about the run, and its verdicts."""

    name: str
    #: The kinds of subject judged (``provider``, ``service``), as the report names them.
    kinds: tuple[str, ...]
    suite_version: str
    spec_version: str
    #: The seed, or ``None`` for a derandomised run.
    seed: int | None
    profile: str
    ok: bool
    #: Verdicts by requirement ID.
    cells: Mapping[str, MatrixCell]


@dataclass(frozen=True, slots=True)
class Matrix:
    """Implementations as columns, requirements as rows (see :func:`build_matrix`)."""

    columns: tuple[MatrixColumn, ...]
    #: Each row's requirement ID and level, in the spec's order.
    rows: tuple[tuple[str, str], ...]

    def cell(self, column: MatrixColumn, requirement: str) -> MatrixCell | None:
        """The column's verdict on *requirement*; ``None`` where its report does not judge it."""
        return column.cells.get(requirement)

    def markdown(self) -> str:
        """The matrix as a Markdown table, with a header row per run detail."""

        def escaped(text: str) -> str:
            flat = " ".join(text.split())
            return flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")

        names = [escaped(column.name) for column in self.columns]
        lines = [
            "| requirement | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(self.columns),
        ]
        for label, values in _details(self.columns):
            lines.append(f"| *{label}* | " + " | ".join(escaped(v) for v in values) + " |")
        for rid, level in self.rows:
            cells: list[str] = []
            for column in self.columns:
                cell = self.cell(column, rid)
                words = escaped(cell.words()) if cell is not None else NOT_JUDGED
                failed = cell is not None and cell.status == "failed"
                cells.append(f"**{words}**" if failed else words)
            lines.append(f"| `{rid}` ({level}) | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def html(self, title: str = "Conformance matrix") -> str:
        """The matrix as a standalone HTML page; every text is escaped."""
        return _PAGE.format(title=html.escape(title), style=TABLE_STYLE, table=self.html_table())

    def html_table(self, *, compact: bool = False, styled: bool = False) -> str:
        """The matrix as an HTML table in a box that scrolls sideways; every text is escaped.

        With *compact*, each cell is one word (``pass``, ``FAIL``, ``warn``,
        ``expected``, ``skip``, ``untested``, a dash where not judged) and its
        full words are its title, so that the table fits a page's column
        beside the site's navigation. With *styled*, a ``<style>`` element
        with ``TABLE_STYLE`` comes first (a page that has not its own).
        """
        e = html.escape
        head = "".join(f'<th scope="col">{e(c.name)}</th>' for c in self.columns)
        body: list[str] = []
        for label, values in _details(self.columns):
            row = "".join(f"<td>{e(value)}</td>" for value in values)
            body.append(f'<tr class="detail"><th scope="row">{e(label)}</th>{row}</tr>')
        for rid, level in self.rows:
            row = ""
            for column in self.columns:
                cell = self.cell(column, rid)
                status, words = (
                    ("not-judged", NOT_JUDGED) if cell is None else (cell.status, cell.words())
                )
                if compact:
                    short = _SHORT_NOT_JUDGED if cell is None else _SHORT.get(status, status)
                    row += f'<td class="{e(status)}" title="{e(words)}">{e(short)}</td>'
                else:
                    row += f'<td class="{e(status)}">{e(words)}</td>'
            body.append(
                f'<tr><th scope="row"><code>{e(rid)}</code> <small>{e(level)}</small></th>'
                f"{row}</tr>"
            )
        kind = "matrix compact" if compact else "matrix"
        style = f"<style>{TABLE_STYLE}</style>\n" if styled else ""
        return (
            f'{style}<div class="matrix-scroll"><table class="{kind}">\n'
            f'<thead><tr><th scope="col">requirement</th>{head}</tr></thead>\n'
            "<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table></div>"
        )


_PAGE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; }}
{style}
</style>
</head>
<body>
<h1>{title}</h1>
{table}
</body>
</html>
"""


def _details(columns: Sequence[MatrixColumn]) -> list[tuple[str, list[str]]]:
    """The run details shown above the verdicts, one row each."""
    return [
        ("kind", [", ".join(c.kinds) for c in columns]),
        ("verdict", ["PASSED" if c.ok else "FAILED" for c in columns]),
        ("suite", [c.suite_version for c in columns]),
        ("spec", [c.spec_version for c in columns]),
        ("seed", ["derandomized" if c.seed is None else str(c.seed) for c in columns]),
        ("profile", [c.profile for c in columns]),
        # A SHOULD never fails a run: each one broken is named here, above the rows.
        ("SHOULDs broken", [_shoulds_broken(c) for c in columns]),
    ]


def _shoulds_broken(column: MatrixColumn) -> str:
    """The SHOULD requirements *column*'s report warns of, in its order; ``none`` without any."""
    broken = [requirement for requirement, cell in column.cells.items() if cell.status == "warning"]
    return ", ".join(broken) if broken else "none"


def _object(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        msg = f"{where}: not a JSON object"
        raise ReportError(msg)
    return cast("dict[str, object]", value)


def _get(found: Mapping[str, object], key: str, where: str) -> object:
    if key not in found:
        msg = f"{where}: no {key!r} field"
        raise ReportError(msg)
    return found[key]


def _wrong(key: str, value: object, wanted: str, where: str) -> ReportError:
    return ReportError(f"{where}: {key!r} is {value!r}, not {wanted}")


def _text(found: Mapping[str, object], key: str, where: str) -> str:
    value = _get(found, key, where)
    if not isinstance(value, str):
        raise _wrong(key, value, "a string", where)
    return value


def _cell(found: Mapping[str, object], where: str) -> tuple[str, MatrixCell]:
    rid = _text(found, "id", where)
    status = _text(found, "status", where)
    if status not in _WORDS:
        raise _wrong("status", status, f"one of {', '.join(_WORDS)}", where)
    message = found.get("message", "")
    note = message if isinstance(message, str) and status in {"expected-failure", "skipped"} else ""
    level = found.get("level", "")
    return rid, MatrixCell(status, note.removeprefix("baselined: "), str(level or ""))


def read_report(path: str | Path, name: str | None = None) -> MatrixColumn:
    """One column from the JSON report at *path*, named *name* or after its subject.

    Raises :class:`ReportError`, naming the file and the field, for a file
    that cannot be read or a report the matrix cannot show.
    """
    where = str(path)
    try:
        found: object = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        msg = f"{where}: not a JSON report ({error})"
        raise ReportError(msg) from None
    report = _object(found, where)
    subjects = _object(_get(report, "subjects", where), f"{where}: 'subjects'")
    if name is None:
        named = [str(subject).split(" (", 1)[0] for subject in subjects.values()]
        name = " + ".join(named) or Path(path).stem
    cells: dict[str, MatrixCell] = {}
    for key in ("results", "binding"):
        listed = _get(report, key, where)
        if not isinstance(listed, list):
            raise _wrong(key, listed, "a list", where)
        for index, entry in enumerate(cast("list[object]", listed)):
            at = f"{where}: {key}[{index}]"
            rid, cell = _cell(_object(entry, at), at)
            cells[rid] = cell
    seed = _get(report, "seed", where)
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise _wrong("seed", seed, "an integer or null", where)
    ok = _get(report, "ok", where)
    if not isinstance(ok, bool):
        raise _wrong("ok", ok, "true or false", where)
    return MatrixColumn(
        name=name,
        kinds=tuple(subjects),
        suite_version=_text(report, "suite_version", where),
        spec_version=_text(report, "spec_version", where),
        seed=seed,
        profile=_text(report, "profile", where),
        ok=ok,
        cells=cells,
    )


def build_matrix(columns: Sequence[MatrixColumn]) -> Matrix:
    """The matrix of *columns*: a row for each requirement any of them judges (Rule 1)."""
    known = requirements()
    judged = {rid for column in columns for rid in column.cells}
    rows: list[tuple[str, str]] = [(rid, req.level) for rid, req in known.items() if rid in judged]
    seen = {rid for rid, _ in rows}
    for column in columns:
        for rid, cell in column.cells.items():
            if rid not in seen:
                seen.add(rid)
                rows.append((rid, cell.level or "?"))
    return Matrix(tuple(columns), tuple(rows))
