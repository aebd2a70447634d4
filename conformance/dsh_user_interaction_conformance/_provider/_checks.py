"""Checks for providers: a simulated human drives the UI, and the answer is compared."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Collection, Coroutine, Mapping, Sequence
from typing import Any, Final, cast

from hypothesis import strategies as st

from dsh_user_interaction import (
    MESSAGES,
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    answer_violations,
)

from .._behaviour import Action, Behaviour, Dismiss, Nothing, Revise, Step, expected_answer
from .._difference import describe_difference
from .._engine import Draws, Example, Scenario, Setup, check
from .._registry import requirements
from .._stand_ins import code_of
from .._subject import Subject
from .._surfaces import surface_driver
from ..strategies import actions, dismissals, requests

__all__: list[str] = []

#: The answer rules every compared answer is judged against.
ANSWER_RULES: Final = (
    "ANS-SHAPE-1", "ANS-KEYS-1", "ANS-COUNT-1", "ANS-ORDER-1", "ANS-SEL-1", "ANS-SEL-2",
    "ANS-SEL-3", "ANS-SINGLE-1", "ANS-SINGLE-2", "ANS-CUSTOM-1",
)  # fmt: skip
#: Rules without which the items cannot be compared with what the human did.
_STRUCTURE: Final = frozenset({"ANS-SHAPE-1", "ANS-COUNT-1", "ANS-ORDER-1", "ANS-SEL-1"})

_REQUESTS: Final = requests()
_AGAIN: Final = st.sampled_from(
    ("nothing more", "the same questions again", "the same request again", "another request")
)
_SMALL_REQUESTS: Final = requests(max_questions=2)


def _snapshot(request: AskUserQuestionRequest) -> object:
    """What PRV-MUTATE-1 compares: the questions' data, and which other objects it holds.

    The questions are the suite's own plain data, compared by value; the agent
    and the signal are opaque, compared by identity (a copy of an arbitrary
    agent object need not equal it).
    """
    others = tuple(sorted((key, id(value)) for key, value in request.items() if key != "questions"))
    return copy.deepcopy(request["questions"]), others


async def stop(example: Example, task: asyncio.Future[Any]) -> None:
    """Cancel the provider's call if it still runs; fail ``PRV-CANCEL-1`` if it will not end.

    The call is never awaited directly, so a provider that swallows
    cancellation cannot hold the scenario.
    """
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved; whatever it was has been judged
        return
    task.cancel()
    # Clean-up often runs while an error propagates: keep the stage it is blamed on.
    previous = example.waiting
    example.stage("PRV-CANCEL-1", "the provider's call after it was cancelled")
    done, _ = await asyncio.wait({task}, timeout=example.bound)
    if not done:
        example.fail(
            "PRV-CANCEL-1",
            f"the provider's call was still running {example.bound:g} s after it was "
            "cancelled: it swallows cancellation",
        )
    example.stage(*previous)


async def outcome_of(
    example: Example, task: asyncio.Future[Any], requirement: str, pending: str
) -> tuple[bool, object]:
    """Wait at most the bound for *task*; ``(False, None)`` after failing *requirement*.

    Otherwise ``(True, result)``, where the result may be the exception it raised.
    """
    example.stage(requirement, pending)
    done, _ = await asyncio.wait({task}, timeout=example.bound)
    if not done:
        example.fail(requirement, f"{pending}: still pending after {example.bound:g} s")
        await stop(example, task)
        return False, None
    if task.cancelled():
        return True, asyncio.CancelledError()
    error = task.exception()
    return True, error if error is not None else task.result()


async def expect_error(
    example: Example,
    task: asyncio.Future[Any],
    code: ErrorCode,
    requirement: str,
    *,
    pending: str,
    answered: str,
) -> BaseException | None:
    """Judge *requirement*: *task* raises *code* within the bound. The error, or ``None``."""
    settled, outcome = await outcome_of(example, task, requirement, pending)
    if not settled:
        return None
    if isinstance(outcome, asyncio.CancelledError):
        example.fail(requirement, f"the call was cancelled instead of raising {code}")
        return None
    if not isinstance(outcome, BaseException):
        example.fail(requirement, f"{answered}: {outcome!r}")
        return None
    example.verify(requirement, code_of(outcome) == code, lambda: f"raised {outcome!r}, not {code}")
    return outcome if code_of(outcome) == code else None


def _not_json_shaped(answer: object) -> list[tuple[str, str]]:
    """Where the answer uses another container than JSON's: a tuple for a list, say.

    The JSON round-trip below would turn those into lists; a consumer in
    another language would not get the same data.
    """
    problems: list[tuple[str, str]] = []
    if not isinstance(answer, dict):
        return problems
    items: object = cast("dict[str, object]", answer).get("answers")
    if not isinstance(items, list):
        if isinstance(items, tuple):
            problems.append(("ANS-SHAPE-1", "answers is a tuple, not a list"))
        return problems
    for index, item in enumerate(cast("list[object]", items)):
        if isinstance(item, dict):
            selected: object = cast("dict[str, object]", item).get("selected")
            if isinstance(selected, tuple):
                problems.append(("ANS-SEL-1", f"answers[{index}].selected is a tuple, not a list"))
    return problems


def _where(question: object) -> str:
    return f"question {question!r}: " if question is not None else ""


def compare(
    example: Example,
    request: AskUserQuestionRequest,
    expected: AskUserQuestionAnswer,
    answer: object,
    *,
    requirement: str = "PRV-ANSWER-1",
    actions: Sequence[Action] = (),
    revision: str = "PRV-REVISE-1",
    note: str = "",
) -> None:
    """Judge *answer*: it keeps the answer rules and says exactly what the human did.

    A question the human revised (*actions*, when given) is judged by
    *revision* instead of *requirement*, and its message lists the steps.
    *note* ends the message of a wrong answer (what the same ask did alone).
    """
    example.judge(*ANSWER_RULES, "PRV-TEXT-1", requirement)
    revisions = {
        position: action.steps
        for position, action in enumerate(actions)
        if isinstance(action, Revise)
    }
    if revisions:
        example.judge(revision)
    for rule, problem in _not_json_shaped(answer):
        example.fail(rule, problem)
    try:
        # Judge the data, not the objects: a str subclass or an object with a
        # lying __eq__ must not pass for the text it claims to be.
        answer = json.loads(json.dumps(answer, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as error:
        example.fail("ANS-SHAPE-1", f"the answer is not JSON data ({type(error).__name__})")
        return
    violations = answer_violations(request, answer)
    levels = requirements()
    # A SHOULD broken on a question that also breaks a MUST is the same fault's
    # knock-on (a duplicated label is also out of option order): failed with it.
    mandatory = [
        v for v in violations if v.requirement not in levels or levels[v.requirement].mandatory
    ]
    for violation in mandatory:
        example.fail(
            violation.requirement,
            _where(violation.question) + violation.message,
            knock_ons=[
                (other.requirement, _where(other.question) + other.message)
                for other in violations
                if other.question == violation.question and other not in mandatory
            ],
        )
    for violation in violations:
        example.fail(violation.requirement, _where(violation.question) + violation.message)
    if any(v.requirement in _STRUCTURE for v in violations):
        return
    got_items: list[dict[str, Any]] = cast("Any", answer)["answers"]
    for position, (question, want, got) in enumerate(
        zip(request["questions"], expected["answers"], got_items, strict=True)
    ):
        where = f"question {question['id']!r}"
        rule = requirement
        if position in revisions:
            rule = revision
            where += f", after the human's steps {_steps(revisions[position])}"
        if question.get("multiSelect") is True and len(want["selected"]) >= 2:
            example.judge("ANS-MULTI-2")
        intent = "intent" in question
        if intent:
            example.judge("PRV-INTENT-1")
        if set(got["selected"]) != set(want["selected"]):
            # An intent question answered wrong breaks PRV-INTENT-1 by the same fault.
            example.fail(
                rule,
                f"{where}: the human picked {want['selected']!r}; "
                f"answered {got['selected']!r}{note}",
                knock_ons=(
                    [("PRV-INTENT-1", f"{where}: an intent question answered {got!r}")]
                    if intent
                    else []
                ),
            )
        if "custom" in want and "custom" in got and want["custom"] != got["custom"]:
            misread = position in revisions and _misread_revision(
                revisions[position], got["custom"]
            )
            example.fail(
                # Earlier text kept, or texts run together: the revision was misread.
                # Anything else done to the text is PRV-TEXT-1's, revised or not.
                rule if misread else "PRV-TEXT-1",
                f"{where}: the human typed {want['custom']!r}, the answer says "
                f"{got['custom']!r}; {describe_difference(want['custom'], got['custom'])}{note}",
            )
        if ("custom" in want) != ("custom" in got):
            said = "typed text" if "custom" in want else "typed nothing"
            if position in revisions:
                said = "left text typed" if "custom" in want else "left no text typed"
            example.fail(rule, f"{where}: the human {said}, but the answer has {got!r}{note}")


def _wrong_answer(expected: AskUserQuestionAnswer, answer: object) -> bool:
    """Whether *answer* says other than the human did: other picks, or other text.

    An answer of another shape says nothing here: :func:`compare` fails it
    by the answer rule it breaks, whoever asked.
    """
    try:
        got_items = cast("dict[str, Any]", answer)["answers"]
        if len(got_items) != len(expected["answers"]):
            return False
        return any(
            set(got["selected"]) != set(want["selected"]) or got.get("custom") != want.get("custom")
            for want, got in zip(expected["answers"], got_items, strict=True)
        )
    except Exception:  # noqa: BLE001 - any other shape: compare judges it
        return False


def _misread_revision(steps: Sequence[Step], said: object) -> bool:
    """Whether *said* is text the human typed over or cleared, or typed texts run together."""
    typed: list[str] = []
    since_clear: list[str] = []
    for kind, value in steps:
        if kind == "type":
            typed.append(value)
            since_clear.append(value)
        elif kind == "clear":
            since_clear = []
    return said in typed[:-1] or (len(since_clear) > 1 and said == "".join(since_clear))


def _steps(steps: Sequence[Step]) -> str:
    """The steps of a revision as a reader follows them: ``pick 'a', type 'x', clear``."""
    return ", ".join(
        kind if kind in {"clear", "skip", "unskip"} else f"{kind} {value!r}"
        for kind, value in steps
    )


async def _perform(
    example: Example,
    subject: Subject,
    request: AskUserQuestionRequest,
    behaviour: Behaviour,
    *,
    requirement: str = "PRV-ANSWER-1",
    ask: asyncio.Future[Any] | None = None,
    surface: int = 0,
) -> None:
    """Have the driver act on *request*; if the *ask* ends first, stop waiting for the driver.

    A provider whose ask fails at once never shows the request, and a driver
    waiting for it would wait forever: the outcome of the ask is judged instead.
    A *surface* other than 0 is acted on through the driver's ``perform_on``.
    """
    on = surface_driver(subject.driver) if surface else None
    where = f" on surface {surface}" if on is not None else ""
    example.stage(requirement, f"the driver, showing and acting on the request{where}")
    acting = asyncio.ensure_future(
        subject.driver.perform(request, behaviour)
        if on is None
        else on.perform_on(surface, request, behaviour)
    )
    watched: set[asyncio.Future[Any]] = {acting} if ask is None else {acting, ask}
    done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
    if acting in done:
        acting.result()  # a driver that raises is reported under this stage
        return
    acting.cancel()
    await asyncio.wait({acting}, timeout=example.bound)
    if acting.done() and not acting.cancelled():
        acting.exception()  # retrieved: the ask's outcome is what is judged


@check(
    "provider-answers",
    "PRV-ANSWER-1", "PRV-REVISE-1", "PRV-TEXT-1", "PRV-MUTATE-1", "PRV-INTENT-1", "ANS-SHAPE-1",
    "ANS-KEYS-1", "ANS-COUNT-1", "ANS-ORDER-1", "ANS-SEL-1", "ANS-SEL-2", "ANS-SEL-3",
    "ANS-SINGLE-1", "ANS-SINGLE-2", "ANS-MULTI-2", "ANS-CUSTOM-1",
    kind="provider",
    gates={"PRV-REVISE-1": lambda c: c.revises},
)  # fmt: skip
def provider_answers(draw: Draws, setup: Setup) -> Scenario:
    """The provider returns exactly what the simulated human did, hostile text included."""
    request = draw(_REQUESTS, "request")
    behaviour = draw(actions(request, setup.capabilities), "actions")
    asks = [(request, behaviour)]
    # One subject, asked again: with the same questions (a UI must not replay an
    # old answer), or with other ones.
    again = draw(_AGAIN, "then")
    if again == "the same questions again":
        same: AskUserQuestionRequest = copy.deepcopy(request)
        asks.append((same, draw(actions(same, setup.capabilities), "actions, second ask")))
    elif again == "the same request again":
        asks.append((request, draw(actions(request, setup.capabilities), "actions, second ask")))
    elif again == "another request":
        other = draw(_REQUESTS, "second request")
        asks.append((other, draw(actions(other, setup.capabilities), "actions, second ask")))

    async def scenario(example: Example) -> None:
        subject = await example.subject()
        before = [_snapshot(r) for r, _ in asks]
        for number, (asked, acts) in enumerate(asks, 1):
            where = "" if len(asks) == 1 else f"ask {number}: "
            example.stage("PRV-ANSWER-1", f"{where}the provider's ask()")
            task = asyncio.ensure_future(subject.provider.ask(asked))
            try:
                await _perform(example, subject, asked, acts, ask=task)
                settled, answer = await outcome_of(
                    example, task, "PRV-ANSWER-1", f"{where}the provider's answer"
                )
                if not settled:
                    return
                if isinstance(answer, BaseException):
                    example.fail(
                        "PRV-ANSWER-1",
                        f"{where}the provider raised {answer!r} instead of answering",
                    )
                    return
                compare(example, asked, expected_answer(asked, acts), answer, actions=acts)
            finally:
                await stop(example, task)
        for (asked, _), snapshot in zip(asks, before, strict=True):
            example.verify(
                "PRV-MUTATE-1",
                _snapshot(asked) == snapshot,
                "the provider changed a request it was given",
            )

    return scenario


@check(
    "provider-lifecycle",
    "PRV-ABORT-1", "PRV-ABORT-2", "PRV-CANCEL-1", "PRV-DISMISS-1", "ERR-MSG-1",
    kind="provider",
    gates={
        "PRV-DISMISS-1": lambda c: c.can_dismiss,
        "ERR-MSG-1": lambda c: c.can_dismiss,
        "PRV-CANCEL-1": lambda c: c.cancellable,
    },
    parts=4,
    share=0.5,
)  # fmt: skip
def provider_lifecycle(draw: Draws, setup: Setup) -> Scenario:
    """Pre-aborted, aborted, dismissed and cancelled asks end as specified, off the screen.

    One drawn request goes through all four, each with a fresh subject. Since
    every example judges every ending, whatever it draws, the check runs half
    the profile's examples (four subjects each): over 20 seeds, the gallery's
    faults it must catch were all caught by the fourth example.
    """
    request = draw(_REQUESTS, "request")
    observes = setup.capabilities.observes_screen
    dismissal = _dismissal(draw, setup, "the dismissal")

    async def off_screen(
        example: Example, subject: Subject, shown: AskUserQuestionRequest, requirement: str
    ) -> None:
        if observes:
            example.stage(requirement, "the driver's is_shown()")
            still = await subject.driver.is_shown(shown)
            example.verify(requirement, not still, "the request is still on screen")

    async def pre_aborted(example: Example) -> None:
        example.stage("PRV-ABORT-1", "the subject, for a request that already aborted")
        subject = await example.subject()
        aborted: AskUserQuestionRequest = {**request, "signal": AbortSignal.abort()}
        task = asyncio.ensure_future(subject.provider.ask(aborted))
        error = await expect_error(
            example,
            task,
            ErrorCode.ASK_ABORTED,
            "PRV-ABORT-1",
            pending="the ask of a request whose signal already aborted",
            answered="answered an aborted request",
        )
        if error is not None:
            await off_screen(example, subject, aborted, "PRV-ABORT-1")

    async def aborted(example: Example) -> None:
        example.stage("PRV-ABORT-2", "the subject, for a request to abort")
        subject = await example.subject()
        controller = AbortController()
        live: AskUserQuestionRequest = {**request, "signal": controller.signal}
        task = asyncio.ensure_future(subject.provider.ask(live))
        await _perform(example, subject, live, Nothing(), requirement="PRV-ABORT-2", ask=task)
        controller.abort()
        error = await expect_error(
            example,
            task,
            ErrorCode.ASK_ABORTED,
            "PRV-ABORT-2",
            pending="the ask after its signal aborted",
            answered="returned a late answer after the abort",
        )
        if error is not None:
            await off_screen(example, subject, live, "PRV-ABORT-2")

    async def dismissed(example: Example) -> None:
        example.stage("PRV-DISMISS-1", "the subject, for a request to dismiss")
        subject = await example.subject()
        task = asyncio.ensure_future(subject.provider.ask(request))
        try:
            await _perform(
                example, subject, request, dismissal, requirement="PRV-DISMISS-1", ask=task
            )
            error = await expect_error(
                example,
                task,
                ErrorCode.ASK_CANCELLED,
                "PRV-DISMISS-1",
                pending="the ask after the human dismissed it",
                answered="a dismissed batch returned an answer",
            )
            if error is not None:
                example.verify(
                    "ERR-MSG-1",
                    str(error) == MESSAGES[ErrorCode.ASK_CANCELLED],
                    lambda: f"ASK_CANCELLED with message {str(error)!r}",
                )
        finally:
            await stop(example, task)

    async def cancelled(example: Example) -> None:
        example.stage("PRV-CANCEL-1", "the subject, for a request to cancel")
        subject = await example.subject()
        task = asyncio.ensure_future(subject.provider.ask(request))
        await _perform(example, subject, request, Nothing(), requirement="PRV-CANCEL-1", ask=task)
        task.cancel()
        example.stage("PRV-CANCEL-1", "the provider's call after it was cancelled")
        done, _ = await asyncio.wait({task}, timeout=example.bound)
        example.judge("PRV-CANCEL-1")
        if not done:
            example.fail(
                "PRV-CANCEL-1",
                f"the cancelled call was still running {example.bound:g} s later: "
                "it swallows cancellation",
            )
            return
        if not task.cancelled():
            ended = task.exception() or task.result()
            example.fail("PRV-CANCEL-1", f"the cancelled call ended with {ended!r}")
        await off_screen(example, subject, request, "PRV-CANCEL-1")

    async def scenario(example: Example) -> None:
        # A part whose requirements all failed already is skipped: it would only wait again.
        if not example.done_with("PRV-ABORT-1"):
            await pre_aborted(example)
        if not example.done_with("PRV-ABORT-2"):
            await aborted(example)
        if setup.capabilities.can_dismiss and not example.done_with("PRV-DISMISS-1", "ERR-MSG-1"):
            await dismissed(example)
        if setup.capabilities.cancellable and not example.done_with("PRV-CANCEL-1"):
            await cancelled(example)

    return scenario


def _dismissal(draw: Draws, setup: Setup, label: str) -> Dismiss:
    """A dismissal in one of the ways the driver declared; drawn only if it declared any."""
    if setup.capabilities.can_dismiss and setup.capabilities.ways_of("dismiss"):
        return draw(dismissals(setup.capabilities), label)
    return Dismiss()


def _one_of(indices: Sequence[int]) -> st.SearchStrategy[int | None]:
    """None, or one of *indices*; shrinks toward None."""
    return st.none() | st.sampled_from(indices)


def _pieces(batch: Sequence[AskUserQuestionRequest]) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(1, len(batch)), min_size=1, max_size=len(batch))


def _ids(value: object) -> tuple[object, ...] | None:
    """The ids of an answer's items, or of a request's questions; ``None`` if it has none."""
    if not isinstance(value, Mapping):
        return None
    items: object = cast("Mapping[str, object]", value).get("answers")
    if items is None:
        items = cast("Mapping[str, object]", value).get("questions")
    if not isinstance(items, list):
        return None
    return tuple(
        cast("Mapping[str, object]", item).get("id") if isinstance(item, Mapping) else None
        for item in cast("list[object]", items)
    )


def _meant_for(answer: object, asked: Sequence[AskUserQuestionRequest], index: int) -> int | None:
    """The other ask whose questions *answer* answers, when it cannot be ask *index*'s."""
    got = _ids(answer)
    own = _ids(asked[index])
    if got is None or got == own:
        return None
    return next((n for n, request in enumerate(asked) if n != index and _ids(request) == got), None)


async def _all_shown(
    example: Example,
    subject: Subject,
    asked: Sequence[AskUserQuestionRequest],
    tasks: Sequence[asyncio.Future[Any]],
) -> None:
    """Wait until every pending ask is on screen at once, as a concurrent UI must show them.

    An ask that has not appeared after twice the bound and a second (by the
    example's loop clock, which leaves out time spent waiting for a CPU)
    fails ``PRV-CONC-1``: a UI that shows one ask at a time is not concurrent,
    and waiting for it would only end at the example's limit.
    """
    showing = [
        asyncio.ensure_future(
            _perform(example, subject, r, Nothing(), requirement="PRV-CONC-1", ask=t)
        )
        for r, t in zip(asked, tasks, strict=True)
    ]
    try:
        _, waiting = await asyncio.wait(showing, timeout=2 * example.bound + 1.0)
        for step in showing:
            if step.done():
                step.result()  # a driver that raised is reported under this stage
        if waiting:
            missing = [n for n, step in enumerate(showing) if step in waiting]
            shown = [n for n in range(len(showing)) if n not in missing]
            example.fail(
                "PRV-CONC-1",
                f"ask {', '.join(map(str, missing))} never appeared while "
                f"{'ask ' + ', '.join(map(str, shown)) if shown else 'the others'} "
                f"{'was' if len(shown) == 1 else 'were'} pending: a UI that declares itself "
                "concurrent must show every pending ask at once",
            )
    finally:
        for step in showing:
            step.cancel()
        await asyncio.wait(showing, timeout=example.bound)


def _judge_cross_talk(
    example: Example,
    asked: Sequence[AskUserQuestionRequest],
    tasks: Sequence[asyncio.Future[Any]],
    done: Collection[asyncio.Future[Any]],
) -> None:
    """Fail ``PRV-CONC-1`` for an ask that returned another ask's answer.

    That is the cause; the shape rules it breaks, and the other ask left
    pending, are its symptoms, so it is reported first.
    """
    for index, task in enumerate(tasks):
        if task not in done or task.cancelled() or task.exception() is not None:
            continue
        meant = _meant_for(task.result(), asked, index)
        if meant is not None:
            left = " (which is still pending)" if tasks[meant] not in done else ""
            example.fail(
                "PRV-CONC-1",
                f"ask {index} returned the answer to ask {meant}{left}: its question ids "
                f"are ask {meant}'s, not its own",
            )


#: What an ask alone gave when it did not end within the bound.
_STILL_PENDING: Final = object()

#: The requirement a lone ask breaks when it ends wrong, by how the human ended it.
_LONE: Final = {"answered": "PRV-ANSWER-1", "aborted": "PRV-ABORT-2", "dismissed": "PRV-DISMISS-1"}


async def _whose_fault(
    example: Example,
    request: AskUserQuestionRequest,
    behaviour: Behaviour,
    outcome: object,
    *,
    lone: str,
    aborted: bool = False,
) -> tuple[str, str]:
    """Whose fault a concurrent ask's wrong *outcome* is: the requirement, and a note saying why.

    The same *request* is asked alone, on a fresh subject, the human doing
    *behaviour* (or the signal aborting once it shows, when *aborted*). The
    same outcome alone is a fault of the ask itself, *lone*'s (the checks of
    lone asks find it too); another outcome is concurrency's, ``PRV-CONC-1``.
    """
    if example.done_with("PRV-CONC-1", lone):
        return lone, ""  # both failed already in this check: asking again tells nothing
    alone = await _ask_alone(example, request, behaviour, aborted=aborted)
    if _same_outcome(alone, outcome):
        return lone, "; alone, the same ask ends the same way: not a fault of concurrency"
    if alone is _STILL_PENDING:
        ended = f"was still pending {example.bound:g} s later"
    elif isinstance(alone, BaseException):
        ended = f"raised {alone!r}"
    else:
        ended = f"returned {alone!r}"
    return "PRV-CONC-1", f"; alone, the same ask {ended}"


async def _ask_alone(
    example: Example, request: AskUserQuestionRequest, behaviour: Behaviour, *, aborted: bool
) -> object:
    """The outcome of *request* asked alone on a fresh subject: a value, an error, or pending."""
    previous = example.waiting
    subject = await example.subject()
    controller = AbortController()
    live: AskUserQuestionRequest = {**request, "signal": controller.signal}
    task = asyncio.ensure_future(subject.provider.ask(live))
    try:
        acting = Nothing() if aborted else behaviour
        await _perform(example, subject, live, acting, requirement="PRV-CONC-1", ask=task)
        if aborted:
            controller.abort()
        example.stage("PRV-CONC-1", "the same ask alone, to tell whose fault its outcome is")
        done, _ = await asyncio.wait({task}, timeout=example.bound)
        if not done:
            return _STILL_PENDING
        if task.cancelled():
            return asyncio.CancelledError()
        return task.exception() or task.result()
    finally:
        await stop(example, task)
        example.stage(*previous)


def _same_outcome(first: object, second: object) -> bool:
    """Whether two outcomes are the same: equal JSON data, or errors of one type and code."""
    if isinstance(first, BaseException) or isinstance(second, BaseException):
        return type(first) is type(second) and code_of(first) == code_of(second)
    if first is _STILL_PENDING or second is _STILL_PENDING:
        return first is second
    try:
        return json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


@check(
    "provider-concurrency",
    "PRV-CONC-1",
    "PRV-REVISE-1",
    kind="provider",
    needs=lambda c: c.concurrent,
    parts=2,
    gates={"PRV-REVISE-1": lambda c: c.revises},
)
def provider_concurrency(draw: Draws, setup: Setup) -> Scenario:
    """Several pending asks, answered in any interleaving, each get their own answer.

    The human answers in a drawn order (the newest first as often as any
    other), several in the same tick; one ask may be aborted, and another
    dismissed by the human, while the others wait: they stay pending and
    answerable.
    """
    count = draw(st.integers(2, 4), "pending asks")
    batch = [draw(_SMALL_REQUESTS, f"request {n}") for n in range(count)]
    behaviours: list[Behaviour] = [
        draw(actions(r, setup.capabilities), f"actions {n}") for n, r in enumerate(batch)
    ]
    order = draw(st.permutations(range(count)), "answer order")
    # On a UI of several surfaces, each ask's human acts on a drawn one.
    surfaces = setup.capabilities.surfaces
    on = draw(st.lists(st.integers(0, surfaces - 1), min_size=count, max_size=count), "surfaces")
    groups = draw(_pieces(batch), "answered together (sizes of consecutive groups)")
    aborted = draw(st.none() | st.integers(0, count - 1), "aborted ask")
    dismissed = None
    # The dismissed ask is one the human acts on before another ask they answer, so
    # some ask is pending when the dialog closes; that ask must stay open.
    answered = [n for n in order if n != aborted]
    if setup.capabilities.can_dismiss and len(answered) > 1:
        dismissed = draw(_one_of(answered[:-1]), "dismissed ask (its dialog closed)")
        if dismissed is not None:
            behaviours[dismissed] = _dismissal(draw, setup, "its dismissal")

    async def scenario(example: Example) -> None:
        subject = await example.subject()
        controllers = [AbortController() for _ in batch]
        live: list[AskUserQuestionRequest] = [
            {**r, "signal": c.signal} for r, c in zip(batch, controllers, strict=True)
        ]
        tasks = [asyncio.ensure_future(subject.provider.ask(r)) for r in live]
        try:
            await _all_shown(example, subject, live, tasks)

            def step(index: int) -> Coroutine[Any, Any, None] | None:
                """Abort ask *index* now, or return the human's acting on it."""
                if index == aborted:
                    controllers[index].abort()
                    return None
                return _perform(
                    example,
                    subject,
                    live[index],
                    behaviours[index],
                    requirement="PRV-CONC-1",
                    ask=tasks[index],
                    surface=on[index],
                )

            remaining = list(order)
            for size in groups:
                group, remaining = remaining[:size], remaining[size:]
                if dismissed in group:
                    # The dialog closes first; the rest of its group then answer.
                    group.remove(dismissed)
                    if (closing := step(dismissed)) is not None:
                        await closing
                steps = [acting for index in group if (acting := step(index)) is not None]
                await asyncio.gather(*steps)
            for index in remaining:
                if (acting := step(index)) is not None:
                    await acting
            example.stage("PRV-CONC-1", "the concurrent asks, once every human had acted")
            done, _ = await asyncio.wait(tasks, timeout=example.bound)
            example.judge("PRV-CONC-1")
            _judge_cross_talk(example, live, tasks, done)
            ended_by = {aborted: ("aborted", ErrorCode.ASK_ABORTED)}
            ended_by[dismissed] = ("dismissed", ErrorCode.ASK_CANCELLED)
            for index, (request, behaviour, task) in enumerate(
                zip(live, behaviours, tasks, strict=True)
            ):
                ended = ended_by.get(index)
                if task not in done:
                    example.judge("PRV-CONC-1")
                    how = ended[0] if ended is not None else "answered"
                    rule, note = await _whose_fault(
                        example, batch[index], behaviour, _STILL_PENDING,
                        aborted=how == "aborted", lone=_LONE[how],
                    )  # fmt: skip
                    example.fail(rule, f"ask {index} is still pending after it was {how}{note}")
                    continue
                outcome: object = asyncio.CancelledError() if task.cancelled() else task.exception()
                # A wrong outcome is concurrency's fault only when the same ask alone
                # ends otherwise: else it is the lone ask's, and judged as that.
                if ended is not None:
                    how, code = ended
                    example.judge("PRV-CONC-1")
                    if outcome is not None and code_of(outcome) == code:
                        continue
                    rule, note = await _whose_fault(
                        example, batch[index], behaviour, outcome or task.result(),
                        aborted=how == "aborted", lone=_LONE[how],
                    )  # fmt: skip
                    example.fail(
                        rule, f"ask {index} was {how} but ended with {outcome or task!r}{note}"
                    )
                    continue
                if outcome is not None:
                    example.judge("PRV-CONC-1")
                    rule, note = await _whose_fault(
                        example, batch[index], behaviour, outcome, lone=_LONE["answered"]
                    )
                    example.fail(rule, f"ask {index} raised {outcome!r}{note}")
                    continue
                if isinstance(behaviour, (Dismiss, Nothing)):
                    continue  # only the dismissed ask: judged above
                expected = expected_answer(request, behaviour)
                rule, note = "PRV-CONC-1", ""
                if _wrong_answer(expected, task.result()):
                    example.judge("PRV-CONC-1")
                    rule, note = await _whose_fault(
                        example, batch[index], behaviour, task.result(), lone=_LONE["answered"]
                    )
                compare(
                    example,
                    request,
                    expected,
                    task.result(),
                    requirement=rule,
                    actions=behaviour,
                    revision="PRV-CONC-1" if rule == "PRV-CONC-1" and note else "PRV-REVISE-1",
                    note=note,
                )
        finally:
            for task in tasks:
                await stop(example, task)

    return scenario
