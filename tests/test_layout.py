"""Each suite in a subpackage of its own, whose front module only re-exports.

The conformance package keeps each suite in a private subpackage
(``_provider``, ``_service``, ``_store``, ``_harness``). The store suite's
front module loads a module only when one of its names is asked for, as the
package's own front module does: the command line imports the store suite's
loop on every run, and its checks only for a store run.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

#: The suites' subpackages.
SUITES = ("_provider", "_service", "_store", "_harness")


@pytest.mark.parametrize("suite", SUITES)
def test_a_suite_front_module_holds_exactly_its_all(suite: str) -> None:
    """Every name in a suite's ``__all__`` resolves, and the front module holds no other."""
    front = importlib.import_module(f"dsh_user_interaction_conformance.{suite}")
    assert len(front.__all__) == len(set(front.__all__))
    for name in front.__all__:
        assert getattr(front, name) is not None, name
    public = {
        name
        for name in vars(front)
        if not name.startswith("_") and not isinstance(getattr(front, name), type(sys))
    }
    assert public == set(front.__all__)


def test_the_store_front_module_loads_exactly_its_all_lazily() -> None:
    """The store suite's type-checking imports, its table of modules and ``__all__`` agree."""
    from dsh_user_interaction_conformance import _store

    assert _store.__file__ is not None
    tree = ast.parse(Path(_store.__file__).read_text(encoding="utf-8"))
    guarded = [
        node
        for statement in tree.body
        if isinstance(statement, ast.If) and ast.unparse(statement.test) == "typing.TYPE_CHECKING"
        for node in statement.body
    ]
    imported: dict[str, str] = {}
    for node in guarded:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        assert node.level == 1
        for alias in node.names:
            assert alias.asname == alias.name, alias.name  # ``X as X``: a re-export
            imported[alias.name] = str(node.module)
    assert imported == vars(_store)["_MODULES"]
    assert set(imported) == set(_store.__all__)
    with pytest.raises(AttributeError, match="StoreMachine"):
        _ = vars(_store)["__getattr__"]("StoreMachine")


def test_the_command_line_loads_the_store_checks_only_for_a_store_run() -> None:
    """Importing the command line loads the store suite's loop, not its machine or runner."""
    code = (
        "import sys, dsh_user_interaction_conformance.__main__;"
        "print(sorted(m for m in sys.modules "
        "if m.startswith('dsh_user_interaction_conformance._store')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded: list[str] = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert loaded == [
        "dsh_user_interaction_conformance._store",
        "dsh_user_interaction_conformance._store._loop",
    ]
