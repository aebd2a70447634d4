"""The front module re-exports exactly its ``__all__``, and nothing does work on import."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

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
    """Apart from the model-facing modules, every submodule is private."""
    names = {info.name for info in pkgutil.iter_modules(dsh_user_interaction.__path__)}
    assert {name for name in names if not name.startswith("_")} <= {"tool", "plan_review"}


def test_exported_objects_claim_the_front_module_or_a_private_one() -> None:
    """Classes and functions come from private modules; the front module only re-exports."""
    for name in dsh_user_interaction.__all__:
        module = getattr(getattr(dsh_user_interaction, name), "__module__", None)
        if module is not None and module.startswith("dsh_user_interaction"):
            assert module.split(".")[1].startswith("_"), (name, module)
            importlib.import_module(module)


def test_the_core_imports_no_test_or_validation_libraries() -> None:
    """Importing the core must not pull in hypothesis, pytest, pydantic or jsonschema."""
    code = (
        "import sys, dsh_user_interaction;"
        "heavy = {'hypothesis', 'pytest', 'pydantic', 'jsonschema'} & set(sys.modules);"
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
