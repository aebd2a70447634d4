"""The suite's registry, command line, report, baseline and pytest plugin."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
)
from dsh_user_interaction_conformance import (
    CHECKS,
    Capabilities,
    ScriptedDriver,
    SetupError,
    Subject,
    reference_subject,
    requirements,
    run_suite,
    with_capabilities,
)
from dsh_user_interaction_conformance.__main__ import main
from dsh_user_interaction_conformance._reference_only import REFERENCE_ONLY
from dsh_user_interaction_conformance._store import store_suite_requirements

from .gallery.providers import BROKEN_PROVIDERS, FACTORY_TRIMS_AND_DROPS_SKIPPED
from .gallery.services import BROKEN_SERVICES, NeverAnswers, Wrapped, hangs_the_first_ask
from .helpers import claimed_only

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parent.parent
#: A quick, seeded run of one check against a provider that echoes extra keys.
BROKEN_RUN = [
    "--provider", "tests.gallery.providers:FACTORY_EXTRA_KEYS",
    "--profile", "quick", "--seed", "9", "--only", "provider-answers",
]  # fmt: skip


def test_every_requirement_has_a_check_and_every_cited_id_exists() -> None:
    """The suite and the spec stay in step in both directions."""
    known = set(requirements())
    cited = {rid for check in CHECKS for rid in check.requirements}
    # Section 7 (durable asks) is judged by the store suite, and only there, but
    # for the few that only the reference's own tests can judge (REFERENCE_ONLY).
    stores = set(store_suite_requirements()) | set(REFERENCE_ONLY)
    assert not cited & stores, cited & stores
    cited |= stores
    assert cited <= known, cited - known
    assert known <= cited, known - cited


def test_the_registry_reads_the_spec() -> None:
    """Levels and sentences come from the spec text."""
    spec = (ROOT / "spec" / "user-interaction.md").read_text(encoding="utf-8")
    assert len(requirements()) == len(re.findall(r"^- \*\*[A-Z-]+-\d+\*\* \(", spec, re.M))
    assert requirements()["PRV-MUTATE-1"].level == "MUST NOT"
    assert requirements()["ANS-MULTI-2"].level == "SHOULD"


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_cli_runs_the_reference_and_writes_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0 on the reference, with a JSON report of every requirement."""
    out = tmp_path / "report.json"
    assert main(["--profile", "quick", "--seed", "5", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["seed"] == 5
    assert report["profile"] == "quick"
    assert report["spec_version"] == "1.7.0"
    assert report["capabilities"]["can_skip"] is True
    must = [r for r in report["results"] if r["level"] != "SHOULD"]
    assert {r["status"] for r in must if not claimed_only(r["id"])} == {"passed"}
    assert {r["status"] for r in must if claimed_only(r["id"])} == {"skipped"}
    assert {r["id"] for r in report["results"] + report["binding"]} == set(requirements()) - set(
        store_suite_requirements()
    ) - set(REFERENCE_ONLY)
    assert not {r["id"] for r in report["results"]} & {"ABT-ONCE-1", "ERR-PICKLE-1"}
    assert all(r["examples"] > 0 for r in must if not claimed_only(r["id"]))
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("dsh-user-interaction conformance")
    assert "seed:         5" in printed
    assert printed.rstrip().endswith("PASSED")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--profile", "huge"], "invalid choice"),
        (["--provider", "nocolon"], "MODULE:ATTR"),
        (["--provider", "no_such_module_xyz:f"], "cannot import"),
        (["--service", "json:nothing_here"], "no attribute"),
        (["--only", "no-such-check"], "unknown check"),
        (["--stop-on", "PRV-NOPE-1"], "unknown requirement 'PRV-NOPE-1'"),
        (["--bound", "0"], "finite positive"),
        (["--bound", "nan"], "finite positive"),
        (["--bound", "inf"], "finite positive"),
        (["--provider", "tests.test_suite:raising_factory"], "raised ValueError: no display"),
        (["--provider", "tests.test_suite:not_a_subject"], "returned str, not a Subject"),
        (["--service", "tests.test_suite:raising_factory"], "service factory"),
        (["--service", "tests.test_suite:not_a_subject"], "has no register_provider"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Usage errors exit 2 with a one-line message naming the mistake."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert fragment in err


def raising_factory() -> NoReturn:
    """A factory whose UI cannot start."""
    raise ValueError("no display")


def not_a_subject() -> str:
    """A factory that returns the wrong kind of object."""
    return "subject"


def test_failures_exit_1_and_print_a_reproducer(capsys: pytest.CaptureFixture[str]) -> None:
    """A broken subject exits 1; the output names the requirement, the spec and a reproducer."""
    code = main(BROKEN_RUN)
    out = capsys.readouterr().out
    assert code == 1
    assert "=== FAILED: ANS-KEYS-1 (MUST), found by provider-answers" in out
    assert "spec: The answer has no key but" in out
    assert "minimal example:" in out
    assert "--seed 9 --only provider-answers" in out
    assert "ANS-KEYS-1 (MUST): ANS-KEYS-1" not in out
    assert "Falsifying" not in out
    assert "reproduce_failure" not in out


def test_baseline_turns_failures_into_expected_and_flags_stale_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Baselined failures pass the run; a baselined requirement that passes fails it.

    A check line whose every failure is baselined says "expected", not FAILED.
    """
    baseline = tmp_path / "baseline.json"
    baseline.write_text(
        json.dumps({"expected-failures": {"ANS-KEYS-1": "echoes question text until v2"}})
    )
    capsys.readouterr()
    assert main([*BROKEN_RUN, "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  expected  provider-answers .* ANS-KEYS-1 \(expected\)$", out, re.M), out
    assert "FAILED" not in out
    baseline.write_text(json.dumps({"expected-failures": {"PRV-CANCEL-1": "was broken"}}))
    reference = ["--profile", "quick", "--seed", "9", "--only", "provider-lifecycle"]
    assert main([*reference, "--baseline", str(baseline)]) == 1
    baseline.write_text("[]")
    assert main([*BROKEN_RUN, "--baseline", str(baseline)]) == 2


def test_an_unknown_baseline_id_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped ID in the baseline exits 2 and names it, instead of hiding nothing."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"expected-failures": {"PRV-TXET-1": "typo"}}))
    assert main([*BROKEN_RUN, "--baseline", str(baseline)]) == 2
    assert "PRV-TXET-1" in capsys.readouterr().err


def test_a_baseline_hides_only_what_it_names() -> None:
    """With one flaw baselined, a second flaw of the same check still fails the run.

    (The command line's exit status under a baseline follows ``report.ok``:
    ``test_baseline_turns_failures_into_expected_and_flags_stale_entries``.)
    """
    report = run_suite(
        subject_factory=FACTORY_TRIMS_AND_DROPS_SKIPPED,
        only=["provider-answers"],
        profile="quick",
        seed=1,
        baseline={"PRV-TEXT-1": "trims until 2.1"},
        shrink=False,
    )
    status = {r.requirement.id: r.status for r in report.results}
    assert status["PRV-TEXT-1"] == "expected-failure"
    assert status["ANS-COUNT-1"] == "failed"
    assert not report.ok


@pytest.mark.slow
def test_a_failure_found_by_another_check_is_kept() -> None:
    """A check that finds a requirement outside its own list reports it, and the run fails."""
    factory, _ = BROKEN_PROVIDERS["trims-when-busy"]
    report = run_suite(
        subject_factory=factory, only=["provider-concurrency"], profile="default", seed=2
    )
    failed = {r.requirement.id: r for r in report.results if r.status == "failed"}
    assert "PRV-TEXT-1" in failed
    assert failed["PRV-TEXT-1"].failed_in == "provider-concurrency"
    assert failed["PRV-TEXT-1"].example
    assert not report.ok


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_every_requirement_of_a_check_is_judged_after_one_fails() -> None:
    """service-order keeps judging after a failure: a service broken twice is reported twice."""
    factory, _ = BROKEN_SERVICES["asks-before-checking"]
    report = run_suite(service_factory=factory, kinds=["service"], profile="quick", seed=1)
    status = {r.requirement.id: r.status for r in report.results}
    assert status["SVC-PASS-1"] == "failed"
    # Its codes and messages are right, and they are still judged, as passes.
    assert status["SVC-ORDER-3"] == "passed"
    assert status["REQ-ID-1"] == "passed"
    assert status["ERR-CODE-1"] == "passed"


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_defect_the_service_lets_through_fails_its_rule_and_the_stage() -> None:
    """An empty detail that reaches the provider breaks INT-DETAIL-1, not only SVC-ORDER-4.

    The stage that should have refused it is broken too; an earlier stage's
    code would have been an ordering fault alone. The provider sees the request
    only in an example that registers one and draws an empty detail rather than
    none, as seed 3 does (and most seeds).
    """
    factory, _ = BROKEN_SERVICES["accepts-empty-detail"]
    report = run_suite(service_factory=factory, kinds=["service"], only=["service-order"], seed=3)
    failed = {r.requirement.id: r for r in report.results if r.status == "failed"}
    # The provider saw it, too.
    assert set(failed) == {"INT-DETAIL-1", "SVC-ORDER-4", "SVC-PASS-1"}
    assert "expected BAD_INTENT for INT-DETAIL-1" in failed["INT-DETAIL-1"].message


class _IgnoresIntents(Wrapped):
    """Never looks at an intent: the reference service, asked without them."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        questions: object = request.get("questions")
        if isinstance(questions, list):
            items = cast("list[object]", questions)
            plain: list[object] = [_without_intent(q) for q in items]
            request = {**request, "questions": plain}  # type: ignore[typeddict-item]
        return await self.inner.ask(request)


def _without_intent(question: object) -> object:
    if not isinstance(question, dict):
        return question
    fields = cast("dict[str, object]", question)
    return {key: value for key, value in fields.items() if key != "intent"}


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_every_intent_rule_a_service_ignores_fails_with_the_stage() -> None:
    """Intent defects that pass unnoticed fail their own rules as well as SVC-ORDER-4.

    Unknown approve labels and missing details alike, in the malformed-request,
    precedence and wording cases.
    """
    report = run_suite(
        service_factory=_IgnoresIntents, kinds=["service"], only=["service-order"], seed=1
    )
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    assert {"INT-APPROVE-1", "INT-DETAIL-1", "SVC-ORDER-4"} <= failed


class _AnswersItself(Wrapped):
    """Skips every question itself and never calls its provider."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("factory", "said"),
    [
        (_AnswersItself, "the provider was never called: ask() ended with {'answers': "),
        (BROKEN_SERVICES["copies-request"][0], "the provider received an equal copy of the"),
    ],
    ids=["never-called", "copied"],
)
def test_a_request_not_passed_on_is_described_as_what_happened(
    factory: Callable[[], Any], said: str
) -> None:
    """SVC-PASS-1 says whether the provider was never called or got a copy."""
    report = run_suite(
        service_factory=factory, kinds=["service"], only=["service-pass-through"], seed=1
    )
    failed = {r.requirement.id: r for r in report.results if r.status == "failed"}
    assert failed["SVC-PASS-1"].message.startswith(said), failed["SVC-PASS-1"].message


def test_unjudged_requirements_are_untested_never_passed() -> None:
    """When every example stalls, what no example judged is untested, and fails the run."""
    factory, _ = BROKEN_PROVIDERS["blocks-the-loop"]
    report = run_suite(
        subject_factory=factory, only=["provider-answers"], profile="quick", seed=1, bound=0.2
    )
    status = {r.requirement.id: r.status for r in report.results}
    assert status["PRV-LOOP-1"] == "failed"
    assert "untested" in status.values()
    assert all(r.examples == 0 for r in report.results if r.status == "untested")
    assert not report.ok


def test_a_baselined_leak_still_lets_the_rest_be_judged() -> None:
    """With a leak baselined, the other requirements are judged, and the run can pass."""
    factory, _ = BROKEN_PROVIDERS["leaks-a-stubborn-task"]
    report = run_suite(
        subject_factory=factory,
        only=["provider-answers"],
        profile="quick",
        seed=1,
        bound=0.2,
        baseline={"PRV-LEAK-1": "a render task that ignores cancellation, until 2.1"},
    )
    status = {r.requirement.id: r.status for r in report.results}
    assert status["PRV-LEAK-1"] == "expected-failure"
    assert status["PRV-ANSWER-1"] == "passed"
    assert report.ok


def test_a_selection_that_checks_nothing_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--only naming checks of a kind that does not run checks nothing: exit 2, not a pass."""
    argv = ["--service", "tests.gallery.services:Lenient", "--only", "provider-answers"]
    assert main(argv) == 2
    assert "nothing would be checked" in capsys.readouterr().err
    with pytest.raises(ValueError, match="nothing would be checked"):
        run_suite(kinds=[])


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"kinds": ["providr"]}, "unknown kind"),
        ({"only": ["nope"]}, "unknown check"),
        ({"profile": "fast"}, "profile must be one of"),
        ({"bound": float("nan")}, "finite"),
        ({"bound": -1.0}, "positive"),
        ({"baseline": {"NOPE-1": "x"}}, "NOPE-1"),
    ],
)
def test_run_suite_rejects_bad_arguments(arguments: dict[str, Any], fragment: str) -> None:
    """run_suite validates its arguments with a ValueError that names the mistake."""
    with pytest.raises(ValueError, match=fragment):
        run_suite(**arguments)


def test_a_raising_service_factory_is_a_setup_error() -> None:
    """A service factory that raises stops the run with one SetupError naming it."""
    with pytest.raises(SetupError, match=r"service factory .*raising_factory raised ValueError"):
        run_suite(service_factory=raising_factory, kinds=["service"], profile="quick", seed=1)


class _Unending:
    """A service whose ``ask()`` awaits something that never comes."""

    def __init__(self) -> None:
        self._inner = UserInteractionService()

    def register_provider(self, provider: Any) -> Any:
        return self._inner.register_provider(provider)

    @property
    def provider(self) -> object:
        return self._inner.provider

    async def ask(self, request: Any) -> Any:
        await asyncio.Event().wait()


@pytest.mark.slow
def test_a_hang_is_reported_with_what_the_loop_did_meanwhile() -> None:
    """An ask that never settles fails its requirement, saying its loop sat idle meanwhile."""
    report = run_suite(
        service_factory=_Unending,
        kinds=["service"],
        only=["service-pass-through"],
        profile="quick",
        seed=1,
        shrink=False,
        bound=0.2,
    )
    failed = {r.requirement.id: r.message for r in report.results if r.status == "failed"}
    message = failed["SVC-PASS-1"]
    found = re.fullmatch(
        r"ask\(\) did not settle within (?P<limit>2\.6|15\.6) s \(in (?P<seconds>[\d.]+) s"
        r" the loop's thread ran (?P<ran>[\d.]+) s(?:, waited [\d.]+ s for a CPU)? and was idle"
        r" (?P<idle>[\d.]+) s\)(?P<again>; run again with 6x the time, as it first did not"
        r" settle within 2\.6 s on a busy machine.*)?",
        message,
    )
    assert found is not None, message
    # Waiting on nothing that comes: the thread sat idle, and hardly ran.
    assert float(found["ran"]) < 1.0, message
    assert float(found["idle"]) > 1.0, message
    assert float(found["seconds"]) >= float(found["limit"]) - 0.1, message
    # Given six times the time on a busy machine (Rule 3c), and only then.
    assert (found["limit"] == "15.6") == (found["again"] is not None), message


def _one_hang(busy: bool, factory: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    from dsh_user_interaction_conformance import _engine
    from dsh_user_interaction_conformance._loop import Hung

    def busy_while(hung: Hung | None) -> bool:
        return hung is not None and busy

    monkeypatch.setattr(_engine, "_busy_while", busy_while)
    return run_suite(
        service_factory=factory,
        kinds=["service"],
        only=["service-pass-through"],
        profile="quick",
        seed=1,
        shrink=False,
        bound=0.2,
    )


@pytest.mark.slow
def test_a_hang_on_a_busy_machine_is_judged_by_a_run_with_more_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule 3c: an example that hung while the machine was busy is run again, given 6x the time.

    A service held up once (its first ask hangs, as a UI slowed by load)
    passes when the machine counts as busy, and fails as a hang when it
    does not; one that never answers fails either way, its message saying
    it was given the time twice.
    """
    report = _one_hang(True, hangs_the_first_ask(), monkeypatch)
    assert report.ok, [
        (r.requirement.id, r.message) for r in report.results if r.status != "passed"
    ]
    report = _one_hang(False, hangs_the_first_ask(), monkeypatch)
    failed = {r.requirement.id: r.message for r in report.results if r.status == "failed"}
    assert failed["SVC-PASS-1"].startswith("ask() did not settle within 2.6 s"), failed
    report = _one_hang(True, NeverAnswers, monkeypatch)
    failed = {r.requirement.id: r.message for r in report.results if r.status == "failed"}
    message = failed["SVC-PASS-1"]
    assert message.startswith("ask() did not settle within 15.6 s"), message
    assert "; run again with 6x the time, as it first did not settle within 2.6 s" in message


@pytest.mark.slow
def test_a_hang_on_a_busy_machine_is_run_again_on_a_scenario_built_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule 3c runs the example again from its inputs, never the first run's scenario.

    The observers' check releases its slow observer once the ask is settled,
    and the limit's cancellation settles it: a service that awaits its
    observers hangs on every example, and when the first run's scenario was
    run again, with its observer already released, it passed on a busy
    machine (seed 7, beside eight CPU-bound processes: 18 examples passed).
    """
    from dsh_user_interaction_conformance import _engine
    from dsh_user_interaction_conformance._loop import Hung

    from .gallery.policies import BROKEN_POLICY_SERVICES

    def busy(hung: Hung | None) -> bool:
        return hung is not None

    monkeypatch.setattr(_engine, "_busy_while", busy)
    factory, requirement = BROKEN_POLICY_SERVICES["awaits-observers"]
    report = run_suite(
        service_factory=factory,
        kinds=["service"],
        only=["policy-observers"],
        seed=7,
        shrink=False,
        bound=0.2,
        stop_on=[requirement],
    )
    failed = {r.requirement.id: r.message for r in report.results if r.status == "failed"}
    assert requirement in failed, failed
    assert "; run again with 6x the time" in failed[requirement]


@given(st.data())
def test_draws_made_again_give_the_values_as_they_were_drawn(data: st.DataObject) -> None:
    """A rebuilt example gets its first drawing's values, untouched by what a run did to them."""
    from dsh_user_interaction_conformance._engine import Draws

    first = Draws(data)
    request = first(st.fixed_dictionaries({"questions": st.lists(st.text())}), "request")
    number = first(st.integers(), "a number")
    drawn = (repr(request), number)
    request["questions"].append("changed by the run")
    request["deadline"] = ["added by the run"]
    again = first.again()
    fresh = st.builds(object)  # what a fresh drawing would give: never equal to a drawn value
    assert (repr(again(fresh, "request")), again(fresh, "a number")) == drawn
    # Once the labels part from the first drawing's, values are drawn afresh.
    third = first.again()
    assert third(st.just("fresh"), "another label") == "fresh"
    assert third(st.just(7), "a number") == 7


def test_the_machine_counts_as_busy_by_its_cpu_pressure() -> None:
    """Rule 3c's measure: a tenth of the time with a task waiting for a CPU is busy."""
    from dsh_user_interaction_conformance._engine import _busy_while
    from dsh_user_interaction_conformance._loop import Hung, cpu_pressure

    assert not _busy_while(None)
    assert not _busy_while(Hung(5.0, 0.1, 0.0, 0.0, contended=0.0))
    assert not _busy_while(Hung(5.0, 5.0, 0.0, 0.0, contended=0.09))
    assert _busy_while(Hung(5.0, 0.1, 0.0, 0.0, contended=0.1))
    assert _busy_while(Hung(5.0, 0.1, 0.0, 0.0, contended=1.0))
    if sys.platform == "linux" and Path("/proc/pressure/cpu").exists():
        first = cpu_pressure()
        assert first is not None
        second = cpu_pressure()
        assert second is not None
        assert second >= first


def test_async_factories_and_aclose_after_every_example() -> None:
    """Async factories are awaited in the example's loop; aclose runs after every example."""
    closed: list[int] = []
    built: list[int] = []

    async def factory() -> Subject:
        subject = reference_subject()
        built.append(id(subject))

        async def aclose() -> None:
            closed.append(id(subject))

        subject.aclose = aclose
        return subject

    report = run_suite(subject_factory=factory, kinds=["provider"], profile="quick", seed=1)
    assert report.ok
    assert built
    assert sorted(closed) == sorted(built)


def test_aclose_runs_even_when_the_example_fails() -> None:
    """A failing, or hanging, example still closes its subject."""
    closed: list[object] = []
    broken, _ = BROKEN_PROVIDERS["swallows-cancellation-forever"]

    def factory() -> Subject:
        subject = broken()

        async def aclose() -> None:
            closed.append(subject)

        subject.aclose = aclose
        return subject

    report = run_suite(
        subject_factory=factory, only=["provider-lifecycle"], profile="quick", seed=1, bound=0.2
    )
    assert not report.ok
    assert closed


def test_declared_capabilities_are_read_without_building_a_subject() -> None:
    """with_capabilities declares the claim; nothing is built outside an example."""
    built: list[bool] = []

    claim = Capabilities(can_skip=False, can_dismiss=False)

    @with_capabilities(claim)
    def factory() -> Subject:
        asyncio.get_running_loop()  # raises outside a loop
        built.append(True)
        provider = ScriptedProvider()
        return Subject(provider, ScriptedDriver(provider, claim))

    report = run_suite(subject_factory=factory, kinds=["provider"], profile="quick", seed=1)
    assert report.ok
    assert report.capabilities.can_skip is False
    status = {r.requirement.id: r.status for r in report.results}
    assert status["PRV-DISMISS-1"] == "skipped"


def test_a_driver_that_claims_other_capabilities_is_a_setup_error() -> None:
    """A driver whose capabilities differ from the declared claim is a set-up error."""

    def factory() -> Subject:
        provider = ScriptedProvider()
        return Subject(provider, ScriptedDriver(provider, Capabilities(can_skip=False)))

    with pytest.raises(SetupError, match="declares"):
        run_suite(subject_factory=factory, kinds=["provider"], profile="quick", seed=1)


def test_a_wrong_factory_stops_the_run_before_any_check_runs() -> None:
    """The factories' products are checked first: no binding check runs before the set-up error."""
    ran: list[str] = []
    with pytest.raises(SetupError, match="not a Subject"):
        run_suite(
            subject_factory=lambda: "a provider",  # type: ignore[arg-type,return-value]  # the mistake
            profile="quick",
            seed=1,
            on_check=lambda outcome: ran.append(outcome.check.name),
        )
    assert ran == []


class _SyncIsShown(ScriptedDriver):
    """A driver whose is_shown is a plain function: a driver mistake."""

    def is_shown(self, request: Any) -> bool:  # type: ignore[override]  # the mistake under test
        return False


def test_a_driver_method_that_is_not_async_is_a_setup_error_naming_the_driver() -> None:
    """A plain-def is_shown stops the run as a set-up error naming the driver.

    It is never reported as failures of the provider's abort or cancel rules.
    """

    def factory() -> Subject:
        provider = ScriptedProvider()
        # A type checker refuses this driver already; an untyped one meets it at run time.
        driver: Any = _SyncIsShown(provider)
        return Subject(provider, driver)

    with pytest.raises(SetupError, match=r"_SyncIsShown\.is_shown must be async") as raised:
        run_suite(subject_factory=factory, kinds=["provider"], profile="quick", seed=1)
    assert "driver skeleton" in str(raised.value)


def test_under_ci_the_run_is_derandomised_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With CI set and no seed, no seed is offered; the reproducer sets CI instead."""
    monkeypatch.setenv("CI", "true")
    assert main([*BROKEN_RUN[:4], "--only", "provider-answers"]) == 1
    out = capsys.readouterr().out
    assert "derandomises the run" in out
    assert "reproduce: CI=true python -m dsh_user_interaction_conformance" in out
    assert "--seed" not in out


@pytest.mark.slow
def test_pytest_plugin_runs_checks_from_a_fixture(pytester: pytest.Pytester) -> None:
    """An implementer defines the subject fixture and one test; every provider check runs."""
    pytester.makeconftest(
        """
        import pytest
        from dsh_user_interaction_conformance import reference_subject

        @pytest.fixture
        def dsh_user_interaction_subject():
            return reference_subject
        """
    )
    (pytester.path / "test_conformance.py").write_text(
        "def test_conformance(dsh_conformance_check):\n    dsh_conformance_check()\n"
    )
    result = pytester.runpytest_subprocess("--dsh-profile", "quick", "--dsh-seed", "3")
    provider_checks = sum(check.kind == "provider" for check in CHECKS)
    result.assert_outcomes(
        passed=provider_checks + sum(c.kind == "binding" for c in CHECKS),
        skipped=sum(c.kind == "service" for c in CHECKS),
    )


@pytest.mark.slow
def test_pytest_plugin_fails_a_broken_provider_with_a_reproducer(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin fails the check that catches a broken provider and prints how to re-run it."""
    pytester.syspathinsert(ROOT)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(
        """
        import pytest
        from tests.gallery.providers import FACTORY_EXTRA_KEYS

        @pytest.fixture
        def dsh_user_interaction_subject():
            return FACTORY_EXTRA_KEYS
        """
    )
    (pytester.path / "test_conformance.py").write_text(
        "def test_conformance(dsh_conformance_check):\n    dsh_conformance_check()\n"
    )
    result = pytester.runpytest_subprocess(
        "--dsh-profile", "quick", "--dsh-seed", "9", "-k", "provider-answers"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FAILED: ANS-KEYS-1 (MUST)*", "*reproduce: pytest*--dsh-seed 9*"])


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_run_stops_after_the_first_check_that_fails_a_stop_on_requirement() -> None:
    """stop_on ends the run once a check fails one of its IDs; the rest are left out.

    Without it, the same run goes on through every check of the kind.
    """
    factory, requirement = BROKEN_PROVIDERS["trims-custom-text"]
    options: dict[str, Any] = {
        "subject_factory": factory,
        "kinds": ["provider"],
        "profile": "quick",
        "seed": 1,
        "shrink": False,
    }
    stopped = run_suite(**options, stop_on=[requirement])
    assert [o.check.name for o in stopped.outcomes] == ["provider-answers"]
    assert requirement in {r.requirement.id for r in stopped.results if r.status == "failed"}
    whole = run_suite(**options)
    assert len(whole.outcomes) == len([c for c in CHECKS if c.kind == "provider"]) > 1


@pytest.mark.slow
def test_stop_on_also_stops_the_failing_check_from_repeating_itself() -> None:
    """The check that failed a stop_on ID judges nothing more; without it, it goes on.

    An ask that returned another ask's answer is reported as cross-talk, the
    cause, never as the shape rules its answer breaks.
    """
    factory, requirement = BROKEN_PROVIDERS["answers-oldest-ask"]
    options: dict[str, Any] = {
        "subject_factory": factory,
        "only": ["provider-concurrency"],
        "seed": 7,
        "bound": 0.2,
        "shrink": False,
    }
    stopped = run_suite(**options, stop_on=[requirement])
    status = {r.requirement.id: r for r in stopped.results}
    assert status[requirement].status == "failed"
    assert re.fullmatch(
        r"ask \d returned the answer to ask \d( \(which is still pending\))?: "
        r"its question ids are ask \d's, not its own",
        status[requirement].message,
    )
    assert {r.status for r in stopped.results} == {"failed", "untested"}
    assert all(
        "the run stopped once provider-concurrency failed" in r.message
        for r in stopped.results
        if r.status == "untested"
    )
    whole = run_suite(**options)
    judged = {r.requirement.id for r in whole.results if r.status in {"passed", "failed"}}
    assert len(judged) > len({r for r, s in status.items() if s.status == "failed"})


@pytest.mark.slow
def test_a_concurrent_ui_that_shows_one_ask_at_a_time_fails_within_the_bound() -> None:
    """PRV-CONC-1 fails, naming the ask that never appeared, well before the example's limit."""
    factory, requirement = BROKEN_PROVIDERS["shows-one-ask-at-a-time"]
    report = run_suite(
        subject_factory=factory,
        only=["provider-concurrency"],
        seed=7,
        bound=0.2,
        shrink=False,
        stop_on=[requirement],
    )
    failed = {r.requirement.id: r for r in report.results if r.status == "failed"}
    assert set(failed) == {requirement}
    assert re.fullmatch(
        r"ask [\d, ]+ never appeared while (ask [\d, ]+) (was|were) pending: a UI that "
        r"declares itself concurrent must show every pending ask at once",
        failed[requirement].message,
    )


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "fault"),
    [
        ("drops-what-the-human-did", "PRV-ANSWER-1"),
        ("ignores-abort", "PRV-ABORT-2"),
        ("dismiss-as-abort", "PRV-DISMISS-1"),
    ],
)
def test_a_concurrent_ask_that_is_wrong_alone_too_is_not_a_concurrency_failure(
    name: str, fault: str
) -> None:
    """A UI that gets one ask wrong gets it wrong among others too: that is not PRV-CONC-1.

    The concurrency check asks the same request alone; the same outcome there
    is the lone ask's fault, and is reported as that requirement's.
    """
    report = run_suite(
        subject_factory=BROKEN_PROVIDERS[name][0],
        only=["provider-concurrency"],
        seed=3,
        bound=0.2,
        shrink=False,
    )
    status = {r.requirement.id: r for r in report.results}
    assert status["PRV-CONC-1"].status == "passed"
    assert status[fault].status == "failed"
    assert "alone, the same ask ends the same way" in status[fault].message


def test_a_concurrent_ask_that_is_right_alone_is_a_concurrency_failure() -> None:
    """A UI that loses the human's picks only while another ask is pending fails PRV-CONC-1.

    Its message says what the same ask returned alone.
    """
    report = run_suite(
        subject_factory=BROKEN_PROVIDERS["drops-picks-when-busy"][0],
        only=["provider-concurrency"],
        seed=3,
        shrink=False,
        stop_on=["PRV-CONC-1"],
    )
    failed = {r.requirement.id: r for r in report.results if r.status == "failed"}
    assert "PRV-ANSWER-1" not in failed
    assert "alone, the same ask returned {'answers'" in failed["PRV-CONC-1"].message


def test_a_binding_check_runs_a_quarter_of_the_profiles_examples() -> None:
    """Binding checks judge this package, the same in every run: 10 examples at the default."""
    report = run_suite(only=["binding-errors", "binding-abort-signal"], seed=4)
    ran = {outcome.check.name: outcome.examples for outcome in report.outcomes}
    assert ran == {"binding-errors": 10, "binding-abort-signal": 10}
    assert {r.status for r in report.binding} == {"passed"}


def test_the_watchdog_is_armed_again_only_when_an_example_could_outlast_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command line's last resort covers each example's patience plus 30 s.

    It is armed with 30 s to spare, so the examples after it leave it as it
    is until one could outlast it; the run disarms it at the end.
    """
    import faulthandler
    import io
    import sys

    from dsh_user_interaction_conformance import __main__ as cli

    armed: list[float | None] = []

    def arm(timeout: float, **_options: object) -> None:
        armed.append(timeout)

    monkeypatch.setattr(sys, "__stderr__", io.StringIO())
    monkeypatch.setattr(faulthandler, "dump_traceback_later", arm)
    monkeypatch.setattr(faulthandler, "cancel_dump_traceback_later", lambda: armed.append(None))
    try:
        for _ in range(3):
            cli._watchdog(10.0)
        assert armed == [70.0]
        cli._watchdog(45.0)  # 75 s of patience: more than the armed one has left
        assert armed == [70.0, 105.0]
    finally:
        cli._disarm_watchdog()
    cli._watchdog(10.0)
    cli._disarm_watchdog()
    assert armed == [70.0, 105.0, None, 70.0, None]
