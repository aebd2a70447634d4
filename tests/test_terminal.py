"""The terminal provider: its keys and screen, its conformance run, and the variants the suite catches."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from dsh_user_interaction import (
    MESSAGES,
    AbortController,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from dsh_user_interaction.extra.terminal import TerminalProvider, visible
from dsh_user_interaction.extra.terminal.testing import (
    CAPABILITIES,
    TerminalDriver,
    make_subject,
    paste,
    terminal_subject,
)
from dsh_user_interaction_conformance import Nothing, Subject, run_suite

from .gallery.terminal import BROKEN_TERMINALS, SHOULD_TERMINALS
from .helpers import caught_within, claimed_only, judge_provider

UP, DOWN, ENTER, TAB, ESC, CTRL_C = "\x1b[A", "\x1b[B", "\r", "\t", "\x1b", "\x03"
#: The suite's bound for the runs below; a hanging variant costs a few multiples of it.
BOUND = 0.5

_SINGLE: AskUserQuestionRequest = {
    "questions": [
        {
            "id": "mode",
            "question": "Which mode?",
            "header": "Choose Mode",
            "detail": "It decides the speed.",
            "options": [{"label": "Fast"}, {"label": "Safe", "description": "Slower."}],
        }
    ]
}
_MULTI: AskUserQuestionRequest = {
    "questions": [
        {
            "id": "targets",
            "question": "Which targets?",
            "multiSelect": True,
            "options": [{"label": "tests"}, {"label": "docs"}, {"label": "bench"}],
        }
    ]
}
_FREE: AskUserQuestionRequest = {"questions": [{"id": "name", "question": "Branch name?"}]}


class Session:
    """One provider on an emulated screen, with its driver's keyboard."""

    def __init__(self, subject: Subject) -> None:
        self.subject = subject
        driver = subject.driver
        assert isinstance(driver, TerminalDriver)
        self.driver = driver
        provider = subject.provider
        assert isinstance(provider, TerminalProvider)
        self.provider = provider
        self.tasks: list[asyncio.Future[Any]] = []

    def ask(self, request: AskUserQuestionRequest) -> asyncio.Future[Any]:
        self.tasks.append(asyncio.ensure_future(self.provider.ask(request)))
        return self.tasks[-1]

    async def keys(self, *keys: str) -> str:
        """Press *keys*, one after another, and return the screen once it has settled."""
        for key in keys:
            self.driver.keyboard.send_text(key)
            await self.driver.settled()
        return self.screen()

    async def shown(self, request: AskUserQuestionRequest) -> str:
        await asyncio.wait_for(self.driver.perform(request, Nothing()), 5)
        await self.driver.settled()
        return self.screen()

    def screen(self) -> str:
        return self.driver.terminal.text()


@asynccontextmanager
async def session(**kwargs: Any) -> AsyncGenerator[Session]:
    subject = make_subject(**kwargs)
    opened = Session(subject)
    try:
        yield opened
    finally:
        assert subject.aclose is not None
        await subject.aclose()
        # Every ask has ended by now; retrieve what each raised.
        await asyncio.gather(*opened.tasks, return_exceptions=True)


def run(test: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(test(), 20))


# -- what the screen shows ------------------------------------------------------


def test_model_text_is_shown_as_escapes_never_written_raw() -> None:
    """Controls, ANSI and OSC sequences, bidi overrides and zero-width characters are escaped."""
    assert visible("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert visible("a\u202eb\u200bc\ufeff") == "a<U+202E>b<U+200B>c<U+FEFF>"
    assert visible("\x1b]8;;x\x07\x9b") == "\\x1b]8;;x\\x07\\x9b"
    assert visible("tab\tcr\r\nlf") == "tab\\tcr\\r\\nlf"
    assert visible("two\nlines", lines=True) == "two\nlines"
    assert visible("caf\u00e9 \U0001f44d \u00a0") == "caf\u00e9 \U0001f44d \u00a0"


def test_the_layout_shows_position_header_question_detail_and_options() -> None:
    """The status line, the header, the question, its detail, then the numbered options."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_SINGLE)
            screen = await s.shown(_SINGLE)
            lines = screen.splitlines()
            assert lines[0] == "ask #1 | question 1/1 | 1 unanswered"
            assert lines[1:6] == [
                "Choose Mode",
                "Which mode?",
                "It decides the speed.",
                "> 1. Fast",
                "  2. Safe",
            ]
            assert "Slower." in screen
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main)


def test_hostile_text_in_a_question_is_visible_and_the_answer_keeps_labels_exactly() -> None:
    """An ANSI sequence in a question is drawn as text; the label comes back byte for byte."""
    label = "\x1b[2J\u202eok\r"
    request: AskUserQuestionRequest = {
        "questions": [{"id": "q", "question": "\x1b[31mred\x1b[0m?", "options": [{"label": label}]}]
    }

    async def main() -> None:
        async with session() as s:
            task = s.ask(request)
            screen = await s.shown(request)
            assert "\\x1b[31mred\\x1b[0m?" in screen
            assert "\\x1b[2J<U+202E>ok\\r" in screen
            await s.keys(ENTER)
            assert await task == {"answers": [{"id": "q", "selected": [label]}]}

    run(main)


def test_a_plan_review_shows_the_plan_with_its_two_options() -> None:
    """A plan-review intent is drawn as a plan card: the plan, then Approve and Keep planning."""
    request: AskUserQuestionRequest = {
        "questions": [
            {
                "id": "plan-review",
                "question": "Approve this plan and leave plan mode?",
                "detail": "# Plan\n\n1. Do it.",
                "intent": {"kind": "plan-review", "approve": "Approve"},
                "options": [{"label": "Approve"}, {"label": "Keep planning"}],
            }
        ]
    }

    async def main() -> None:
        async with session() as s:
            task = s.ask(request)
            screen = await s.shown(request)
            assert "Plan review\nApprove this plan" in screen
            assert "--- plan ---\n# Plan\n\n1. Do it.\n------------" in screen
            assert "> 1. Approve\n  2. Keep planning" in screen
            await s.keys("2")
            assert await task == {"answers": [{"id": "plan-review", "selected": ["Keep planning"]}]}

    run(main)


def test_a_narrow_terminal_wraps_long_text_without_crashing() -> None:
    """At 20 columns, long text wraps and the question can still be answered."""
    request: AskUserQuestionRequest = {
        "questions": [
            {
                "id": "q",
                "question": "word " * 40 + "\U0001f469\u200d\U0001f4bb" * 10,
                "options": [{"label": "x" * 100}, {"label": "y"}],
            }
        ]
    }

    async def main() -> None:
        async with session(columns=20, rows=12) as s:
            task = s.ask(request)
            await s.driver.settled()
            await asyncio.sleep(0.05)
            screen = s.screen()
            assert all(len(line) <= 20 for line in screen.splitlines())
            assert screen.startswith("ask #1 | question")
            await s.keys(DOWN, ENTER)
            assert await task == {"answers": [{"id": "q", "selected": ["y"]}]}

    run(main)


# -- the keys -------------------------------------------------------------------


def test_single_select_takes_arrows_and_enter_or_the_number() -> None:
    """Down then Enter picks the second option; so does its number."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_SINGLE)
            await s.shown(_SINGLE)
            await s.keys(DOWN, DOWN, UP, ENTER)  # the highlight wraps around
            assert await task == {"answers": [{"id": "mode", "selected": ["Safe"]}]}
            task = s.ask(_SINGLE)
            await s.shown(_SINGLE)
            await s.keys("1")
            assert await task == {"answers": [{"id": "mode", "selected": ["Fast"]}]}

    run(main)


def test_multi_select_labels_come_in_option_order() -> None:
    """Ticked bench, then tests (by number and by Space): the answer lists tests first."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_MULTI)
            await s.shown(_MULTI)
            screen = await s.keys("3", UP, UP, " ")
            assert "> 1. [x] tests" in screen
            assert "3. [x] bench" in screen
            await s.keys(ENTER)
            assert await task == {"answers": [{"id": "targets", "selected": ["tests", "bench"]}]}

    run(main)


def test_custom_text_overrides_on_single_and_adds_on_multi() -> None:
    """On a single-select, text replaces the choice; on a multi-select, it joins the ticks."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_SINGLE)
            await s.shown(_SINGLE)
            await s.keys(DOWN, "t", "my own", ENTER)
            assert await task == {"answers": [{"id": "mode", "selected": [], "custom": "my own"}]}
            task = s.ask(_MULTI)
            await s.shown(_MULTI)
            await s.keys("2", TAB, "and more", ENTER)
            assert await task == {
                "answers": [{"id": "targets", "selected": ["docs"], "custom": "and more"}]
            }

    run(main)


def test_a_question_without_options_starts_in_the_text_field() -> None:
    """Typed text goes straight into the field; editing keys work; Tab then s skips."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_FREE)
            screen = await s.shown(_FREE)
            assert "your answer:" in screen
            await s.keys("relase", "\x1b[D" * 3, "e", "\x1b[F", "/2x", "\x7f", ENTER)
            assert await task == {
                "answers": [{"id": "name", "selected": [], "custom": "release/2"}]
            }
            task = s.ask(_FREE)
            await s.shown(_FREE)
            await s.keys("   ", ENTER)  # blank text is not an answer
            assert not task.done()
            assert "type an answer first" in s.screen()
            await s.keys(TAB, "s")
            assert await task == {"answers": [{"id": "name", "selected": []}]}

    run(main)


def test_pasted_text_arrives_exactly_with_cr_tabs_and_controls() -> None:
    """A bracketed paste keeps CR, CRLF, tabs, ESC and the paste end marker itself."""
    text = "one\rtwo\r\nthree\tfour\x1b[31m\x00\x1b[201~end"

    async def main() -> None:
        async with session() as s:
            task = s.ask(_FREE)
            await s.shown(_FREE)
            await s.keys(paste(text), ENTER)
            assert await task == {"answers": [{"id": "name", "selected": [], "custom": text}]}

    run(main)


def test_skip_answers_a_question_with_nothing() -> None:
    """The s key skips: ``{id, selected: []}``, and the next question comes up."""
    request: AskUserQuestionRequest = {"questions": [*_SINGLE["questions"], *_MULTI["questions"]]}

    async def main() -> None:
        async with session() as s:
            task = s.ask(request)
            await s.shown(request)
            screen = await s.keys("s")
            assert screen.startswith("ask #1 | question 2/2 | 1 unanswered")
            await s.keys("1", ENTER)
            assert await task == {
                "answers": [
                    {"id": "mode", "selected": []},
                    {"id": "targets", "selected": ["tests"]},
                ]
            }

    run(main)


@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["Esc", "Ctrl-C"])
def test_esc_and_ctrl_c_dismiss_the_batch(key: str) -> None:
    """Esc and Ctrl-C raise ASK_CANCELLED with the spec's message, and clear the screen."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_SINGLE)
            await s.shown(_SINGLE)
            await s.keys(key)
            await asyncio.sleep(0.1)  # Esc waits for the rest of a possible sequence
            with pytest.raises(UserInteractionError) as caught:
                await task
            assert caught.value.code == ErrorCode.ASK_CANCELLED
            assert str(caught.value) == MESSAGES[ErrorCode.ASK_CANCELLED]
            await s.driver.settled()
            assert s.screen() == ""

    run(main)


def test_asks_queue_first_in_first_out_and_page_down_shows_the_next() -> None:
    """The oldest batch is shown, with the count waiting; PgDn shows the next one."""

    async def main() -> None:
        async with session() as s:
            first, second = s.ask(_SINGLE), s.ask(_FREE)
            screen = await s.shown(_SINGLE)
            assert screen.startswith("ask #1 | question 1/1 | 1 unanswered | 1 more waiting")
            screen = await s.keys("\x1b[6~")
            assert screen.startswith("ask #2 |")
            await s.keys("hi", ENTER)
            assert await second == {"answers": [{"id": "name", "selected": [], "custom": "hi"}]}
            await s.driver.settled()
            assert s.screen().startswith("ask #1 | question 1/1 | 1 unanswered\n")
            await s.keys("2")
            assert await first == {"answers": [{"id": "mode", "selected": ["Safe"]}]}

    run(main)


def test_abort_clears_a_shown_or_queued_batch_at_once() -> None:
    """An abort raises ASK_ABORTED and takes the batch off the screen, shown or queued."""

    async def main() -> None:
        async with session() as s:
            shown, queued = AbortController(), AbortController()
            on_screen: AskUserQuestionRequest = {**_SINGLE, "signal": shown.signal}
            first = s.ask(on_screen)
            second = s.ask({**_FREE, "signal": queued.signal})
            await s.shown(on_screen)
            queued.abort()
            await s.driver.settled()
            assert "1 more waiting" not in s.screen()
            shown.abort()
            for task in (first, second):
                with pytest.raises(UserInteractionError) as caught:
                    await task
                assert caught.value.code == ErrorCode.ASK_ABORTED
            await s.driver.settled()
            assert s.screen() == ""

    run(main)


def test_cancellation_propagates_and_clears_the_screen() -> None:
    """A cancelled ask raises CancelledError, untouched, and leaves the screen."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_SINGLE)
            await s.shown(_SINGLE)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await s.driver.settled()
            assert s.screen() == ""

    run(main)


def test_disposal_rejects_every_pending_ask_and_refuses_new_ones() -> None:
    """dispose() rejects shown and queued asks with PROVIDER_DISPOSED; later asks too."""

    async def main() -> None:
        async with session() as s:
            tasks = [s.ask(_SINGLE), s.ask(_FREE)]
            await s.shown(_SINGLE)
            await s.provider.aclose()
            for task in tasks:
                with pytest.raises(UserInteractionError) as caught:
                    await task
                assert caught.value.code == ErrorCode.PROVIDER_DISPOSED
            with pytest.raises(UserInteractionError) as caught:
                await s.provider.ask(_SINGLE)
            assert caught.value.code == ErrorCode.PROVIDER_DISPOSED
            assert s.screen() == ""

    run(main)


def test_a_pre_aborted_request_is_never_shown() -> None:
    """An already aborted signal raises ASK_ABORTED before anything is drawn."""
    from dsh_user_interaction import AbortSignal

    async def main() -> None:
        async with session() as s:
            with pytest.raises(UserInteractionError) as caught:
                await s.provider.ask({**_SINGLE, "signal": AbortSignal.abort()})
            assert caught.value.code == ErrorCode.ASK_ABORTED
            assert s.driver.terminal.written == 0

    run(main)


# -- imports and the demo command -----------------------------------------------


def _hidden(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run *code* in a fresh interpreter where *module* cannot be imported."""
    prelude = f"import sys; sys.modules[{module!r}] = None; "
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_the_subpackage_without_its_extra_names_the_extra() -> None:
    """Without prompt_toolkit, one ImportError names the pip command; likewise pyte."""
    out = _hidden("prompt_toolkit", "import dsh_user_interaction.extra.terminal")
    assert "ImportError: dsh_user_interaction.extra.terminal needs prompt_toolkit: " in out.stderr
    assert "pip install 'dsh-user-interaction[terminal]'" in out.stderr
    out = _hidden("pyte", "import dsh_user_interaction.extra.terminal.testing")
    assert "pip install 'dsh-user-interaction[terminal-testing]'" in out.stderr


@pytest.mark.slow
def test_the_demo_command_without_the_extra_says_what_to_install() -> None:
    """``python -m dsh_user_interaction demo`` exits 1 with the pip command; no args is usage."""
    out = _hidden("prompt_toolkit", "import runpy, sys; sys.argv = ['x', 'demo']; "
                  "runpy.run_module('dsh_user_interaction', run_name='__main__')")  # fmt: skip
    assert out.returncode == 1
    assert "pip install 'dsh-user-interaction[terminal]'" in out.stderr
    usage = subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction"], capture_output=True, text=True, check=False
    )
    assert usage.returncode == 2
    assert "usage: python -m dsh_user_interaction {demo,web-demo,serve}" in usage.stderr


# -- the conformance suite, and the variants it catches ---------------------------


@pytest.mark.slow
def test_the_terminal_provider_passes_the_suite() -> None:
    """Through its keyboard and screen, with every capability but revising, at the quick profile.

    A pick submits a single-select question, so it cannot change its mind:
    PRV-REVISE-1 is skipped, with what only a UI of several surfaces or one
    serving HTTP claims.
    """
    assert terminal_subject.capabilities == CAPABILITIES  # type: ignore[attr-defined]
    report = run_suite(
        subject_factory=terminal_subject, kinds=["provider"], profile="quick", seed=1
    )
    assert report.ok, [r.message for r in report.results if r.status != "passed"]
    skipped = {r.requirement.id for r in report.results if r.status == "skipped"}
    # It revises nothing, shows one surface and serves no HTTP.
    assert {r for r in skipped if not claimed_only(r)} == {"PRV-REVISE-1"}
    assert {r.status for r in report.results} == {"passed", "skipped"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN_TERMINALS))
def test_a_broken_terminal_is_caught(name: str) -> None:
    """Each broken variant fails the run, named by the requirement it breaks."""
    factory, requirement, check = BROKEN_TERMINALS[name]
    report, failed = caught_within(factory, requirement, check, bound=BOUND)
    assert not report.ok
    assert requirement in failed, failed


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHOULD_TERMINALS))
def test_a_should_only_terminal_variant_warns(name: str) -> None:
    """Labels in click order break a SHOULD: a warning with its example; the run passes."""
    factory, requirement, check = SHOULD_TERMINALS[name]
    report = judge_provider(factory, check, seed=1, bound=BOUND)
    warned = {r.requirement.id: r for r in report.results if r.status == "warning"}
    assert report.ok, [
        (r.requirement.id, r.message) for r in report.results if r.status == "failed"
    ]
    assert requirement in warned
    assert warned[requirement].example


def test_a_closed_terminal_input_fails_the_waiting_asks() -> None:
    """When the keyboard goes away (EOF), every waiting ask raises instead of waiting forever."""

    async def main() -> None:
        async with session() as s:
            tasks = [s.ask(_SINGLE), s.ask(_FREE)]
            await s.shown(_SINGLE)
            s.driver.keyboard.close()
            for task in tasks:
                with pytest.raises(EOFError):
                    await task
            assert s.provider.pending == 0

    run(main)


# -- found by review -------------------------------------------------------------


def test_invisible_characters_are_escaped_so_labels_never_look_alike() -> None:
    """Default-ignorable and blank characters outside the format category are escaped too."""
    assert visible("Yes\u034f") == "Yes<U+034F>"
    assert visible("Yes\u3164") == "Yes<U+3164>"
    assert visible("a\ufe0fb\U000e0100c\u2800") == "a<U+FE0F>b<U+E0100>c<U+2800>"


def test_alt_with_a_key_does_not_dismiss_the_batch() -> None:
    """Esc followed by a key (Alt-b) does nothing; only a lone Esc dismisses."""

    async def main() -> None:
        async with session() as s:
            task = s.ask(_FREE)
            await s.shown(_FREE)
            await s.keys("draft", "\x1bb", " two")
            assert not task.done()
            await s.keys(ENTER)
            answer = await asyncio.wait_for(task, 5)
            assert answer == {"answers": [{"id": "name", "selected": [], "custom": "draft two"}]}

    run(main)


def test_the_driver_sends_long_text_without_blocking_the_loop() -> None:
    """PRV-TEXT-1, long strings: 70,000 typed characters arrive whole; the pipe never fills."""
    from dsh_user_interaction_conformance import TypeText

    async def main() -> None:
        async with session() as s:
            task = s.ask(_FREE)
            text = "z" * 70_000
            await asyncio.wait_for(s.driver.perform(_FREE, (TypeText(text),)), 15)
            answer = await asyncio.wait_for(task, 5)
            assert answer == {"answers": [{"id": "name", "selected": [], "custom": text}]}

    run(main)


def test_a_direct_ask_without_questions_is_empty_questions() -> None:
    """Called directly (not through a service), an empty batch raises its code, not IndexError."""

    async def main() -> None:
        async with session() as s:
            with pytest.raises(UserInteractionError) as raised:
                await s.provider.ask({"questions": []})
            assert raised.value.code is ErrorCode.EMPTY_QUESTIONS

    run(main)
