"""A driver's declared ways of doing an action: each is drawn, in every run, and crosses the pipe.

A UI often has more than one gesture for the same thing: Esc and Ctrl-C both
dismiss the terminal's batch, and an MCP client's human declines a form or
cancels it. Each example builds a fresh subject, so a driver that alternated
on its own only ever used its first way; the suite now draws the way, and
the gallery's ``ctrl-c-aborts`` and ``cancel-as-skip`` are caught by it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.extra.stdio import ChildFailed
from dsh_user_interaction.extra.stdio._values import WireError
from dsh_user_interaction_conformance import (
    Capabilities,
    Dismiss,
    Skip,
    Subject,
    reference_subject,
    run_suite,
    with_capabilities,
)
from dsh_user_interaction_conformance._behaviour import Behaviour, ways_in
from dsh_user_interaction_conformance._harness._subjects import _behaviour, _capabilities
from dsh_user_interaction_conformance.child import _behaviour as _decoded
from dsh_user_interaction_conformance.child import _check_ways
from dsh_user_interaction_conformance.strategies import behaviours, requests

ROOT = Path(__file__).resolve().parents[1]
#: A UI with three ways to dismiss, two to skip and two to pick.
WAYS = Capabilities(
    ways={"dismiss": ("esc", "ctrl-c", "close-button"), "skip": ("s", "tab"), "pick": ("a", "b")}
)


@pytest.mark.parametrize(
    ("ways", "error", "named"),
    [
        ({"close": ["x"]}, ValueError, "unknown action 'close'"),
        ({"dismiss": "esc"}, TypeError, "sequence of names, got 'esc'"),
        ({"dismiss": []}, ValueError, "one way or more"),
        ({"dismiss": ["esc", ""]}, ValueError, "non-empty string"),
        ({"dismiss": ["esc", 1]}, ValueError, "non-empty string"),
        ({"dismiss": ["esc", "esc"]}, ValueError, "names a way twice"),
        (["dismiss"], TypeError, "must be a mapping"),
    ],
)
def test_malformed_ways_are_refused_by_name(ways: Any, error: type[Exception], named: str) -> None:
    """Each mistake in a declaration is an error naming the action and the problem."""
    with pytest.raises(error, match=named):
        Capabilities(ways=ways)


def test_declared_ways_are_read_only_and_compare_by_value() -> None:
    """A declaration is kept as tuples, cannot be changed, and hashes like its flags."""
    listed = {"dismiss": ["esc", "ctrl-c"]}
    declared = Capabilities(ways=listed)
    listed["dismiss"].append("later")
    assert declared.ways_of("dismiss") == ("esc", "ctrl-c")
    assert declared.ways_of("skip") == ()
    with pytest.raises(TypeError):
        declared.ways["skip"] = ("x",)  # type: ignore[index]
    assert declared == Capabilities(ways={"dismiss": ("esc", "ctrl-c")})
    assert declared != Capabilities()
    assert hash(declared) == hash(Capabilities())  # the flags alone are hashed
    assert declared.ways_as_dict() == {"dismiss": ["esc", "ctrl-c"]}
    assert "ways" not in declared.as_dict()


_SCHEMA = json.loads((ROOT / "spec" / "schema" / "harness.schema.json").read_text("utf-8"))
_BEHAVIOUR: Any = jsonschema.Draft202012Validator(
    {"$defs": _SCHEMA["$defs"], "$ref": "#/$defs/behaviour"}
)


@given(st.data())
def test_a_way_crosses_the_pipe_unchanged_and_as_the_schema_says(data: st.DataObject) -> None:
    """What the suite sends for a behaviour decodes in the child to the same behaviour."""
    request: AskUserQuestionRequest = data.draw(requests())
    behaviour: Behaviour = data.draw(behaviours(request, WAYS, include_nothing=True))
    wire = json.loads(json.dumps(_behaviour(behaviour)))
    _BEHAVIOUR.validate(wire)
    assert _decoded(wire) == behaviour
    _check_ways(behaviour, WAYS)  # every drawn way is a declared one


def test_the_child_refuses_a_way_it_never_declared() -> None:
    """A way the child's capabilities do not list is a protocol error naming it."""
    with pytest.raises(WireError, match=r"dismiss has no way 'alt-f4' \(declared: esc"):
        _check_ways(Dismiss("alt-f4"), WAYS)
    with pytest.raises(WireError, match=r"skip has no way 's' \(declared: none\)"):
        _check_ways((Skip("s"),), None)
    with pytest.raises(WireError, match="is not a non-empty string"):
        _decoded({"kind": "dismiss", "way": 3})


def test_a_childs_hello_declares_its_ways() -> None:
    """The ways in a hello become the run's; malformed ones stop the run with a set-up error."""
    hello = {"capabilities": {"can_skip": False, "ways": {"dismiss": ["decline", "cancel"]}}}
    declared = _capabilities(hello, cancellable=True)
    assert declared.ways_of("dismiss") == ("decline", "cancel")
    assert declared.can_skip is False
    with pytest.raises(ChildFailed, match="'ways' is refused: ways: unknown action 'close'"):
        _capabilities({"capabilities": {"ways": {"close": ["x"]}}}, cancellable=True)


class _Recording:
    """The reference driver, noting each way it is asked to use."""

    def __init__(self, inner: Any, seen: set[tuple[str, str | None]]) -> None:
        self.inner = inner
        self.seen = seen
        self.capabilities = WAYS

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        self.seen.update(ways_in(behaviour))
        await self.inner.perform(request, behaviour)

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        shown: bool = await self.inner.is_shown(request)
        return shown


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_declared_way_is_used_in_every_default_run(seed: int) -> None:
    """Over one default run of the provider checks, the driver performs every way it declared."""
    seen: set[tuple[str, str | None]] = set()

    @with_capabilities(WAYS)
    def recorded() -> Subject:
        subject = reference_subject()
        return Subject(subject.provider, _Recording(subject.driver, seen), name="recorded")

    report = run_suite(subject_factory=recorded, kinds=["provider"], profile="default", seed=seed)
    assert report.ok, [r.message for r in report.results if r.status == "failed"]
    assert report.as_dict()["ways"] == WAYS.ways_as_dict()
    wanted = {(action, way) for action, names in WAYS.ways.items() for way in names}
    assert wanted <= seen, wanted - seen
    assert ("type", None) in seen  # an action with one way names none
    assert not any(way is None for action, way in seen if action in WAYS.ways)
