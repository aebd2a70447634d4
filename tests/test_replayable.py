"""A seed's examples depend on the seed alone, not on what the process imported.

Hypothesis mixes constants from the source of every loaded local module into
a few draws; the suites run inside ``replayable()``, which fixes that set to
the constants of the suite's and the reference's own source files.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

from dsh_user_interaction_conformance._engine import replayable

_MODULE = """
WORDS = [{words}]
"""


def draws(run_seed: int) -> list[str]:
    drawn: list[str] = []

    @seed(run_seed)
    @settings(database=None, max_examples=300, phases=[Phase.generate])
    # Only text like the probe modules' constants is allowed, so that however
    # many other local modules the process holds, theirs cannot crowd them out.
    @given(st.text(alphabet="zab-0123456789", min_size=5, max_size=8))
    def collect(text: str) -> None:
        drawn.append(text)

    collect()
    return drawn


def load_constants(folder: Path, name: str) -> None:
    """Import a local module whose source holds many distinctive string constants."""
    words = ", ".join(repr(f"zz-{name[-1]}-{n}") for n in range(200))
    (folder / f"{name}.py").write_text(_MODULE.format(words=words), encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


def test_inside_replayable_a_new_module_changes_no_draw(tmp_path: Path) -> None:
    with replayable():
        before = draws(3)
    load_constants(tmp_path, "dsh_probe_constants_a")
    with replayable():
        after = draws(3)
    assert before == after
    assert not any(text.startswith("zz-") for text in after)


def test_outside_it_the_new_module_reaches_the_draws(tmp_path: Path) -> None:
    """The control: without replayable(), the module's constants are drawn."""
    load_constants(tmp_path, "dsh_probe_constants_b")
    saved = providers.CONSTANTS_CACHE
    providers.CONSTANTS_CACHE = type(saved)(1024)  # as a new process would start
    try:
        drawn = draws(3)
    finally:
        providers.CONSTANTS_CACHE = saved
    assert any(text.startswith("zz-b-") for text in drawn)


def test_it_puts_hypothesis_back_as_it_was() -> None:
    getter, cache = providers._get_local_constants, providers.CONSTANTS_CACHE
    with replayable():
        assert providers.CONSTANTS_CACHE is not cache
        suite = providers._get_local_constants()
        # The suite's own awkward values are there, loaded or not; no test's are.
        assert "\u202e" in suite.strings  # from the store suite's text pieces
        assert "zz-a-0" not in suite.strings
    assert (providers._get_local_constants, providers.CONSTANTS_CACHE) == (getter, cache)
