"""A ``requirements-table`` directive built from the conformance suite's registry.

The table lists each requirement of ``spec/user-interaction.md`` with its level,
sentence and the checks that cover it: the provider and service suite's, and
for section 7 the store suite's, or the reference's own tests for the few
requirements no suite can judge on a store (``_reference_only``). The build fails (a warning under
``-W``) when a requirement has no check or a check cites an unknown ID, so the
docs, the spec and the suite cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from dsh_user_interaction_conformance import CHECKS, requirements
from dsh_user_interaction_conformance._reference_only import REFERENCE_ONLY
from dsh_user_interaction_conformance._store._durable import DURABLE_CHECKS
from dsh_user_interaction_conformance._store._machine import STORE_CHECK, STORE_REQUIREMENTS

logger = logging.getLogger(__name__)


class RequirementsTable(SphinxDirective):
    """Render the requirement registry as a table."""

    def run(self) -> list[nodes.Node]:
        """Build the table; warn about uncovered requirements and unknown IDs."""
        known = requirements()
        where = self.get_location()
        covering: dict[str, list[str]] = {rid: [] for rid in known}
        # The provider and service suite's checks, then the store suite's (section 7).
        cited = [(check.name, check.requirements) for check in CHECKS]
        cited.append((STORE_CHECK, STORE_REQUIREMENTS))
        cited.extend((check.name, check.requirements) for check in DURABLE_CHECKS)
        for name, rids in cited:
            for rid in rids:
                if rid not in covering:
                    logger.warning(
                        "check %s cites unknown requirement %s", name, rid, location=where
                    )
                    continue
                covering[rid].append(name)
        for rid, tests in REFERENCE_ONLY.items():
            if rid in covering and not covering[rid]:
                covering[rid].append(f"the reference's tests ({tests})")
        for rid, names in covering.items():
            if not names:
                logger.warning("requirement %s has no conformance check", rid, location=where)
        table = nodes.table(classes=["requirements"])
        group = nodes.tgroup(cols=4)
        table += group
        for width in (14, 8, 60, 18):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += self._row(["ID", "Level", "Requirement", "Checks"])
        body = nodes.tbody()
        group += body
        for rid, requirement in known.items():
            body += self._row(
                [rid, requirement.level, requirement.sentence, ", ".join(covering[rid])]
            )
        return [table]

    @staticmethod
    def _row(cells: list[str]) -> nodes.row:
        row = nodes.row()
        for text in cells:
            paragraph = nodes.paragraph()
            # The spec writes code in backticks; render those parts as literals.
            for number, part in enumerate(text.split("`")):
                paragraph += nodes.literal(text=part) if number % 2 else nodes.Text(part)
            entry = nodes.entry()
            entry += paragraph
            row += entry
        return row


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("requirements-table", RequirementsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
