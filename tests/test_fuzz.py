"""The fuzzer of the tool (fuzz/fuzz_tool.py): its inputs replay, and its checker catches broken tools.

The real tool is run here only to check that the fuzzer replays what it finds;
whether the tool keeps every invariant is the last test, on a fixed seed.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction.tool import ToolResult, ask_user_question
from fuzz.fuzz_tool import (
    Tool,
    check_result,
    describe,
    fuzz,
    make_case,
    run_case,
)

from .helpers import run

SEED = 20_240_601
COUNT = 2_000


async def raising(service: object, arguments: object, **options: object) -> ToolResult:
    raise RuntimeError("a broken tool")


async def two_lines(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult("Error: one\ntwo", is_error=True)


async def nan(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult('{"answers":[{"id":"q","selected":[NaN]}]}')


async def key_order(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult('{"answers":[{"selected":[],"id":"q"}]}')


async def lone_surrogate(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult("Error: a lone \ud800", is_error=True)


async def unflagged(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult("Error: refused")


async def no_prefix(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult("refused", is_error=True)


async def not_a_result(service: object, arguments: object, **options: object) -> object:
    return "Error: refused"


async def refusing(service: object, arguments: object, **options: object) -> ToolResult:
    return ToolResult("Error: refused", is_error=True)


MADE_UP = ToolResult('{"answers":[{"id":"q","selected":[]}]}')


async def made_up(service: object, arguments: object, **options: object) -> ToolResult:
    return MADE_UP


async def altered(service: Any, arguments: object, **options: Any) -> ToolResult:
    """The real tool, with every success swapped for another, and never raising."""
    try:
        result = await ask_user_question(service, arguments, **options)
    except BaseException:  # noqa: BLE001 - this stand-in never raises
        return ToolResult("Error: refused", is_error=True)
    return MADE_UP if not result.is_error else ToolResult("Error: refused", is_error=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "signature"),
    [
        (raising, "raised RuntimeError (raised in tests/test_fuzz.py:raising)"),
        (two_lines, "error text holds a line break (U+000A)"),
        (nan, "success holds a NaN or Infinity token"),
        (key_order, "success shape: an item's keys are not in the order id, selected, custom"),
        (lone_surrogate, "error text is not strict UTF-8 (a lone surrogate)"),
        (unflagged, "success is not JSON"),
        (no_prefix, "error text does not start with 'Error: '"),
        (not_a_result, "returned something other than a ToolResult"),
    ],
)
def test_the_checker_catches_a_broken_tool_on_every_input(tool: Tool, signature: str) -> None:
    """A tool broken in one way fails every input, all in the one group of that way."""
    report = fuzz(COUNT, SEED, tool=tool)
    assert report.inputs == COUNT
    assert report.failures == COUNT
    assert list(report.groups) == [signature]
    (group,) = report.groups.values()
    assert (group.seed, group.index) == (SEED, 0)
    assert group.replay_command() == f"python fuzz/fuzz_tool.py --seed {SEED} --index 0"


def test_a_tool_that_always_refuses_keeps_every_invariant() -> None:
    """No false alarms: one error line for everything breaks nothing the checker checks."""
    report = fuzz(COUNT, SEED, tool=refusing)
    assert report.inputs == COUNT
    assert report.groups == {}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "signature"),
    [
        (made_up, "success, but the provider gave no answer"),
        (altered, "success differs from the provider's answer"),
    ],
)
def test_a_made_up_success_is_caught(tool: Tool, signature: str) -> None:
    """A success the provider did not give, or that is not its answer, is a failure."""
    report = fuzz(COUNT, SEED, tool=tool)
    assert signature in report.groups
    for other in report.groups:
        assert other == signature or other.startswith("not refused, though what the tool"), other


def test_stop_on_first_stops() -> None:
    """--stop-on-first: the run ends at the first failing input."""
    report = fuzz(COUNT, SEED, tool=raising, stop_on_first=True)
    assert (report.inputs, report.failures) == (1, 1)


@pytest.mark.slow
def test_every_line_break_is_caught() -> None:
    """One line means no character that str.splitlines splits on, in any result."""
    breaks = [c for c in map(chr, range(0x110000)) if len(f"a{c}b".splitlines()) > 1]
    assert len(breaks) == 10
    for char in breaks:
        success = '{"answers":[{"id":"' + char + '","selected":[]}]}'
        for result in (ToolResult(f"Error: a{char}b", True), ToolResult(success)):
            finding = check_result(result)
            assert finding is not None
            assert finding.signature.endswith(f"holds a line break (U+{ord(char):04X})")


@pytest.mark.parametrize(
    "text",
    [
        '{"answers":[]}',
        '{"answers":[{"id":"q","selected":[]}]}',
        '{"answers":[{"id":"q","selected":["A","B"],"custom":"x"}]}',
        '{"answers":[{"id":"\\ud800","selected":[],"custom":"\\udfff \\\\ud800"}]}',
        '{"answers":[{"id":"Approuv\u00e9 \U0001f600","selected":["\\u001f\\n\\"\\\\"]}]}',
    ],
)
def test_the_checker_accepts_a_well_formed_success(text: str) -> None:
    """Compact JSON of the answer shape, as JSON.stringify writes it, passes."""
    assert check_result(ToolResult(text)) is None


@pytest.mark.parametrize(
    ("text", "signature"),
    [
        ('{"answers": []}', "success is not compact JSON as JSON.stringify writes it"),
        ('{"answers":[{"id":"\\u00e9","selected":[]}]}', "success is not compact JSON as JSON.stringify writes it"),
        ('{"answers":[{"id":"q","selected":[],"custom":"a","custom":"b"}]}', "success shape: an item's keys are not id, selected and an optional custom"),
        ('{"answers":[{"id":"q","selected":[],"extra":1}]}', "success shape: an item's keys are not id, selected and an optional custom"),
        ('{"answers":[{"id":1,"selected":[]}]}', "success shape: an item's id is not a string"),
        ('{"answers":[{"id":"q","selected":[1]}]}', "success shape: an item's selected is not an array of strings"),
        ('{"answers":[{"id":"q","selected":[],"custom":null}]}', "success shape: an item's custom is not a string"),
        ('{"answers":[{"id":"q","selected":[Infinity]}]}', "success holds a NaN or Infinity token"),
        ('{"answers":[7]}', "success shape: an answer item is not an object"),
        ('{"answers":{}}', "success shape: answers is not an array"),
        ('{"answers":[],"x":1}', 'success shape: the top level is not {"answers": [...]}'),
        ("", "success text is empty"),
    ],
)  # fmt: skip
def test_the_checker_names_what_is_wrong_with_a_success(text: str, signature: str) -> None:
    """Each way a success can break TOOL-OK-1 has its own signature."""
    finding = check_result(ToolResult(text))
    assert finding is not None
    assert finding.signature == signature


def test_error_lines_are_checked() -> None:
    """An error is one non-blank 'Error: ' line, flagged, with a bool flag."""
    assert check_result(ToolResult("Error: x", True)) is None
    for result, signature in [
        (ToolResult("Error:  ", True), "error message is blank"),
        (ToolResult("Error: x", 1), "is_error is not a bool"),  # type: ignore[arg-type] # deliberately not a bool
        (ToolResult(b"Error: x", True), "error text is not a str"),  # type: ignore[arg-type] # deliberately not a str
    ]:
        finding = check_result(result)
        assert finding is not None
        assert finding.signature == signature


@pytest.mark.slow
def test_an_input_is_a_function_of_its_seed_and_index() -> None:
    """Replaying (seed, index) rebuilds the same input, and the real tool treats it the same."""
    fingerprints: set[int] = set()
    for index in range(300):
        first, second = make_case(SEED, index), make_case(SEED, index)
        assert (first.kind, first.fingerprint) == (second.kind, second.fingerprint)
        fingerprints.add(first.fingerprint)
        seen: list[object] = []
        outcomes = [run(run_case(case, seen=seen)) for case in (first, second)]
        assert [getattr(outcome, "signature", None) for outcome in outcomes] == [
            getattr(outcomes[0], "signature", None)
        ] * 2
        assert len(seen) in (0, 2)
        assert seen[:1] == seen[1:]
    assert len(fingerprints) == 300


def test_the_first_input_of_each_group_replays_to_its_signature() -> None:
    """What a run reports can be replayed alone, with the same finding."""
    report = fuzz(500, SEED)
    for group in report.groups.values():
        finding = run(run_case(make_case(group.seed, group.index)))
        assert finding is not None
        assert finding.signature == group.signature


@pytest.mark.slow
def test_the_generator_reaches_the_provider_and_every_branch() -> None:
    """The inputs are a mix: most reach the provider, and every kind and plan is made."""
    report = fuzz(COUNT, SEED, tool=refusing)
    assert report.asked == 0  # the refusing tool never asks
    cases = [make_case(SEED, index) for index in range(COUNT)]
    kinds = {case.kind.split("/")[0] for case in cases}
    assert kinds == {
        "mapping", "json", "mapping-malformed", "json-hostile", "mapping-hostile-types",
        "whole-hostile", "junk", "deep", "size",
    }  # fmt: skip
    plans = {case.provider.plan for case in cases}
    assert plans == {
        "echo", "bad-answer", "raise", "abort-self", "abort-return", "cancelled", "not-awaitable"
    }  # fmt: skip
    assert {case.mode for case in cases} == {"strict", "lenient", "bare", "none"}
    asked = 0
    for case in cases[:500]:
        run(run_case(case))
        asked += bool(case.provider.requests)
    assert asked > 200


def test_describe_calls_no_hostile_method() -> None:
    """The replay's description of an input never runs the input's own methods."""
    for index in range(COUNT):
        describe(make_case(SEED, index).arguments)


@pytest.mark.slow
@given(st.integers(min_value=0, max_value=2**64), st.integers(min_value=0, max_value=2**40))
def test_any_seed_and_index_makes_a_case_the_checker_can_judge(seed: int, index: int) -> None:
    """For any (seed, index) the input is rebuilt the same, and a refusing tool passes it."""
    first, second = make_case(seed, index), make_case(seed, index)
    assert (first.kind, first.fingerprint) == (second.kind, second.fingerprint)
    assert run(run_case(first, refusing)) is None


def test_the_real_tool_keeps_every_invariant() -> None:
    """TOOL-SAFE-1, TOOL-ERR-1, TOOL-OK-1, TOOL-OUT-1 and TOOL-ARGS-1 hold on every fuzzed input."""
    report = fuzz(COUNT, SEED)
    assert report.groups == {}, report.summary()
