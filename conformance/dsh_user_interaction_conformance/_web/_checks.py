"""The web profile's check: a UI served over HTTP refuses what a hostile page sends (``WEB-*``).

One example shows one drawn request whose text carries markup, asks the
driver whether any of it became an element of the page (``WEB-MARKUP-1``),
then sends the pending ask hostile requests through the driver
(``HttpProbe``): one for each refusal in a drawn order and up to two more,
each wrong in one drawn way, each of which must be refused. Then the
human answers through the driver, and the ask's outcome must be the
human's: a request answered 4xx that settled the ask anyway is caught
there. Last, a second ask is settled by the page's own request, sent the
same way: a driver whose every request is refused (a wrong address, say)
would otherwise pass everything, so that is a set-up error.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias, cast

from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest, ErrorCode

from .._behaviour import Behaviour, Dismiss, Nothing, expected_answer
from .._engine import Draws, Example, Scenario, Setup, SetupError, check
from .._stand_ins import code_of
from .._subject import Subject
from ..strategies import actions, hostile_text, requests
from ._probe import CONTROL, PROBE_ATTRIBUTE, PROFILE, HttpProbe, SecretOffer

__all__: list[str] = []

SECRET, ORIGIN, BODY, COOKIE, MARKUP = PROFILE
#: What a hostile request may have wrong with it: the refusals' requirements.
_REFUSALS: Final = (SECRET, ORIGIN, BODY, COOKIE)

_REQUESTS: Final = requests(max_questions=2)

#: Markup a page must show as text, each piece carrying the probe's attribute:
#: plain elements, elements that would run script, and a quoted attribute's breakout.
_PIECES: Final = tuple(
    piece.format(probe=PROBE_ATTRIBUTE)
    for piece in (
        "<b {probe}>bold</b>",
        "<i {probe}>",
        '<img {probe} src="x" onerror="document.title=1">',
        "<svg {probe} onload=alert(1)></svg>",
        '<a {probe} href="javascript:alert(1)">link</a>',
        "<script {probe}>document.title=1</script>",
        "<details {probe} open ontoggle=alert(1)>",
        '"><span {probe}>',
        "'><span {probe}>",
        "<iframe {probe} srcdoc=x></iframe>",
        "<style {probe}>*{{}}</style>",
        "<math><mi {probe}>x</mi></math>",
    )
)
#: How a text field of the request carries a piece: as all of it, before it, or after it.
_PLACES: Final = st.sampled_from(("only", "before", "after"))
#: How a field the human need not read (a header, a detail) is left: as drawn, or with markup.
_MAYBE: Final = st.sampled_from(("keep", "only", "before", "after"))

#: The ways a foreign ``Origin`` is made from the page's own.
ForeignOrigin: TypeAlias = Literal[
    "another site", "null", "another port", "another scheme", "a longer host", "userinfo"
]
_FOREIGN: Final[tuple[ForeignOrigin, ...]] = (
    "another site",
    "null",
    "another port",
    "another scheme",
    "a longer host",
    "userinfo",
)
#: The types of a body a foreign page may send without a CORS preflight, with
#: parameters that a loose reading of the type might take for JSON.
_SIMPLE_TYPES: Final = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")
_PARAMETERS: Final = ("", "; charset=utf-8", "; x=application/json", ";application/json")


def foreign_origin(how: ForeignOrigin, own: str) -> str:
    """An origin other than *own*, made *how*: ``another port`` of ``http://h:8`` is ``http://h:9``.

    >>> foreign_origin("another port", "http://127.0.0.1:8123")
    'http://127.0.0.1:8124'
    >>> foreign_origin("a longer host", "http://127.0.0.1:8123")
    'http://127.0.0.1.evil.example:8123'
    """
    scheme, _, authority = own.partition("://")
    host, colon, port = authority.rpartition(":")
    if not colon or not port.isdigit():
        host, port = authority, ""
    at = f":{port}" if port else ""
    if how == "another site":
        return f"{scheme}://evil.example{at}"
    if how == "null":
        return "null"
    if how == "another port":
        return f"{scheme}://{host}:{int(port) % 65535 + 1 if port else 8080}"
    if how == "another scheme":
        return f"{'https' if scheme == 'http' else 'http'}://{authority}"
    if how == "a longer host":
        return f"{scheme}://{host}.evil.example{at}"
    return f"{scheme}://{host}{at}@evil.example"


@dataclass(frozen=True)
class _Attempt:
    """One hostile request: the requirement it judges, and what is wrong with it."""

    requirement: str
    outcome: AskUserQuestionAnswer | Dismiss
    offer: SecretOffer = "page"
    foreign: ForeignOrigin | None = None
    content_type: str = CONTROL

    def __repr__(self) -> str:
        wrong = {
            SECRET: f"secret={self.offer!r}",
            ORIGIN: f"origin={self.foreign!r}",
            BODY: f"content_type={self.content_type!r}",
            COOKIE: "secret='cookie'",
        }[self.requirement]
        shown = "a dismissal" if isinstance(self.outcome, Dismiss) else f"{self.outcome!r}"
        return f"{self.requirement}: {wrong}, settling with {shown}"


@st.composite
def _attempts(
    draw: st.DrawFn, request: AskUserQuestionRequest, setup: Setup, requirement: str | None = None
) -> _Attempt:
    """A hostile request: what settles the ask, and the one thing wrong with it (*requirement*)."""
    outcome: AskUserQuestionAnswer | Dismiss = Dismiss()
    if not (setup.capabilities.can_dismiss and draw(st.booleans())):
        plain = replace(setup.capabilities, revises=False)
        outcome = expected_answer(request, draw(actions(request, plain)))
    if requirement is None:
        requirement = draw(st.sampled_from(_REFUSALS))
    if requirement == SECRET:
        return _Attempt(requirement, outcome, offer=draw(st.sampled_from(("none", "wrong"))))
    if requirement == ORIGIN:
        return _Attempt(requirement, outcome, foreign=draw(st.sampled_from(_FOREIGN)))
    if requirement == BODY:
        kind = draw(st.sampled_from(_SIMPLE_TYPES)) + draw(st.sampled_from(_PARAMETERS))
        return _Attempt(requirement, outcome, content_type=kind)
    return _Attempt(requirement, outcome, offer="cookie")


def _marked(draw: Draws, request: AskUserQuestionRequest) -> AskUserQuestionRequest:
    """*request* with markup in its text: every question, some headers, details and options."""
    marked: dict[str, Any] = copy.deepcopy(cast("dict[str, Any]", request))
    pieces = st.sampled_from(_PIECES)

    def place(text: str, how: str, label: str) -> str:
        if how == "keep":
            return text
        piece = draw(pieces, label)
        if how == "only":
            return piece
        around = draw(hostile_text(), f"{label}, around it")
        return f"{piece}{around}{text}" if how == "before" else f"{text}{around}{piece}"

    for n, question in enumerate(marked["questions"]):
        where = f"question {n}"
        question["question"] = place(
            question["question"], draw(_PLACES, f"{where}: markup in the question"), where
        )
        for key in ("header", "detail"):
            if key in question:
                how = draw(_MAYBE, f"{where}: markup in the {key}")
                question[key] = place(question[key], how, f"{where}, {key}")
        renamed: dict[str, str] = {}
        for k, option in enumerate(question.get("options", [])):
            at = f"{where}, option {k}"
            if "description" in option:
                how = draw(_MAYBE, f"{at}: markup in the description")
                option["description"] = place(option["description"], how, f"{at}, description")
            # A label keeps its text after the markup: labels stay distinct, exactly.
            if draw(st.booleans(), f"{at}: markup before the label"):
                piece = draw(pieces, f"{at}, label")
                renamed[option["label"]] = f"{piece}{option['label']}"
                option["label"] = renamed[option["label"]]
        intent = question.get("intent")
        if isinstance(intent, dict) and cast("dict[str, Any]", intent).get("approve") in renamed:
            question["intent"] = {**intent, "approve": renamed[intent["approve"]]}
    return cast("AskUserQuestionRequest", marked)


def _same(outcome: object, sent: AskUserQuestionAnswer | Dismiss) -> bool:
    """Whether the ask's *outcome* is what *sent* would have made it (labels in any order)."""
    if isinstance(sent, Dismiss):
        return code_of(outcome) == ErrorCode.ASK_CANCELLED
    try:
        got = cast("dict[str, Any]", outcome)["answers"]
        return len(got) == len(sent["answers"]) and all(
            mine.get("id") == theirs["id"]
            and set(mine.get("selected", ())) == set(theirs["selected"])
            and mine.get("custom") == theirs.get("custom")
            for mine, theirs in zip(got, sent["answers"], strict=True)
        )
    except Exception:  # noqa: BLE001 - any other shape is no answer the suite sent
        return False


async def _settles(example: Example, task: asyncio.Future[Any]) -> tuple[bool, object]:
    """Wait at most the bound for *task*: whether it ended, and how (a result or an error)."""
    done, _ = await asyncio.wait({task}, timeout=example.bound)
    if not done:
        return False, None
    if task.cancelled():
        return True, asyncio.CancelledError()
    return True, task.exception() or task.result()


async def _stop(task: asyncio.Future[Any], bound: float) -> None:
    """Cancel the provider's call if it still runs; never wait on it past *bound*."""
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved: the outcome was judged, or is not this check's
        return
    task.cancel()
    await asyncio.wait({task}, timeout=bound)


async def _act(
    subject: Subject,
    request: AskUserQuestionRequest,
    behaviour: Behaviour,
    ask: asyncio.Future[Any],
) -> bool:
    """Have the driver do *behaviour*; ``False`` when the ask ended first (nothing to act on)."""
    acting = asyncio.ensure_future(subject.driver.perform(request, behaviour))
    done, _ = await asyncio.wait({acting, ask}, return_when=asyncio.FIRST_COMPLETED)
    if acting in done:
        acting.result()  # a driver that raises is reported under the stage
        return True
    acting.cancel()
    await asyncio.wait({acting}, timeout=1.0)
    if acting.done() and not acting.cancelled():
        acting.exception()  # retrieved: the ask's outcome is what is judged
    return False


def _probe_of(subject: Subject) -> HttpProbe:
    driver: object = subject.driver
    if not isinstance(driver, HttpProbe):
        raise SetupError(
            f"the driver {type(driver).__qualname__} of {subject.name} comes with serves_http, "
            "but is no HttpProbe: it needs origin, send() and markup_from_model()"
        )
    return driver


@check(
    "web-profile",
    *PROFILE,
    kind="provider",
    needs=lambda c: c.serves_http,
    parts=2,
    share=0.5,
)
def web_profile(draw: Draws, setup: Setup) -> Scenario:
    """A UI served over HTTP refuses what a hostile page sends, and shows model text as text.

    Each example judges ``WEB-MARKUP-1`` and every refusal, once each in a
    drawn order and up to two more times, so half the profile's examples
    (20 by default, 4 at the quick profile) judge each refusal at least
    that often. When an example judged only one to three of them, the quick
    profile left ``WEB-BODY-1`` untested on the web page at seed 1: a page
    that took form bodies would have passed there unjudged.
    """
    request = _marked(draw, draw(_REQUESTS, "request"))
    # One of each refusal, in a drawn order, and up to two more of any: every example
    # judges all four, so that no profile, however quick, leaves one of them untested.
    each = st.permutations(_REFUSALS).flatmap(
        lambda order: st.tuples(*(_attempts(request, setup, r) for r in order))
    )
    attempts = [
        *draw(each, "hostile requests, one of each"),
        *draw(st.lists(_attempts(request, setup), max_size=2), "more hostile requests"),
    ]
    # No revisions: they judge the form (PRV-REVISE-1, in the provider checks), not the door.
    plain = replace(setup.capabilities, revises=False)
    behaviour = draw(actions(request, plain), "the human's actions")
    human = expected_answer(request, behaviour)

    async def refusals(example: Example, subject: Subject, probe: HttpProbe) -> None:
        task = asyncio.ensure_future(subject.provider.ask(request))
        try:
            example.stage(MARKUP, "the driver, showing the request")
            if not await _act(subject, request, Nothing(), task):
                return  # the ask ended before it was shown: the provider checks judge that
            example.stage(MARKUP, "the driver's markup_from_model()")
            example.verify(
                MARKUP,
                not await probe.markup_from_model(request),
                f"model text became markup: the page has an element with {PROBE_ATTRIBUTE}",
            )
            sent: list[_Attempt] = []
            let_in: list[_Attempt] = []
            for attempt in attempts:
                example.stage(attempt.requirement, "the driver's send()")
                origin = probe.origin
                if attempt.foreign is not None:
                    origin = foreign_origin(attempt.foreign, origin)
                status = await probe.send(
                    request,
                    attempt.outcome,
                    secret=attempt.offer,
                    origin=origin,
                    content_type=attempt.content_type,
                )
                sent.append(attempt)
                if not 400 <= status < 500:
                    let_in.append(attempt)
                example.verify(
                    attempt.requirement,
                    400 <= status < 500,
                    f"{attempt!r} (Origin {origin!r}): answered {status}, not refused",
                )
            example.stage(sent[0].requirement, "the human's answer, after the refused requests")
            await _act(subject, request, behaviour, task)
            settled, outcome = await _settles(example, task)
            if not settled:
                return  # still pending: the provider checks judge a provider that never answers
            if any(_same(outcome, a.outcome) for a in let_in):
                return  # a request let in settled it: failed by its status already
            taken = [a for a in sent if _same(outcome, a.outcome) and not _same(human, a.outcome)]
            if taken:
                example.fail(
                    taken[0].requirement,
                    f"the ask ended with what a refused request sent ({taken[0]!r}), "
                    f"not with the human's answer: {outcome!r}",
                    *sorted({a.requirement for a in taken[1:]} - {taken[0].requirement}),
                )
        finally:
            await _stop(task, example.bound)

    async def control(example: Example, subject: Subject, probe: HttpProbe) -> None:
        again: AskUserQuestionRequest = copy.deepcopy(request)
        task = asyncio.ensure_future(subject.provider.ask(again))
        try:
            if not await _act(subject, again, Nothing(), task):
                return
            status = await probe.send(
                again,
                human,
                secret="page",  # noqa: S106 - how the secret is offered, not a password
                origin=probe.origin,
                content_type=CONTROL,
            )
            if not 200 <= status < 300:
                raise SetupError(
                    f"the driver's send() of the page's own request (the secret as the page "
                    f"sends it, Origin {probe.origin!r}, {CONTROL}) was answered {status}: a "
                    "driver whose every request is refused cannot show that any is refused"
                )
        finally:
            await _stop(task, example.bound)

    async def scenario(example: Example) -> None:
        subject = await example.subject()
        probe = _probe_of(subject)
        await refusals(example, subject, probe)
        await control(example, subject, probe)

    return scenario
