"""Run every example in these pages: ``>>>`` doctests in Python code blocks.

A page's examples share one namespace, so under pytest-xdist they must run
in one process: each page is an ``xdist_group``, which ``--dist loadgroup``
(the noxfile's) keeps together.
"""

import pytest
from sybil import Sybil
from sybil.integration.pytest import SybilItem
from sybil.parsers.myst import PythonCodeBlockParser

pytest_collect_file = Sybil(parsers=[PythonCodeBlockParser()], patterns=["*.md"]).pytest()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each page's examples in one group, named after the page."""
    for item in items:
        if isinstance(item, SybilItem):
            item.add_marker(pytest.mark.xdist_group(str(item.path)))
