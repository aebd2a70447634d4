"""Run every example in these pages: ``>>>`` doctests in Python code blocks."""

from sybil import Sybil
from sybil.parsers.myst import PythonCodeBlockParser

pytest_collect_file = Sybil(parsers=[PythonCodeBlockParser()], patterns=["*.md"]).pytest()
