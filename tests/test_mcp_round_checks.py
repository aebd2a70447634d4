"""The round-trip checks (MCP-ROUND-* of spec/mcp.md): run_tool keeps them, and each broken one is caught.

``check_round_trips`` drives a real server's tool through a real client on
revision 2026-07-28, with drawn retries. The gallery's broken ``run_tool``s
(``BROKEN_RUN_TOOLS`` in ``tests/gallery/mcp.py``) each break one statement,
and the checks must name it; detection over 20 seeds is in
``docs/performance.md``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.server.mcpserver import Context

from dsh_user_interaction.extra.mcp.testing import RoundTripFailure, RunTool, check_round_trips

from .gallery.mcp import BROKEN_RUN_TOOLS
from .helpers import GALLERY_SEEDS, rotating_seed

ROOT = Path(__file__).resolve().parents[1]
STATEMENT = re.compile(r"^- \*\*(?P<id>MCP-ROUND-\d+)\*\* \((?:MUST NOT|MUST|SHOULD)\) ", re.M)


def test_run_tool_keeps_every_round_trip_statement() -> None:
    """The reference run_tool passes the checks on the day's seed."""
    check_round_trips(seed=rotating_seed(), examples=40)


@pytest.mark.slow
@pytest.mark.parametrize("seed", GALLERY_SEEDS)
@pytest.mark.parametrize("name", sorted(BROKEN_RUN_TOOLS))
def test_a_broken_run_tool_is_caught_by_the_statement_it_breaks(name: str, seed: int) -> None:
    """Each broken run_tool fails the checks, which name a statement it breaks."""
    run, requirements = BROKEN_RUN_TOOLS[name]
    with pytest.raises(RoundTripFailure) as failed:
        check_round_trips(run, seed=seed)
    assert failed.value.requirement in requirements, str(failed.value)


async def _hangs(
    context: Context, body: Callable[[], Awaitable[str]], **options: Any
) -> str | types.InputRequiredResult:
    """A run_tool that never ends its round."""
    await asyncio.Event().wait()
    raise AssertionError  # pragma: no cover - never reached


@pytest.mark.slow
def test_a_run_tool_that_hangs_fails_within_the_bound() -> None:
    """A hang is a failure of MCP-ROUND-1 once an example passes its bound, never a hung run."""
    hangs: RunTool = _hangs
    with pytest.raises(RoundTripFailure) as failed:
        check_round_trips(hangs, seed=1, examples=1, bound=0.5)
    assert failed.value.requirement == "MCP-ROUND-1"
    assert "did not end within 0.5 s" in str(failed.value)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"examples": 0}, "examples must be a positive int, got 0"),
        ({"examples": True}, "examples must be a positive int, got True"),
        ({"bound": float("nan")}, "bound must be a positive, finite number of seconds, got nan"),
        ({"bound": -1}, "bound must be a positive, finite number of seconds, got -1"),
    ],
)
def test_the_checks_refuse_a_bad_setting(options: dict[str, Any], problem: str) -> None:
    """A setting that cannot run is refused at once, naming it."""
    with pytest.raises(ValueError, match=re.escape(problem)):
        check_round_trips(**options)


def test_the_round_trip_statements_and_their_checks_agree() -> None:
    """Every MCP-ROUND statement is cited by the checks or the tests, and every cited one exists."""
    text = (ROOT / "spec" / "mcp.md").read_text(encoding="utf-8")
    declared = [match["id"] for match in STATEMENT.finditer(text)]
    assert len(declared) == len(set(declared)) >= 5
    sources = [
        ROOT / "reference" / "dsh_user_interaction" / "extra" / "mcp" / "_round_checks.py",
        ROOT / "tests" / "test_mcp_rounds.py",
        ROOT / "tests" / "test_mcp_principal.py",
        ROOT / "tests" / "test_mcp_time.py",
        ROOT / "tests" / "test_mcp_ledger.py",
        ROOT / "tests" / "test_mcp_limits.py",
        ROOT / "tests" / "gallery" / "mcp.py",
    ]
    cited = set(re.findall(r"MCP-ROUND-\d+", "".join(p.read_text() for p in sources)))
    assert cited == set(declared), (set(declared) - cited, cited - set(declared))
