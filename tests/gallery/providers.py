"""Deliberately broken providers, each breaking one requirement the way a real UI might.

Each factory returns a Subject; ``BROKEN_PROVIDERS`` maps it to the requirement
the suite must name.
"""

from __future__ import annotations

import asyncio
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from dsh_user_interaction_conformance import (
    Behaviour,
    Capabilities,
    Dismiss,
    Nothing,
    Revise,
    Step,
    Subject,
    TypeText,
    held_after,
    revised,
)

Answer = dict[str, Any]


@dataclass
class Flaws:
    """What this UI gets wrong."""

    transform: Callable[[AskUserQuestionRequest, Answer], Answer] | None = None
    #: Like transform, but only while another ask is pending too.
    transform_when_busy: Callable[[AskUserQuestionRequest, Answer], Answer] | None = None
    ignores_signal: bool = False
    #: Swallows every cancellation, in a loop, so its call never ends.
    swallows_forever: bool = False
    #: Blocks the event loop for this long on every ask.
    blocks_for: float = 0.0
    #: Starts a helper task that ignores cancellation.
    leaks_task: bool = False
    #: Settles the oldest pending ask with whatever answer the human gives.
    answers_oldest: bool = False
    stays_on_screen: bool = False
    dismiss_code: ErrorCode = ErrorCode.ASK_CANCELLED
    swallows_cancel: bool = False
    mutates: bool = False
    single_slot: bool = False
    #: Shows only its oldest pending ask, though it declares itself concurrent.
    one_at_a_time: bool = False
    #: Closing one ask's dialog rejects every pending ask.
    dismiss_closes_all: bool = False
    #: What a question the human revised answers: the spec's reading by default.
    revising: Callable[[AskUserQuestionItem, Sequence[Step]], AskUserQuestionAnswerItem] = revised


@dataclass
class _Pending:
    request: AskUserQuestionRequest
    future: asyncio.Future[Answer]


@dataclass
class FlawedUI:
    """A queue-backed UI, like the scripted provider, with configurable flaws."""

    flaws: Flaws
    pending: list[_Pending] = field(default_factory=list[_Pending])
    leaked: list[asyncio.Task[None]] = field(default_factory=list[asyncio.Task[None]])

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        signal = request.get("signal")
        if self.flaws.blocks_for:
            time.sleep(self.flaws.blocks_for)  # noqa: ASYNC251 - the flaw under test
        if self.flaws.leaks_task:
            self.leaked.append(asyncio.get_running_loop().create_task(_stubborn()))
        if not self.flaws.ignores_signal and signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        if self.flaws.mutates:
            question: Any = request["questions"][0]
            question["header"] = "Question"
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        entry = _Pending(request, future)
        self.pending.append(entry)
        remove: Callable[[], None] = lambda: None  # noqa: E731

        if signal is not None and not self.flaws.ignores_signal:

            def on_abort(_signal: object) -> None:
                if not future.done():
                    future.set_exception(UserInteractionError.of(ErrorCode.ASK_ABORTED))

            remove = signal.add_listener(on_abort)
        try:
            answer = await future
        except asyncio.CancelledError:
            if self.flaws.swallows_forever:
                await _stubborn()
            if self.flaws.swallows_cancel:
                return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}
            self._drop(entry)
            raise
        except UserInteractionError:
            if self.flaws.stays_on_screen:
                raise
            self._drop(entry)
            raise
        finally:
            remove()
        busy = bool(self.pending) and any(p is not entry for p in self.pending)
        self._drop(entry)
        if self.flaws.transform is not None:
            answer = self.flaws.transform(request, answer)
        if busy and self.flaws.transform_when_busy is not None:
            answer = self.flaws.transform_when_busy(request, answer)
        return answer  # type: ignore[return-value] # deliberately unchecked

    def visible(self) -> list[_Pending]:
        """The pending asks on screen."""
        return self.pending[:1] if self.flaws.one_at_a_time else self.pending

    def _drop(self, entry: _Pending) -> None:
        if entry in self.pending:
            self.pending.remove(entry)


class FlawedDriver:
    """Drives a FlawedUI; answers are built by the reference driver's rules."""

    def __init__(self, ui: FlawedUI, capabilities: Capabilities) -> None:
        self.ui = ui
        self.capabilities = capabilities

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        while True:
            found = [p for p in self.ui.visible() if p.request is request]
            if found:
                break
            await asyncio.sleep(0)
        entry = found[0]
        if self.ui.flaws.single_slot:
            entry = self.ui.pending[-1]  # the UI only tracks its newest ask
        if self.ui.flaws.answers_oldest:
            entry = next(p for p in self.ui.pending if not p.future.done())
        if isinstance(behaviour, Nothing):
            return
        if isinstance(behaviour, Dismiss):
            closed = self.ui.pending if self.ui.flaws.dismiss_closes_all else [entry]
            for each in closed:
                if not each.future.done():
                    each.future.set_exception(UserInteractionError.of(self.ui.flaws.dismiss_code))
            return
        items: list[Answer] = []
        for question, action in zip(request["questions"], behaviour, strict=True):
            if isinstance(action, Revise):
                items.append(dict(self.ui.flaws.revising(question, action.steps)))
                continue
            offered = [o["label"] for o in question.get("options", ())]
            labels = getattr(action, "labels", ())
            item: Answer = {"id": question["id"], "selected": [x for x in offered if x in labels]}
            if isinstance(action, TypeText):
                item["custom"] = action.text
            items.append(item)
        if not entry.future.done():
            entry.future.set_result({"answers": items})

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        return any(p.request is request for p in self.ui.visible())


async def _stubborn() -> None:
    """Waits forever, and ignores every cancellation."""
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue


def _subject(flaws: Flaws, capabilities: Capabilities | None = None) -> Callable[[], Subject]:
    def factory() -> Subject:
        ui = FlawedUI(flaws)
        return Subject(ui, FlawedDriver(ui, capabilities or Capabilities()), name="flawed")

    return factory


def _items(answer: Answer) -> list[Answer]:
    items: list[Answer] = answer["answers"]
    return items


def _reverse(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    items = _items(answer)
    return {"answers": items[::-1]}


def _drop_last(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {"answers": _items(answer)[:-1]}


def _number_labels(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    # A terminal UI that numbers its options and returns what it displayed.
    return {
        "answers": [
            {**i, "selected": [f"{n}. {s}" for n, s in enumerate(i["selected"], 1)]}
            for i in _items(answer)
        ]
    }


def _trim_custom(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {
        "answers": [
            {**i, "custom": i["custom"].strip()} if "custom" in i else i for i in _items(answer)
        ]
    }


def _keep_choice_with_custom(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    items: list[Answer] = []
    for question, item in zip(request["questions"], _items(answer), strict=True):
        offered = [o["label"] for o in question.get("options", ())]
        if "custom" in item and offered and not question.get("multiSelect"):
            items.append({**item, "selected": offered[:1]})
        else:
            items.append(item)
    return {"answers": items}


def _keeps_first_pick(
    question: AskUserQuestionItem, steps: Sequence[Step]
) -> AskUserQuestionAnswerItem:
    """A single-select whose first pick sticks: picking another option does nothing."""
    if question.get("multiSelect") is True:
        return revised(question, steps)
    first = next((step for step in steps if step[0] == "pick"), None)
    kept = [step for step in steps if step[0] != "pick" or step is first]
    return revised(question, kept)


def _pick_beside_text(
    question: AskUserQuestionItem, steps: Sequence[Step]
) -> AskUserQuestionAnswerItem:
    """A single-select that keeps the option picked before the human typed their own answer."""
    item = revised(question, steps)
    picked, text = held_after(steps, multi=question.get("multiSelect") is True)
    if text and picked and question.get("multiSelect") is not True:
        item["selected"] = picked[-1:]
    return item


def _appends_text(
    question: AskUserQuestionItem, steps: Sequence[Step]
) -> AskUserQuestionAnswerItem:
    """A text box that appends what is typed to what it holds, instead of replacing it."""
    typed: list[Step] = []
    text = ""
    for kind, value in steps:
        text = "" if kind == "clear" else text + value if kind == "type" else text
        typed.append(("type", text) if kind == "type" else (kind, value))
    return revised(question, typed)


def _keeps_picks_of_skipped(
    question: AskUserQuestionItem, steps: Sequence[Step]
) -> AskUserQuestionAnswerItem:
    """A Skip that is ignored once something is picked or typed: the draft is sent instead."""
    kept = [step for step in steps if step[0] not in {"skip", "unskip"}]
    if held_after(kept, multi=question.get("multiSelect") is True) == ([], ""):
        return revised(question, steps)  # nothing held: the skip stands
    return revised(question, kept)


def _keeps_skip_taken_back(
    question: AskUserQuestionItem, steps: Sequence[Step]
) -> AskUserQuestionAnswerItem:
    """A Skip that cannot be taken back: once checked, the question answers nothing."""
    if any(kind == "skip" for kind, _ in steps):
        return {"id": question["id"], "selected": []}
    return revised(question, steps)


def _drop_python_blank(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    """A UI that drops typed text Python's ``str.strip`` would leave empty (``"\x1c"``, ``"\x85"``).

    JavaScript's ``trim``, which the spec follows, keeps them: the text is the
    human's answer.
    """
    return {
        "answers": [
            {k: v for k, v in i.items() if k != "custom"}
            if "custom" in i and not i["custom"].strip()
            else i
            for i in _items(answer)
        ]
    }


def _extra_key(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {"answers": [{**i, "question": "echoed"} for i in _items(answer)]}


def _blank_skip(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {
        "answers": [
            {**i, "custom": ""} if not i["selected"] and "custom" not in i else i
            for i in _items(answer)
        ]
    }


def _duplicate_multi(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {"answers": [{**i, "selected": i["selected"] * 2} for i in _items(answer)]}


def _reverse_multi(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {"answers": [{**i, "selected": i["selected"][::-1]} for i in _items(answer)]}


def _on_custom(change: Callable[[str], str]) -> Callable[[AskUserQuestionRequest, Answer], Answer]:
    def transform(request: AskUserQuestionRequest, answer: Answer) -> Answer:
        return {
            "answers": [
                {**i, "custom": change(i["custom"])} if "custom" in i else i for i in _items(answer)
            ]
        }

    return transform


def _skip_everything(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {"answers": [{"id": i["id"], "selected": []} for i in _items(answer)]}


#: factory -> the requirement the suite must report as failed.
BROKEN_PROVIDERS: dict[str, tuple[Callable[[], Subject], str]] = {
    "reverses-answer-order": (_subject(Flaws(transform=_reverse)), "ANS-ORDER-1"),
    "drops-last-answer": (_subject(Flaws(transform=_drop_last)), "ANS-COUNT-1"),
    "numbers-labels": (_subject(Flaws(transform=_number_labels)), "ANS-SEL-3"),
    "trims-custom-text": (_subject(Flaws(transform=_trim_custom)), "PRV-TEXT-1"),
    "keeps-choice-with-custom": (
        _subject(Flaws(transform=_keep_choice_with_custom)),
        "ANS-SINGLE-2",
    ),
    "echoes-extra-keys": (_subject(Flaws(transform=_extra_key)), "ANS-KEYS-1"),
    "blank-custom-for-skip": (_subject(Flaws(transform=_blank_skip)), "ANS-CUSTOM-1"),
    "duplicates-labels": (_subject(Flaws(transform=_duplicate_multi)), "ANS-SEL-2"),
    "drops-what-the-human-did": (_subject(Flaws(transform=_skip_everything)), "PRV-ANSWER-1"),
    "mutates-request": (_subject(Flaws(mutates=True)), "PRV-MUTATE-1"),
    "ignores-abort": (_subject(Flaws(ignores_signal=True)), "PRV-ABORT-2"),
    "shows-pre-aborted": (_subject(Flaws(ignores_signal=True)), "PRV-ABORT-1"),
    "stays-on-screen-after-abort": (_subject(Flaws(stays_on_screen=True)), "PRV-ABORT-2"),
    "dismiss-as-abort": (_subject(Flaws(dismiss_code=ErrorCode.ASK_ABORTED)), "PRV-DISMISS-1"),
    "swallows-cancellation": (_subject(Flaws(swallows_cancel=True)), "PRV-CANCEL-1"),
    "single-slot-cross-talk": (_subject(Flaws(single_slot=True)), "PRV-CONC-1"),
    "normalises-nfc": (
        _subject(Flaws(transform=_on_custom(lambda t: unicodedata.normalize("NFC", t)))),
        "PRV-TEXT-1",
    ),
    "normalises-nfkc": (
        _subject(Flaws(transform=_on_custom(lambda t: unicodedata.normalize("NFKC", t)))),
        "PRV-TEXT-1",
    ),
    "converts-newlines": (
        _subject(
            Flaws(transform=_on_custom(lambda t: t.replace("\r\n", "\n").replace("\r", "\n")))
        ),
        "PRV-TEXT-1",
    ),
    # Right alone; while another ask is pending, it loses what the human did.
    "drops-picks-when-busy": (_subject(Flaws(transform_when_busy=_skip_everything)), "PRV-CONC-1"),
    "trims-when-busy": (
        _subject(Flaws(transform_when_busy=_on_custom(str.strip))),
        "PRV-TEXT-1",
    ),
    "answers-oldest-ask": (_subject(Flaws(answers_oldest=True)), "PRV-CONC-1"),
    "shows-one-ask-at-a-time": (_subject(Flaws(one_at_a_time=True)), "PRV-CONC-1"),
    "dismiss-closes-every-ask": (_subject(Flaws(dismiss_closes_all=True)), "PRV-CONC-1"),
    "swallows-cancellation-forever": (_subject(Flaws(swallows_forever=True)), "PRV-CANCEL-1"),
    "blocks-the-loop": (_subject(Flaws(blocks_for=0.6)), "PRV-LOOP-1"),
    "leaks-a-stubborn-task": (_subject(Flaws(leaks_task=True)), "PRV-LEAK-1"),
    # Text a human typed in a revision is dropped too: the revision's requirement says so.
    "drops-python-blank-text": (
        _subject(Flaws(transform=_drop_python_blank)),
        "PRV-ANSWER-1|PRV-REVISE-1",
    ),
    # Changes of mind (Revise), which no other behaviour draws.
    "keeps-first-pick": (_subject(Flaws(revising=_keeps_first_pick)), "PRV-REVISE-1"),
    "pick-beside-typed-text": (_subject(Flaws(revising=_pick_beside_text)), "ANS-SINGLE-2"),
    "appends-typed-text": (_subject(Flaws(revising=_appends_text)), "PRV-REVISE-1"),
    # Skip among the changes of mind: pick, then skip; skip, then pick.
    "keeps-picks-of-skipped": (_subject(Flaws(revising=_keeps_picks_of_skipped)), "PRV-REVISE-1"),
    "keeps-skip-taken-back": (_subject(Flaws(revising=_keeps_skip_taken_back)), "PRV-REVISE-1"),
}

#: Entries whose flaw shows only in a check that does not cite the requirement it breaks.
FOUND_BY: dict[str, str] = {
    "trims-when-busy": "provider-concurrency",
    "drops-picks-when-busy": "provider-concurrency",
}

#: Providers that break only a SHOULD: the suite must warn, and still pass.
SHOULD_PROVIDERS: dict[str, tuple[Callable[[], Subject], str]] = {
    "multi-select-reversed": (_subject(Flaws(transform=_reverse_multi)), "ANS-MULTI-2"),
}


#: For the command-line tests: ``--provider tests.gallery.providers:FACTORY_EXTRA_KEYS``.
FACTORY_EXTRA_KEYS = BROKEN_PROVIDERS["echoes-extra-keys"][0]
FACTORY_DUPLICATES_LABELS = BROKEN_PROVIDERS["duplicates-labels"][0]


def _drop_skipped(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {"answers": [i for i in _items(answer) if i["selected"] or "custom" in i]}


#: Trims custom text *and* drops skipped questions: two flaws of one check.
FACTORY_TRIMS_AND_DROPS_SKIPPED = _subject(
    Flaws(transform=lambda r, a: _drop_skipped(r, _on_custom(str.strip)(r, a)))
)


def spin(seconds: float) -> None:
    """Keep this thread on a CPU for *seconds* of its own CPU time, however busy the machine."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


@dataclass
class _SpinningUI(FlawedUI):
    """A FlawedUI whose ask() first computes for *spins_for* seconds of CPU, never awaiting."""

    spins_for: float = 0.0

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        spin(self.spins_for)
        return await super().ask(request)


def spinning_subject(seconds: float) -> Callable[[], Subject]:
    """A subject whose provider spends *seconds* of CPU time in each ask() before awaiting."""

    def factory() -> Subject:
        ui = _SpinningUI(Flaws(), spins_for=seconds)
        return Subject(ui, FlawedDriver(ui, Capabilities()), name="spinning")

    return factory


@dataclass
class _WallSpinningUI(FlawedUI):
    """A FlawedUI whose ask() first spins until *spins_for* seconds pass on the wall clock."""

    spins_for: float = 0.0

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        until = time.monotonic() + self.spins_for
        while time.monotonic() < until:
            pass
        return await super().ask(request)


def wall_spinning_subject(seconds: float) -> Callable[[], Subject]:
    """A provider that holds the loop *seconds* of wall-clock time in each ask(), never yielding.

    As the Node example ``provider-blocks-loop.mjs`` does: on a busy machine
    its thread spends most of that time preempted, waiting for a CPU.
    """

    def factory() -> Subject:
        ui = _WallSpinningUI(Flaws(), spins_for=seconds)
        return Subject(ui, FlawedDriver(ui, Capabilities()), name="wall-spinning")

    return factory


def sleeping_subject(seconds: float) -> Callable[[], Subject]:
    """A subject whose provider calls ``time.sleep(seconds)`` in each ask()."""
    return _subject(Flaws(blocks_for=seconds))


# The shortest stretches the loop requirement promises to catch: 0.3 s.
BROKEN_PROVIDERS["blocks-the-loop-for-0.3-s"] = (sleeping_subject(0.3), "PRV-LOOP-1")
BROKEN_PROVIDERS["spins-the-cpu-for-0.3-s"] = (spinning_subject(0.3), "PRV-LOOP-1")

#: For the command line and the harness child: ``tests.gallery.providers:SLEEPS_HALF_A_SECOND``.
SLEEPS_HALF_A_SECOND = sleeping_subject(0.5)
#: ``tests.gallery.providers:SPINS_HALF_A_SECOND``: half a second of CPU time in each ask().
SPINS_HALF_A_SECOND = spinning_subject(0.5)
#: ``tests.gallery.providers:SPINS_ON_THE_WALL_CLOCK``: 0.7 s of wall-clock time in each ask().
SPINS_ON_THE_WALL_CLOCK = wall_spinning_subject(0.7)
BROKEN_PROVIDERS["spins-on-the-wall-clock"] = (SPINS_ON_THE_WALL_CLOCK, "PRV-LOOP-1")
