"""The JSON-lines harness: subjects in a child process are judged as in-process ones.

A Python child (``python -m dsh_user_interaction_conformance.child``) serves
the reference and the gallery, so these tests need nothing but Python; the
Node.js examples have their own tests in ``test_node_examples.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra.stdio import (
    KEPT_PROBLEMS,
    UNDEFINED,
    ChildFailed,
    Opaque,
    RemoteError,
    StdioProvider,
    WireError,
)
from dsh_user_interaction.extra.stdio._child import AFTER_EXIT, STDERR_KEPT, Event, Link
from dsh_user_interaction.extra.stdio._values import Codec, as_list, as_object
from dsh_user_interaction_conformance import (
    CHECKS,
    HarnessServices,
    HarnessSubjects,
    Report,
    SetupError,
    run_suite,
)
from dsh_user_interaction_conformance._harness._subjects import protocol_validator

from .gallery.providers import BROKEN_PROVIDERS
from .gallery.services import BROKEN_SERVICES
from .helpers import claimed_only, patience, policy_requirements
from .test_gallery import covering

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
CHILD = [sys.executable, "-m", "dsh_user_interaction_conformance.child"]
#: The run's bound, as run_suite defaults it; the factories take the same one.
BOUND = 1.0


def child(role: str, target: str) -> list[str]:
    """The command that serves *target* (``MODULE:ATTR``) in *role*."""
    return [*CHILD, f"--{role}", target]


def env(entry: str = "") -> dict[str, str]:
    """The environment of a child that serves the gallery entry *entry*."""
    found = dict(os.environ)
    found["PYTHONPATH"] = os.pathsep.join([str(ROOT), found.get("PYTHONPATH", "")])
    if entry:
        found["DSH_ENTRY"] = entry
    return found


@pytest.fixture
def subjects() -> Iterator[HarnessSubjects]:
    """The reference subject in a child process."""
    factory = HarnessSubjects(
        child("provider", "dsh_user_interaction_conformance:reference_subject"), bound=BOUND
    )
    yield factory
    factory.close()


def test_the_reference_provider_passes_through_the_harness(subjects: HarnessSubjects) -> None:
    """Every provider requirement passes, judged by examples, as in-process."""
    report = run_suite(subject_factory=subjects, kinds=["provider"], profile="quick", seed=3)
    assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]
    judged = {r.status for r in report.results if not claimed_only(r.requirement.id)}
    assert judged == {"passed"}
    assert subjects.protocol_errors == []


# Alone: SVC-LOOP-1 is judged across the synchronous register and dispose calls into the
# child, and beside the slow tier's browsers and servers the child's wait for a CPU was
# once not told from its own sleep (a false red, 0.38 s); the judgement's remaining gap
# is recorded in docs/performance.md, section 15.
@pytest.mark.slow
@pytest.mark.alone
def test_the_reference_service_passes_through_the_harness() -> None:
    """Every service requirement passes, cancellation included, with every message valid."""
    factory = HarnessServices(
        child("service", "dsh_user_interaction_conformance:reference_service"),
        bound=BOUND,
        validate=True,
    )
    try:
        report = run_suite(service_factory=factory, kinds=["service"], profile="quick", seed=3)
    finally:
        factory.close()
    assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]
    # The harness carries no policy (spec section 8): those are skipped, never passed.
    policies = policy_requirements()
    status = {r.requirement.id: r.status for r in report.results}
    assert {v for k, v in status.items() if k not in policies} == {"passed"}
    assert {v for k, v in status.items() if k in policies} == {"skipped"}
    assert "SVC-CANCEL-1" in status
    assert factory.protocol_errors == []


#: Gallery entries that reach each part of the protocol: identity, mutation,
#: cancellation, the ping, close's leftovers, the screen and concurrency.
PROVIDERS_THROUGH = (
    "mutates-request",
    "swallows-cancellation",
    "blocks-the-loop",
    "leaks-a-stubborn-task",
    "stays-on-screen-after-abort",
    "trims-custom-text",
    "single-slot-cross-talk",
)
SERVICES_THROUGH = (
    "copies-answer",
    "wraps-provider-errors",
    "names-the-agent",
    "cancel-as-abort",
    "stale-dispose-clears",
    "lenient",
    "waits-for-left-behind",
    "abort-wins-same-tick",
)


def _through(
    role: str, command: list[str], *, env_: dict[str, str] | None = None, **options: Any
) -> Report:
    """Run the suite of *role* on the child *command* with *options*; the report."""
    if role == "provider":
        subjects = HarnessSubjects(command, bound=options.get("bound", BOUND), env=env_)
        try:
            return run_suite(subject_factory=subjects, kinds=[role], **options)
        finally:
            subjects.close()
    services = HarnessServices(command, bound=options.get("bound", BOUND), env=env_)
    try:
        return run_suite(service_factory=services, kinds=[role], **options)
    finally:
        services.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("role", "name"),
    [("provider", n) for n in PROVIDERS_THROUGH] + [("service", n) for n in SERVICES_THROUGH],
)
def test_broken_subjects_fail_through_the_harness(role: str, name: str) -> None:
    """A broken provider or service in a child fails the requirement it fails in-process."""
    _, requirement = (BROKEN_PROVIDERS if role == "provider" else BROKEN_SERVICES)[name]
    report = _through(
        role,
        child(role, f"tests.harness_entries:broken_{role}"),
        env_=env(name),
        only=covering(name, role, requirement),
        stop_on=requirement.split("|"),
        bound=0.2,
        seed=7,
    )
    failed = {r.requirement.id for r in report.results if r.status in {"failed", "warning"}}
    assert set(requirement.split("|")) & failed, (name, failed)


def _cli(*args: str, timeout: float = 120) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction_conformance", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env(), "CI": ""},
        cwd=ROOT,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("exits_on_ask", "exited with status 3"),
        ("prints_garbage_on_ask", "no protocol message"),
        ("freezes_on_ask", "its event loop was blocked"),
    ],
)
def test_a_failing_child_is_a_clear_failure_and_never_a_hang(target: str, expected: str) -> None:
    """A child that exits, prints a stray line or freezes fails with what happened; the run ends.

    Its standard error is shown with the failure, and a fresh child serves
    the next example.
    """
    command = f"{sys.executable} -m dsh_user_interaction_conformance.child --provider tests.harness_entries:{target}"
    status, out, seconds = _cli(
        "--provider-cmd", command, "--only", "provider-answers", "--profile", "quick",
        "--bound", "0.3", "--seed", "1",
    )  # fmt: skip
    assert status in {1, 2}, out
    assert "FAILED" in out or "error:" in out, out
    assert expected in out, out
    if target == "exits_on_ask":
        assert "about to exit with status 3" in out  # the child's standard error
    assert seconds < patience(9.0)  # 90 s on the idle machine: it ends


@pytest.mark.slow
def test_the_transcript_and_the_reproducer_name_the_child() -> None:
    """A failure through the harness shows the messages of its example and a command to rerun."""
    command = f"{sys.executable} -m dsh_user_interaction_conformance.child --provider tests.harness_entries:broken_provider"
    done = subprocess.run(
        [
            sys.executable, "-m", "dsh_user_interaction_conformance", "--provider-cmd", command,
            "--only", "provider-answers", "--bound", "0.2", "--seed", "7",
        ],
        capture_output=True, text=True, timeout=120, env=env("trims-custom-text"), cwd=ROOT,
        check=False,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "transcript (both directions, oldest first):" in out
    assert '-> {"type":"call"' in out
    assert '<- {"type":"return"' in out
    assert "reproduce: python -m dsh_user_interaction_conformance --provider-cmd" in out


@pytest.mark.slow
def test_a_childs_example_is_the_json_that_crossed_the_pipe() -> None:
    """``null`` and ``false``, not ``None`` and ``False``; a malformed request as its JSON.

    The error the request must raise follows it in words, never as a Python
    ``InvalidRequest(...)`` repr; a behaviour is written as the wire writes it.
    """
    report = _through(
        "service",
        child("service", "tests.harness_entries:broken_service"),
        env_=env("provider-check-first"),
        only=["service-order"],
        stop_on=["SVC-ORDER-3"],
        bound=0.5,
        seed=7,
    )
    failed = next(r for r in report.results if r.status == "failed")
    drawn = [line for line in failed.example if " = " in line and not line.startswith(" ")]
    assert drawn, failed.example
    shown = "\n".join(drawn)
    assert "InvalidRequest(" not in shown
    assert "None" not in shown
    assert "False" not in shown
    assert "(must raise " in shown
    value = drawn[0].partition(" = ")[2].partition("  (must raise")[0]
    json.loads(value)  # the JSON itself
    provider = _through(
        "provider",
        child("provider", "tests.harness_entries:broken_provider"),
        env_=env("trims-custom-text"),
        only=["provider-answers"],
        stop_on=["PRV-TEXT-1"],
        bound=0.2,
        seed=7,
    )
    text = next(r for r in provider.results if r.requirement.id == "PRV-TEXT-1")
    actions = [line for line in text.example if line.startswith("actions = ")]
    assert actions, text.example
    assert json.loads(actions[0].partition(" = ")[2])["kind"] == "actions"


@pytest.mark.slow
def test_every_failure_of_a_child_ends_with_its_standard_error() -> None:
    """Not only a crash: a child that answers wrongly shows what it logged meanwhile."""
    command = f"{sys.executable} -m dsh_user_interaction_conformance.child --provider tests.harness_entries:logs_and_skips"
    status, out, _ = _cli(
        "--provider-cmd", command, "--only", "provider-answers", "--profile", "quick",
        "--seed", "1", "--stop-on", "PRV-ANSWER-1",
    )  # fmt: skip
    assert status == 1, out
    assert "PRV-ANSWER-1" in out
    tail = out.index("the child's standard error ended with:")
    assert tail > out.index("transcript (both directions, oldest first):")
    assert "log: skipping all" in out[tail:]


@pytest.mark.slow
def test_a_hang_shows_the_calls_the_child_never_answered() -> None:
    """Pings fill the transcript of a hang; the call the child was stuck on is listed after it."""
    command = f"{sys.executable} -m dsh_user_interaction_conformance.child --provider tests.harness_entries:never_answers"
    status, out, _ = _cli(
        "--provider-cmd", command, "--only", "provider-answers", "--profile", "quick",
        "--seed", "1", "--bound", "0.3", "--stop-on", "PRV-ANSWER-1",
    )  # fmt: skip
    assert status == 1, out
    transcript = out.index("transcript (both directions, oldest first):")
    stuck = out.index("calls the child had not answered when the example ended:")
    assert stuck > transcript
    listed = out[stuck:].splitlines()[1]
    assert '"method":"ask"' in listed, listed
    assert listed.endswith("(cancelled by the suite, and the child confirmed)"), listed
    assert '"method":"ping"' not in out[stuck:]


@pytest.mark.slow
def test_the_command_line_refuses_what_it_cannot_run() -> None:
    """A missing command, a role mismatch and contradictory options are usage errors (exit 2)."""
    status, out, _ = _cli("--provider-cmd", "no-such-command-anywhere")
    assert status == 2, out
    assert "cannot start" in out, out
    service = " ".join(child("service", "dsh_user_interaction_conformance:reference_service"))
    status, out, _ = _cli("--provider-cmd", service)
    assert status == 2, out
    assert "role is 'service'" in out, out
    status, out, _ = _cli("--provider", "x:y", "--provider-cmd", "true")
    assert status == 2, out
    assert "give one" in out, out
    status, out, _ = _cli("-V")
    assert status == 2, out
    assert "-V" in out, out


def test_validation_reports_a_message_that_breaks_the_schema(tmp_path: Path) -> None:
    """With -V, a hello with a key the protocol does not define is a protocol problem, named.

    A hello the suite cannot use at all (a capability that is not a boolean)
    is a set-up error, with or without -V.
    """
    script = tmp_path / "child.py"
    script.write_text(
        "import json, sys\n"
        "caps = json.loads(sys.argv[1])\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    v = {'protocol': '1.0', 'role': 'provider', 'cancellable': True, 'extra': 1,\n"
        "         'capabilities': caps, 'implementation': {'name': 'bad', 'version': '1'}}\n"
        "    print(json.dumps({'type': 'return', 'id': m['id'], 'value': v}), flush=True)\n",
        encoding="utf-8",
    )
    factory = HarnessSubjects([sys.executable, str(script), "{}"], bound=0.3, validate=True)
    factory.close()
    problems = factory.protocol_errors
    assert any("hello value" in p and "extra" in p and "HAR-VALIDATE-1" in p for p in problems)
    unchecked = HarnessSubjects([sys.executable, str(script), "{}"], bound=0.3)
    unchecked.close()
    assert unchecked.protocol_errors == []
    for caps in ('{"can_skip": "yes"}', "[1]", '{"can_fly": true}'):
        with pytest.raises(ChildFailed, match="capabilit"):
            HarnessSubjects([sys.executable, str(script), caps], bound=0.3)


def test_stray_replies_are_counted_but_what_is_kept_stays_bounded(tmp_path: Path) -> None:
    """A child that sends replies for no call without end cannot grow the suite's memory.

    The first problems are kept word for word; the rest are only counted, and
    the list says how many more there were.
    """
    script = tmp_path / "child.py"
    script.write_text(
        "import json, sys\n"
        "m = json.loads(sys.stdin.readline())\n"
        "v = {'protocol': '1.1', 'role': 'provider', 'cancellable': True,\n"
        "     'capabilities': {}, 'implementation': {'name': 'stray', 'version': '1'}}\n"
        "print(json.dumps({'type': 'return', 'id': m['id'], 'value': v}), flush=True)\n"
        "for n in range(20_000):\n"
        "    print(json.dumps({'type': 'return', 'id': f'x{n}', 'value': None}))\n"
        "sys.stdout.flush()\n"
        "sys.stdin.read()\n",
        encoding="utf-8",
    )
    factory = HarnessSubjects([sys.executable, str(script)], bound=1.0)
    try:
        deadline = time.monotonic() + 30
        while factory.connection.problem_count < 20_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        problems = factory.protocol_errors
    finally:
        factory.close()
    assert factory.connection.problem_count == 20_000
    assert len(problems) == KEPT_PROBLEMS + 1
    assert all("a reply to no pending call (HAR-CALL-2)" in p for p in problems[:-1])
    assert problems[-1] == f"... and {20_000 - KEPT_PROBLEMS} more protocol problems, " + (
        "counted but not kept"
    )


def test_the_validator_accepts_the_forms_the_spec_shows() -> None:
    """The schema accepts every tagged value and refuses a numeric handle or an unknown tag."""
    validate = protocol_validator()
    tags = [
        {"$": "ref", "handle": "s1"},
        {"$": "signal", "handle": "c1", "aborted": True, "reason": None},
        {"$": "opaque", "handle": "c2", "type": "Agent"},
        {"$": "number", "value": "-0"},
        {"$": "bigint", "value": "-123456789012345678901"},
        {"$": "undefined"},
        {"$": "object", "value": {"$": 1}},
    ]
    for tag in tags:
        assert validate("from-child", {"type": "return", "id": "1", "value": [tag]}) is None
    assert validate("from-child", {"type": "return", "id": "1", "value": {"$": "nope"}})
    bad = {"type": "return", "id": "1", "value": {"$": "ref", "handle": 1}}
    assert validate("from-child", bad)
    assert validate("to-child", {"type": "call", "id": 1, "method": "ping", "params": {}})


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None, exclude_categories=())),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


def _cross(codec: Codec, value: object) -> object:
    """*value* encoded by *codec*, through JSON text as the pipe carries it."""
    text = json.dumps(codec.encode(value), ensure_ascii=True, allow_nan=False)
    return json.loads(text)


def _equal(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    x, y = as_object(a), as_object(b)
    if x is not None and y is not None:
        return x.keys() == y.keys() and all(_equal(x[k], y[k]) for k in x)
    i, j = as_list(a), as_list(b)
    if i is not None and j is not None:
        return len(i) == len(j) and all(_equal(p, q) for p, q in zip(i, j, strict=True))
    return type(a) is type(b) and a == b


@given(_json_values)
@settings(max_examples=300)
def test_values_cross_the_wire_unchanged(value: object) -> None:
    """Any JSON-like value decodes on the other side to an equal one (HAR-VALUE-1).

    Lone surrogates, NaN, -0, huge integers and "$" keys included.
    """
    suite, child_side = Codec(lambda: "s1"), Codec(lambda: "c1", suite=False)
    there = child_side.decode(_cross(suite, value))
    back = suite.decode(_cross(child_side, there))
    assert _equal(there, value)
    assert _equal(back, value)


def test_objects_without_a_json_form_come_back_as_themselves() -> None:
    """Agents, tuples and signals cross as handles and come back as the very objects (HAR-REF-1)."""
    handles = iter(range(1, 100))
    suite = Codec(lambda: f"s{next(handles)}")
    child_side = Codec(lambda: f"c{next(handles)}", suite=False)
    agent, pair, controller = object(), (1, 2), AbortController()
    value = {"agent": agent, "pair": pair, "signal": controller.signal, "undefined": UNDEFINED}
    there = as_object(child_side.decode(_cross(suite, value)))
    assert there is not None
    assert isinstance(there["agent"], Opaque)
    assert there["undefined"] is UNDEFINED
    back = as_object(suite.decode(_cross(child_side, there)))
    assert back is not None
    assert back["agent"] is agent
    assert back["pair"] is pair
    assert back["signal"] is controller.signal


def test_malformed_values_name_where_they_break() -> None:
    """An unknown tag, a ref to nothing or a handle of the wrong side raises WireError with a path."""
    codec = Codec(lambda: "s1")
    with pytest.raises(WireError, match=r"value\[1\]: unknown tag 'nope'"):
        codec.decode([1, {"$": "nope"}])
    with pytest.raises(WireError, match="no object was sent as"):
        codec.decode({"$": "ref", "handle": "c9"})
    with pytest.raises(WireError, match="only the suite mints"):
        codec.decode({"$": "opaque", "handle": "s99", "type": "x"})
    with pytest.raises(WireError, match="a handle must be a non-empty string"):
        codec.decode({"$": "opaque", "handle": 5, "type": "x"})


def test_errors_cross_as_seam_errors_or_remote_errors() -> None:
    """A seam error keeps its code, message and answer; any other error becomes a RemoteError."""
    codec = Codec(lambda: "c1", suite=False)
    seam = codec.decode_error(
        {"is_seam_error": True, "code": "BAD_ANSWER", "message": "m", "answer": [1]}, "e"
    )
    assert isinstance(seam, UserInteractionError)
    assert seam.code is ErrorCode.BAD_ANSWER
    assert str(seam) == "m"
    assert seam.answer == [1]
    other = codec.decode_error(
        {"is_seam_error": False, "code": None, "message": "x is undefined", "name": "TypeError"},
        "e",
    )
    assert isinstance(other, RemoteError)
    assert other.name == "TypeError"
    assert other.code is None
    with pytest.raises(WireError, match="'message' is not a string"):
        codec.decode_error({"is_seam_error": False, "code": None, "message": 3}, "e")


def test_stdio_provider_serves_a_service() -> None:
    """StdioProvider answers through its child, aborts, and refuses asks after it is closed."""

    async def main() -> None:
        provider = StdioProvider(
            child("provider", "tests.harness_entries:answering"), cwd=str(ROOT)
        )
        service = UserInteractionService()
        async with provider:
            service.register_provider(provider)
            request: Any = {
                "questions": [{"id": "q", "question": "Go?", "options": [{"label": "Yes"}]}]
            }
            answer = await service.ask(request)
            assert answer == {"answers": [{"id": "q", "selected": []}]}
            assert provider.name.startswith("answering")
        with pytest.raises(UserInteractionError) as raised:
            await provider.ask(request)
        assert raised.value.code is ErrorCode.PROVIDER_DISPOSED

    asyncio.run(main())


def test_stdio_provider_reports_a_child_that_cannot_start() -> None:
    """A command that does not exist fails the first ask with ChildFailed, naming it."""

    async def main() -> None:
        provider = StdioProvider(["no-such-command-anywhere"])
        with pytest.raises(ChildFailed, match="cannot start"):
            await provider.ask({"questions": [{"id": "q", "question": "Go?"}]})
        await provider.aclose()

    asyncio.run(main())


@pytest.mark.parametrize(
    "target", ["exits_on_ask", "prints_garbage_on_ask", "closes_output_on_ask"]
)
def test_after_its_child_fails_every_later_ask_fails_at_once(target: str) -> None:
    """A child that exits or breaks the protocol fails the ask pending on it, and every later one.

    StdioProvider does not restart it (a human may have seen half an ask):
    each later ask raises ChildFailed at once, with the same reason, and
    never waits for a reply that cannot come. A child that closes its output
    and runs on is stopped within a moment, not after five seconds.
    """

    async def main() -> None:
        request: Any = {"questions": [{"id": "q", "question": "Go?"}]}
        provider = StdioProvider(
            child("provider", f"tests.harness_entries:{target}"), cwd=str(ROOT)
        )
        try:
            async with asyncio.timeout(20):
                started = time.monotonic()
                with pytest.raises(ChildFailed) as first:
                    await provider.ask(request)
                failed_after = time.monotonic() - started
                for _ in range(3):
                    with pytest.raises(ChildFailed) as later:
                        await provider.ask(request)
                    assert str(later.value) == str(first.value)
        finally:
            await provider.aclose()
        # Stopped after AFTER_EXIT (1 s), where it used to be waited for 5 s; the bound is
        # 3.5 s on the idle machine, the calibrated patience's share of it on a busy one.
        bound = patience(0.35)
        assert failed_after < bound, f"the first ask failed after {failed_after:.1f} s"

    asyncio.run(main())


def test_stdio_provider_aborts_promptly_through_a_service() -> None:
    """An abort of an ask pending in the child settles it at once with ASK_ABORTED.

    The child's provider hears the abort too, so the signal has no listener left.
    """

    async def main() -> None:
        command = child("provider", "dsh_user_interaction_conformance:reference_subject")
        service = UserInteractionService()
        async with StdioProvider(command) as provider:
            service.register_provider(provider)
            controller = AbortController()
            request: Any = {
                "questions": [{"id": "q", "question": "Go?"}],
                "signal": controller.signal,
            }
            task = asyncio.ensure_future(service.ask(request))
            await asyncio.sleep(0.2)  # the ask reaches the child and waits there
            started = time.monotonic()
            controller.abort()
            with pytest.raises(UserInteractionError) as raised:
                await asyncio.wait_for(task, patience(0.5))
            assert raised.value.code is ErrorCode.ASK_ABORTED
            # At once: within a second on the idle machine, the patience's share on a busy one.
            assert time.monotonic() - started < patience(0.1)
            assert controller.signal.listener_count == 0

    asyncio.run(main())


@pytest.mark.slow
def test_the_pytest_plugin_checks_a_child_from_a_session_fixture(
    pytester: pytest.Pytester,
) -> None:
    """A conftest fixture that yields a HarnessServices runs every service check on the child."""
    pytester.makeconftest(
        f"""
        import sys
        import pytest
        from dsh_user_interaction_conformance import HarnessServices

        @pytest.fixture(scope="session")
        def dsh_user_interaction_service():
            command = {child("service", "dsh_user_interaction_conformance:reference_service")!r}
            factory = HarnessServices(command)
            yield factory
            factory.close()
        """
    )
    (pytester.path / "test_conformance.py").write_text(
        "def test_conformance(dsh_conformance_check):\n    dsh_conformance_check()\n"
    )
    result = pytester.runpytest_subprocess("--dsh-profile", "quick", "--dsh-seed", "3")
    result.assert_outcomes(
        passed=sum(c.kind in {"service", "binding"} for c in CHECKS),
        skipped=sum(c.kind == "provider" for c in CHECKS),
    )


@pytest.mark.slow
@pytest.mark.parametrize(("role", "target", "requirement"), [
    ("provider", "reference_subject", "PRV-CANCEL-1"),
    ("service", "reference_service", "SVC-CANCEL-1"),
])  # fmt: skip
def test_a_child_without_cancellation_skips_those_requirements(
    role: str, target: str, requirement: str
) -> None:
    """A child without cancellation has that requirement skipped, never passed (HAR-CANCEL-2).

    Every other requirement is still judged (at the default profile: the
    quick one's 8 examples may draw no question that judges a rare one, such
    as PRV-INTENT-1, which would then be untested for want of an example).
    """
    command = [*child(role, f"dsh_user_interaction_conformance:{target}"), "--not-cancellable"]
    report = _through(role, command, profile="default", seed=2)
    assert report.capabilities.cancellable is False
    status = {r.requirement.id: r.status for r in report.results}
    assert status[requirement] == "skipped"
    assert report.ok, {k: v for k, v in status.items() if v != "passed"}
    others = {k: v for k, v in status.items() if k != requirement}
    judged = {k: v for k, v in others.items() if k not in policy_requirements()}
    assert {v for k, v in judged.items() if not claimed_only(k)} == {"passed"}


def _mitm(
    mode: str, target: str = "dsh_user_interaction_conformance:reference_subject"
) -> list[str]:
    return [sys.executable, "-m", "tests.harness_mitm", mode, "--", *child("provider", target)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("unhashable-id", "its id is not a string"),
        ("deep", "nested too deeply"),
        ("params-list", "its params are not an object"),
        ("request-as-ref", "not as its value (HAR-MUTATE-1)"),
        ("drop-ping", "answered none of"),
    ],
)
def test_a_child_that_breaks_the_protocol_is_reported_and_the_run_ends(
    mode: str, expected: str
) -> None:
    """A malformed line, a state given as a ref, or pings never answered are protocol errors.

    The reader thread survives every one of them, and the run ends.
    """
    factory = HarnessSubjects(_mitm(mode), bound=BOUND, env=env())
    started = time.monotonic()
    try:
        with contextlib.suppress(SetupError):
            run_suite(
                subject_factory=factory, kinds=["provider"], only=["provider-answers"],
                profile="quick", seed=1,
            )  # fmt: skip
    finally:
        factory.close()
    assert any(expected in problem for problem in factory.protocol_errors), factory.protocol_errors
    assert time.monotonic() - started < patience(6.0)  # 60 s on the idle machine


@pytest.mark.slow
def test_a_cancelled_call_answered_with_a_thrown_cancellation_fails_the_cancel_rule() -> None:
    """HAR-CANCEL-1 names the reply: ``cancelled``, never a ``throw`` of a cancellation.

    Both decode to a ``CancelledError``; the suite reads the reply's type.
    """
    factory = HarnessSubjects(_mitm("cancelled-as-throw"), bound=BOUND, env=env())
    try:
        report = run_suite(
            subject_factory=factory, kinds=["provider"], only=["provider-lifecycle"],
            seed=1, stop_on=["PRV-CANCEL-1"],
        )  # fmt: skip
    finally:
        factory.close()
    failed = {r.requirement.id: r for r in report.results if r.status == "failed"}
    assert "not the reply 'cancelled' (HAR-CANCEL-1)" in failed["PRV-CANCEL-1"].message


@pytest.mark.slow
def test_a_child_that_never_answers_close_is_replaced_then_given_up() -> None:
    """Close is bounded and never waited on for ever; the child is restarted, then the run stops."""
    factory = HarnessSubjects(_mitm("drop-close"), bound=0.3, env=env())
    started = time.monotonic()
    try:
        with pytest.raises(SetupError, match="did not answer close"):
            run_suite(
                subject_factory=factory, kinds=["provider"], only=["provider-answers"],
                profile="quick", seed=1, bound=0.3,
            )  # fmt: skip
    finally:
        factory.close()
    assert time.monotonic() - started < patience(3.0)  # 30 s on the idle machine


@pytest.mark.slow
def test_a_grandchild_holding_the_output_cannot_hang_the_suite(tmp_path: Path) -> None:
    """A child whose own child keeps its standard output open still closes at once."""
    script = tmp_path / "child.sh"
    script.write_text(
        "#!/bin/sh\nsleep 60 &\nexec "
        + " ".join(child("provider", "tests.harness_entries:answering"))
        + "\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    factory = HarnessSubjects([str(script)], bound=BOUND, env=env())
    try:
        report = run_suite(
            subject_factory=factory, kinds=["provider"], only=["provider-lifecycle"],
            profile="quick", seed=1,
        )  # fmt: skip
        assert report.results
    finally:
        started = time.monotonic()
        factory.close()
    # At once, not after the grandchild's 60 s: 10 s on the idle machine, more on a busy one.
    assert time.monotonic() - started < min(patience(1.0), 50.0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("role", "target", "check", "requirement"),
    [
        ("service", "tests.harness_entries:sync_raising", "service-order", "SVC-ASYNC-1"),
        ("provider", "tests.harness_entries:thread_leaking", "provider-answers", "PRV-LEAK-1"),
        ("service", "tests.gallery.services:CancelAsAbort", "service-provider-errors", "SVC-ERR-1"),
        ("provider", "tests.harness_entries:rewrites_earlier", "provider-answers", "PRV-MUTATE-1"),
        ("service", "tests.harness_entries:leaves_task", "service-pass-through", "SVC-LEAK-1"),
    ],
)
def test_what_the_python_child_cannot_hide(
    role: str, target: str, check: str, requirement: str
) -> None:
    """A synchronous throw, a leaked thread and a provider's own cancellation cross the pipe."""
    report = _through(role, child(role, target), env_=env(), only=[check], bound=0.3, seed=4)
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    assert requirement in failed, failed


def test_a_long_transcript_line_keeps_its_start_and_its_end() -> None:
    """A line is shown whole up to 2,000 characters; a longer one loses only its middle."""
    from dsh_user_interaction.extra.stdio._session import _shorten

    whole = '{"type":"return","id":"9","value":"' + "a" * 1900 + '"}'
    assert _shorten(whole + "\n") == whole
    reply = '{"type":"return","id":"9","value":{"answers":[' + "x" * 6000 + '],"custom":"END"}}'
    shown = _shorten(reply)
    assert shown.startswith('{"type":"return","id":"9"')
    assert shown.endswith('"custom":"END"}}')  # the decisive end survives
    assert f"({len(reply) - 1900} of its {len(reply)} characters left out here)" in shown
    assert len(shown) < 2000


@pytest.mark.slow
def test_a_long_line_is_read_in_linear_time() -> None:
    """A 48 MB line, which the protocol allows, costs the reader a linear pass.

    The reader used to join each 64 KiB chunk onto the line and search it all
    again: 15 s of CPU for this line, where it now takes under one. The bound
    is generous, and it is CPU time, so a busy machine does not move it.
    """
    size = 48 * 1024 * 1024
    script = (
        "import sys\n"
        f'sys.stdout.write(\'{{"type":"return","id":"x","value":"\' + \'a\' * {size} + \'"}}\\n\')\n'
        "sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )
    events: list[Event] = []
    arrived = threading.Event()

    def on_event(event: Event) -> None:
        events.append(event)
        arrived.set()

    link = Link([sys.executable, "-c", script], on_event)
    before = resource.getrusage(resource.RUSAGE_SELF)
    try:
        link.start()
        assert arrived.wait(120), "the line never arrived"
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        link.close()
    assert events[0].kind == "message"
    assert events[0].message is not None
    assert len(events[0].message["value"]) == size
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 4.0, f"reading a {size >> 20} MB line took {cpu:.1f} s of CPU"


def _events_of(link_argv: list[str]) -> tuple[Link, list[Event], threading.Event]:
    events: list[Event] = []
    changed = threading.Event()

    def on_event(event: Event) -> None:
        events.append(event)
        changed.set()

    return Link(link_argv, on_event), events, changed


def test_only_the_tail_of_standard_error_is_kept() -> None:
    """A child that writes megabytes on standard error costs the suite a bounded tail.

    The report still shows its last lines, and the child never blocks on it.
    """
    script = (
        "import sys\n"
        "for n in range(200_000):\n"
        "    sys.stderr.write(f'line {n}\\n')\n"
        "sys.stderr.flush()\n"
        'print(\'{"type":"notify","method":"listeners","params":{}}\', flush=True)\n'
        "sys.stdin.read()\n"
    )
    link, events, changed = _events_of([sys.executable, "-c", script])
    try:
        link.start()
        assert changed.wait(30), "the child's line never came"
        tail = link.stderr_tail(lines=10**9, limit=10**9)
    finally:
        link.close()
    assert events[0].kind == "message"
    assert tail.endswith("line 199999")
    assert len(tail.encode()) <= STDERR_KEPT
    assert link.stderr_tail().splitlines()[-1] == "line 199999"


@pytest.mark.slow
def test_a_child_that_exits_fails_its_calls_though_a_grandchild_writes_on() -> None:
    """The child's own exit ends the reading, whatever a grandchild still writes.

    The grandchild keeps the output open and writes a valid notification
    every 10 ms; the exit is reported within a moment of the child's.
    """
    script = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    while True:\n"
        '        print(\'{"type":"notify","method":"listeners","params":{}}\', flush=True)\n'
        "        time.sleep(0.01)\n"
        "sys.exit(3)\n"
    )
    link, events, _ = _events_of([sys.executable, "-c", script])
    try:
        link.start()
        deadline = time.monotonic() + 10 * AFTER_EXIT
        while not any(e.kind == "exit" for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        link.close()
    exits = [e for e in events if e.kind == "exit"]
    assert exits, f"no exit reported after {10 * AFTER_EXIT:g} s; {len(events)} messages read"
    assert exits[0].detail == "3"


@pytest.mark.parametrize("aborted_first", [False, True])
def test_an_abort_read_in_the_same_turn_as_its_ask_is_never_dropped(aborted_first: bool) -> None:
    """The Python child applies an abort that arrives before it decoded the ask's signal.

    The suite writes an ask and its signal's abort in one turn (HAR-TURN-1);
    the child decodes a call when the call's task first runs, after it has
    read both. It used to find no signal for the abort and drop it, so the
    ask never ended: seen under load, where the two are read together.
    Here they are always written together, with a second signal already
    decoded (*aborted_first*: that one's abort comes first) beside them.
    """
    command = [*CHILD, "--provider", "dsh_user_interaction_conformance:reference_subject"]
    with contextlib.ExitStack() as stack:
        child = stack.enter_context(
            subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        )
        # Nothing here may hang: past a minute, the child is killed and the reads end.
        killer = threading.Timer(60, child.kill)
        killer.start()
        stack.callback(killer.cancel)
        stack.callback(child.kill)
        _RawChild(child).abort_in_the_same_turn(aborted_first=aborted_first)


class _RawChild:
    """A child spoken to in raw protocol lines."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        assert child.stdin is not None
        assert child.stdout is not None
        self.stdin, self.stdout = child.stdin, child.stdout
        self.replies: dict[str, dict[str, Any]] = {}

    def send(self, *messages: dict[str, Any]) -> None:
        self.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in messages))
        self.stdin.flush()

    def reply_to(self, call_id: str) -> dict[str, Any]:
        while call_id not in self.replies:
            line = self.stdout.readline()
            assert line, f"the child ended without replying to {call_id}: {self.replies}"
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                self.replies[str(message["id"])] = message
        return self.replies.pop(call_id)

    @staticmethod
    def call(call_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"type": "call", "id": call_id, "method": method, "params": params}

    def ask(self, call_id: str, subject: str, signal: str) -> dict[str, Any]:
        request = {
            "questions": [{"id": "q", "question": "Wait?"}],
            "signal": {"$": "signal", "handle": signal, "aborted": False},
        }
        return self.call(call_id, "ask", {"subject": subject, "request": request})

    @staticmethod
    def abort(signal: str) -> dict[str, Any]:
        return {"type": "notify", "method": "abort", "params": {"signal": signal, "reason": "x"}}

    def abort_in_the_same_turn(self, *, aborted_first: bool) -> None:
        hello = {"protocol": "1.1", "suite": "t", "spec": "t", "bound": 1}
        self.send(self.call("s1", "hello", hello))
        assert self.reply_to("s1")["type"] == "return"
        self.send(self.call("s2", "new", {}))
        subject = self.reply_to("s2")["value"]["subject"]
        # One ask already decoded and waiting, to show each abort is its own ask's.
        self.send(self.ask("s3", subject, "s10"))
        time.sleep(0.2)
        turn = [self.ask("s4", subject, "s11"), self.abort("s11")]
        self.send(*([self.abort("s10"), *turn] if aborted_first else turn))
        ended = self.reply_to("s4")
        assert ended["type"] == "throw", ended
        assert ended["error"]["code"] == "ASK_ABORTED", ended
        if not aborted_first:
            assert "s3" not in self.replies  # still waiting: the abort was s11's alone
            self.send(self.abort("s10"))
        assert self.reply_to("s3")["error"]["code"] == "ASK_ABORTED"
        self.send(self.call("s5", "close", {"subject": subject}))
        assert self.reply_to("s5")["type"] == "return"
