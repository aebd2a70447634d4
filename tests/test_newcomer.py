"""What a newcomer meets first: the suite's command without its extra, and a missing tool.

``python -m dsh_user_interaction_conformance`` installed without the
``conformance`` extra says, in one line, what to install, and exits 2 (a
set-up error), as the package's own command does for the terminal's extra.
A test that needs a tool the machine lacks (tmux, Chromium's headless shell,
PostgreSQL, Node.js) is skipped naming it, outside CI; in CI, where every
tool is installed, it fails instead (``tests/helpers.py``: ``need``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import TOOLS, need, unavailable

ROOT = Path(__file__).resolve().parent.parent


def test_the_suites_command_without_its_extra_says_what_to_install(tmp_path: Path) -> None:
    """One line with the pip command, exit status 2, and no traceback.

    Hypothesis is what a run needs of the extra at once (pytest and
    jsonschema only for the plugin and ``--validate``).
    """
    hidden = "hypothesis"
    # A sitecustomize hides the module, as if the extra were not installed.
    (tmp_path / "sitecustomize.py").write_text(
        f"import sys\nsys.modules[{hidden!r}] = None\n", encoding="utf-8"
    )
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction_conformance", "--profile", "quick"],
        env={**os.environ, "PYTHONPATH": path},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: the conformance suite needs {hidden}, which is not installed: "
        "pip install 'dsh-user-interaction[conformance]'"
    ]


def test_imported_without_its_extra_the_command_module_raises() -> None:
    """Imported, not run, the module lets the import error stand, for the importer to see."""
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "try:\n"
        "    import dsh_user_interaction_conformance.__main__\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error.name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "hypothesis"), done.stderr


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_missing_tool_skips_naming_it_outside_ci(
    tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing on PATH, CI unset: the test is skipped, and the reason names the tool and package."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        need(tool, str(tmp_path / "nowhere"))
    assert f"needs {tool}" in str(skipped.value)
    assert f"apt-get install {TOOLS[tool]}" in str(skipped.value)


def test_a_missing_tool_fails_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI installs every tool: there a missing one fails the run, never a quiet skip."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="needs node"):
        need("node")
    with pytest.raises(pytest.fail.Exception, match="needs PostgreSQL"):
        unavailable("needs PostgreSQL: no server can be started")


def test_a_tool_found_is_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool on PATH, or at the path given, is returned; nothing is skipped."""
    tool = tmp_path / "tmux"
    tool.write_text("#!/bin/sh\n", encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert need("tmux") == str(tool)
    assert need("chromium-headless-shell", str(tool)) == str(tool)
