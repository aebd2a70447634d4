"""The front module re-exports exactly its ``__all__``, and nothing does work on import."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import dsh_user_interaction


def test_all_names_resolve_and_match_the_public_namespace() -> None:
    """Every name in ``__all__`` exists, and every public attribute is in ``__all__``."""
    exported = set(dsh_user_interaction.__all__)
    for name in exported:
        assert hasattr(dsh_user_interaction, name), name
    public = {
        name
        for name in vars(dsh_user_interaction)
        if not name.startswith("_")
        and not isinstance(getattr(dsh_user_interaction, name), type(sys))
    }
    assert public - {"annotations"} == exported - {"__version__"}


def test_code_lives_in_private_modules() -> None:
    """Apart from the model-facing modules and the optional extras, every submodule is private."""
    names = {info.name for info in pkgutil.iter_modules(dsh_user_interaction.__path__)}
    public = {name for name in names if not name.startswith("_")}
    assert public <= {"tool", "plan_review", "durable", "extra"}


@pytest.mark.parametrize(
    ("package", "public_modules"),
    [
        ("dsh_user_interaction.extra.terminal", {"testing"}),
        ("dsh_user_interaction.extra.mcp", {"testing"}),
        ("dsh_user_interaction.extra.stdio", set[str]()),
        ("dsh_user_interaction.durable", set[str]()),
        ("dsh_user_interaction.extra.postgres", {"testing"}),
        ("dsh_user_interaction.extra.claude", {"testing"}),
        ("dsh_user_interaction.extra.langgraph", {"testing"}),
        ("dsh_user_interaction.extra.openai_agents", set[str]()),
        ("dsh_user_interaction.extra.pydantic_ai", set[str]()),
        ("dsh_user_interaction.extra.ag_ui", {"testing"}),
    ],
)
def test_each_extra_only_re_exports(package: str, public_modules: set[str]) -> None:
    """An extra's front modules export exactly ``__all__``, from private modules of its own."""
    extra = importlib.import_module(package)
    fronts = [extra, *(importlib.import_module(f"{package}.{m}") for m in public_modules)]
    for front in fronts:
        public = {
            name
            for name in vars(front)
            if not name.startswith("_") and not isinstance(getattr(front, name), type(sys))
        }
        assert public == set(front.__all__), front.__name__
        for name in front.__all__:
            module = getattr(getattr(front, name), "__module__", None)
            if module is not None and module.startswith("dsh_user_interaction"):
                assert module.rsplit(".", 1)[1].startswith("_"), (name, module)
    if hasattr(extra, "__path__"):  # a package, not a front module of its own
        names = {info.name for info in pkgutil.iter_modules(extra.__path__)}
        assert {name for name in names if not name.startswith("_")} == public_modules


def test_exported_objects_claim_the_front_module_or_a_private_one() -> None:
    """Classes and functions come from private modules; the front module only re-exports."""
    for name in dsh_user_interaction.__all__:
        module = getattr(getattr(dsh_user_interaction, name), "__module__", None)
        if module is not None and module.startswith("dsh_user_interaction"):
            assert module.split(".")[1].startswith("_"), (name, module)
            importlib.import_module(module)


def test_the_suite_front_module_loads_exactly_its_all_lazily() -> None:
    """The suite's front module imports for type checkers what it loads on use: ``__all__``.

    Its ``if TYPE_CHECKING:`` imports, the table its ``__getattr__`` loads from
    and ``__all__`` name the same names from the same private modules; every
    name resolves, ``dir()`` lists it, and the package itself holds no other
    public name.
    """
    import dsh_user_interaction_conformance as suite

    assert suite.__file__ is not None
    tree = ast.parse(Path(suite.__file__).read_text(encoding="utf-8"))
    guarded = [
        node
        for statement in tree.body
        if isinstance(statement, ast.If)
        and ast.unparse(statement.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}
        for node in statement.body
    ]
    imported: dict[str, str] = {}
    for node in guarded:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        assert node.level == 1
        for alias in node.names:
            assert alias.asname == alias.name, alias.name  # ``X as X``: a re-export
            imported[alias.name] = str(node.module)
    assert imported == suite._MODULES
    assert set(imported) == set(suite.__all__)
    assert len(suite.__all__) == len(set(suite.__all__))
    for name in suite.__all__:
        value = getattr(suite, name)
        module = getattr(value, "__module__", None)
        if isinstance(module, str) and module.startswith("dsh_user_interaction_conformance."):
            assert module.split(".")[1].startswith("_"), (name, module)
        assert name in dir(suite)
    public = {
        name
        for name in vars(suite)
        if not name.startswith("_") and not isinstance(getattr(suite, name), type(sys))
    }
    assert public == set(suite.__all__)


def test_the_core_imports_no_test_or_validation_libraries() -> None:
    """Importing the core must not pull in test, validation, terminal or MCP libraries."""
    code = (
        "import sys, dsh_user_interaction, dsh_user_interaction.__main__;"
        "heavy = {'hypothesis', 'pytest', 'pydantic', 'jsonschema', 'prompt_toolkit', 'pyte',"
        " 'mcp', 'mcp_types', 'anyio'}"
        " & set(sys.modules);"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_type_is_a_deprecated_alias_of_type_text() -> None:
    """The behaviour action Type, renamed TypeText, still resolves, with a DeprecationWarning."""
    import pytest

    import dsh_user_interaction_conformance as suite

    with pytest.warns(DeprecationWarning, match="use TypeText"):
        alias = suite.Type  # type: ignore[attr-defined]
    assert alias is suite.TypeText
    assert "Type" not in suite.__all__
    with pytest.raises(AttributeError):
        suite.Nonexistent  # type: ignore[attr-defined]  # noqa: B018


def test_the_stdio_extra_needs_nothing_beyond_the_standard_library() -> None:
    """Importing extra.stdio pulls in no test, validation or terminal library, nor the suite."""
    code = (
        "import sys, dsh_user_interaction.extra.stdio;"
        "heavy = {'hypothesis', 'pytest', 'jsonschema', 'prompt_toolkit', 'pyte',"
        " 'dsh_user_interaction_conformance'} & set(sys.modules);"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
