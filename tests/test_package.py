"""The release: an sdist and a wheel that build, pass twine's checks, and install and run.

The wheel is installed, with the ``conformance`` extra, into a fresh virtual
environment (uv's, from its cache), and the README's first command runs
from it in a folder outside the checkout, so what passes is the installed
copy, not the source tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import dsh_user_interaction

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: Every command here is bounded; none should come near.
BOUND = 300


def _run(*command: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The sdist and the wheel, built from this checkout (hatchling, without isolation)."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", out)
    yield out
    shutil.rmtree(out, ignore_errors=True)


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


def test_the_sdist_and_the_wheel_pass_twines_checks(dist: Path) -> None:
    """``twine check``: the metadata and the README render as the index would show them."""
    built = sorted(path.name for path in dist.iterdir())
    version = dsh_user_interaction.__version__
    assert built == [
        f"dsh_user_interaction-{version}-py3-none-any.whl",
        f"dsh_user_interaction-{version}.tar.gz",
    ]
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()))
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_the_wheel_holds_the_packages_the_spec_and_the_type_marker_and_nothing_else(
    dist: Path,
) -> None:
    """Both packages with ``py.typed``, the spec and its schemas; no tests, no caches."""
    names = zipfile.ZipFile(_wheel(dist)).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    version = dsh_user_interaction.__version__
    assert tops == {
        "dsh_user_interaction",
        "dsh_user_interaction_conformance",
        f"dsh_user_interaction-{version}.dist-info",
    }
    for marker in ("dsh_user_interaction/py.typed", "dsh_user_interaction_conformance/py.typed"):
        assert marker in names
    spec = {name for name in names if name.startswith("dsh_user_interaction_conformance/spec/")}
    wanted = {
        f"dsh_user_interaction_conformance/spec/{path.relative_to(ROOT / 'spec').as_posix()}"
        for path in (ROOT / "spec").rglob("*")
        if path.is_file()
    }
    assert spec == wanted
    assert any(name.endswith(".schema.json") for name in spec)
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert not [name for name in names if "/tests/" in name or name.startswith("tests/")]
    # The extras' page files are data the web provider serves.
    assert "dsh_user_interaction/extra/web/static/app.js" in names


def test_the_installed_wheel_runs_the_readmes_first_command(dist: Path, tmp_path: Path) -> None:
    """In a fresh venv, ``wheel[conformance]`` installs and the suite passes the reference.

    The command runs in an empty folder, so the copy it imports is the
    installed one, which finds its spec inside the package.
    """
    uv = shutil.which("uv")
    if uv is None:  # pragma: no cover - uv comes with the dev extra
        pytest.fail("uv is needed (the dev extra installs it)")
    venv = tmp_path / "venv"
    _run(uv, "venv", "--quiet", "--python", sys.executable, venv)
    python = venv / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    _run(uv, "pip", "install", "--quiet", "--python", python, f"{_wheel(dist)}[conformance]")
    where = tmp_path / "elsewhere"
    where.mkdir()
    imported = _run(
        python, "-c", "import dsh_user_interaction_conformance as c; print(c.__file__)", cwd=where
    )
    assert Path(imported.stdout.strip()).is_relative_to(venv)
    ran = _run(python, "-m", "dsh_user_interaction_conformance", cwd=where)
    assert ran.stdout.rstrip().endswith("PASSED"), ran.stdout[-2000:]
    # Every requirement passed but the 9 only a UI of several surfaces or one serving
    # HTTP claims: "N requirements of the subject: N - 9 passed, 9 skipped".
    said = re.search(r"(\d+) requirements of the subject: (\d+) passed, 9 skipped;", ran.stdout)
    assert said, ran.stdout[-2000:]
    assert int(said[1]) == int(said[2]) + 9


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_wheel_the_install_instructions_name_is_the_one_built(dist: Path, page: str) -> None:
    """The docs' command installs the wheel by its file name: the one the build makes."""
    named = re.findall(
        r"dist/(dsh_user_interaction-[^'\s\[]+\.whl)", (ROOT / page).read_text(encoding="utf-8")
    )
    assert named
    assert set(named) == {_wheel(dist).name}


def test_the_changelog_opens_with_this_version_dated() -> None:
    """The newest changelog entry is the version being built, with its release date."""
    changelog = (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8")
    newest = re.search(r"^## \[([^\]]+)\] - (\S+)$", changelog, re.MULTILINE)
    assert newest is not None
    assert newest[1] == dsh_user_interaction.__version__
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", newest[2]), newest[2]
