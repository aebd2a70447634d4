"""Run every example in these pages: ``>>>`` doctests in Python code blocks.

A page's examples share one namespace, so under pytest-xdist they must run
in one process, in order. The scheduler below deals every other test out
singly, as ``--dist load`` does, and each page as one unit. (pytest-xdist's
own ``--dist loadgroup`` would do it with ``xdist_group`` marks, but with
pytest 9.2 its renamed node ids no longer reach the scheduler, and the
pages were split again.)
"""

from __future__ import annotations

from typing import Any

from sybil import Sybil
from sybil.parsers.myst import PythonCodeBlockParser

pytest_collect_file = Sybil(parsers=[PythonCodeBlockParser()], patterns=["*.md"]).pytest()


def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:  # noqa: ANN401 - xdist's own types
    """Schedule each test singly, and the examples of each docs page together."""
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only under pytest-xdist

    class PagesTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            page, _, _ = nodeid.partition("::")
            return page if page.endswith(".md") else nodeid

    return PagesTogether(config, log)
