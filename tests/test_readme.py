"""The README's Python examples run, and print what they say they print."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_examples_run_and_print_what_they_claim() -> None:
    """Each block executes; a ``print(...)  # output`` line prints exactly that output."""
    assert BLOCKS
    for block in BLOCKS:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})
        claims = re.findall(r"^print\(.*\)\s+# (.*)$", block, re.M)
        assert out.getvalue().splitlines() == claims
