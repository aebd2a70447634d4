"""Read the Docs builds the site as ``nox -s docs`` does: the same Python, extras and strictness."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / ".readthedocs.yaml").read_text("utf-8"))
    return loaded


def _docs_session() -> ast.FunctionDef:
    return _function(ast.parse((ROOT / "noxfile.py").read_text("utf-8")), "docs")


def _session_python(session: ast.FunctionDef) -> str:
    (decorator,) = session.decorator_list
    assert isinstance(decorator, ast.Call)
    (python,) = [k.value for k in decorator.keywords if k.arg == "python"]
    assert isinstance(python, ast.Constant)
    assert isinstance(python.value, str)
    return python.value


def _sphinx_arguments(session: ast.FunctionDef) -> list[str]:
    for node in ast.walk(session):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "sphinx-build"
        ):
            return [str(a.value) for a in node.args if isinstance(a, ast.Constant)]
    msg = "the docs session runs no sphinx-build"
    raise AssertionError(msg)


def test_the_same_python_builds_both() -> None:
    """The Python of Read the Docs' build is the docs session's."""
    assert _config()["build"]["tools"]["python"] == _session_python(_docs_session())


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    (found,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return found


def test_the_same_extras_are_installed() -> None:
    """Both install this checkout with the dev extra: ``_install(session)`` and its default."""
    (install,) = _config()["python"]["install"]
    assert install == {"method": "pip", "path": ".", "extra_requirements": ["dev"]}
    session = _docs_session()
    installs = [
        node
        for node in ast.walk(session)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "_install"
    ]
    assert [(len(call.args), call.keywords) for call in installs] == [(1, [])]
    helper = _function(ast.parse((ROOT / "noxfile.py").read_text("utf-8")), "_install")
    (default,) = helper.args.defaults
    assert isinstance(default, ast.Constant)
    assert default.value == install["extra_requirements"][0]


def test_warnings_and_broken_references_fail_both() -> None:
    """``-W`` there is ``fail_on_warning`` here; ``-n`` is ``nitpicky`` in the shared conf.py."""
    config = _config()
    assert config["version"] == 2
    assert config["sphinx"] == {"configuration": "docs/conf.py", "fail_on_warning": True}
    arguments = _sphinx_arguments(_docs_session())
    assert "-W" in arguments
    assert "-n" in arguments
    assert arguments[-2] == str(Path(config["sphinx"]["configuration"]).parent)
    conf = ast.parse((ROOT / "docs" / "conf.py").read_text("utf-8"))
    values = [
        node.value
        for node in conf.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "nitpicky" for t in node.targets)
    ]
    assert [v.value for v in values if isinstance(v, ast.Constant)] == [True]
