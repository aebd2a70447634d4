"""The human's gestures at the web provider's page, through Playwright: the driver's hands.

They run in the browser host (``_host.py``), a process of its own, never in
the process whose event loop the suite judges. They act black box, through
roles and accessible names, as the page's DOM contract (the head of
``static/app.js``) promises them: the radio buttons and checkboxes of a
question's group, its text field, its "Skip this question", the card's
"Send" and "Dismiss", the plan card's buttons. They never call the page's
own scripts. Options are found by their position in the group, as a person
sees them listed, because an accessible name folds the white space a hostile
label may differ by; a card is found by its ``data-ask-id``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from playwright.async_api import Locator, Page, expect

from dsh_user_interaction import AskUserQuestionItem
from dsh_user_interaction_conformance import (
    PROBE_ATTRIBUTE,
    Action,
    Behaviour,
    Dismiss,
    Nothing,
    Pick,
    Revise,
    Skip,
    TypeText,
    held_after,
)

__all__ = [
    "DISMISS_WAYS",
    "PICK_WAYS",
    "act",
    "act_unless_ended",
    "card_count",
    "connected",
    "markup_count",
    "open_page",
    "told_text",
]

#: The ways of picking: a click; the keyboard (focus, Space, and Ctrl+Enter to
#: send); and a click after reloading the page, which must show every ask still
#: pending.
PICK_WAYS: Final = ("click", "keyboard", "after-reload")
#: The ways of dismissing: the Dismiss button clicked, or pressed with Enter.
DISMISS_WAYS: Final = ("click", "keyboard")


def _card_of(page: Page, ask_id: str) -> Locator:
    return page.locator(f'article[data-ask-id="{ask_id}"]')


async def card_count(page: Page, ask_id: str, hands: asyncio.Lock) -> int:
    """How many cards of *ask_id* the page shows (0 or 1); not while a reload empties it."""
    async with hands:
        return await _card_of(page, ask_id).count()


async def markup_count(page: Page, hands: asyncio.Lock) -> int:
    """How many elements of the page carry the suite's probe attribute (``WEB-MARKUP-1``).

    The suite writes it only into model text, so any such element is model
    text that became markup.
    """
    async with hands:
        return await page.locator(f"[{PROBE_ATTRIBUTE}]").count()


@dataclass(frozen=True)
class _Card:
    """The locators of one ask's card, in the browser host."""

    page: Page
    node: Locator

    def buttons(self) -> Locator:
        return self.node.get_by_role("button")

    def groups(self) -> Locator:
        return self.node.get_by_role("group")


async def open_page(page: Page, url: str, patience: float) -> None:
    """Open *url* in *page* and wait until the page says it is connected."""
    await page.goto(url)
    await connected(page, patience)


async def connected(page: Page, patience: float) -> None:
    """Wait until the page's status line says it is connected, for *patience* seconds."""
    status = page.get_by_role("status")
    await expect(status).to_have_text("Connected.", timeout=patience * 1000)


#: The keys a gesture holds down while it presses another.
MODIFIERS: Final = ("Shift", "Control", "Alt", "Meta")


async def release_keys(page: Page) -> None:
    """Let go of every modifier key, in case a gesture that failed half way left one down."""
    for key in MODIFIERS:
        await page.keyboard.up(key)


def _ways(behaviour: tuple[Action, ...]) -> set[str | None]:
    return {action.way for action in behaviour if isinstance(action, Pick)}


async def _press(page: Page, control: Locator, key: str) -> None:
    await control.focus()
    await page.keyboard.press(key)


async def _pick(card: _Card, choice: Locator, way: str | None) -> None:
    if way == "keyboard":
        await _press(card.page, choice, "Space")
        if not await choice.is_checked():
            msg = "Space on a focused option did not pick it"
            raise AssertionError(msg)
    else:
        await choice.check()


async def _generic(
    card: _Card, questions: Sequence[AskUserQuestionItem], actions: tuple[Action, ...]
) -> None:
    """Fill every question of a generic card as *actions* say, then send it."""
    groups = card.groups()
    for index, (question, action) in enumerate(zip(questions, actions, strict=True)):
        group = groups.nth(index)
        multi = question.get("multiSelect") is True
        labels = [option["label"] for option in question.get("options", ())]
        choices = group.get_by_role("checkbox" if multi else "radio")
        # The group's last checkbox: it follows a multi-select's options.
        skip = group.get_by_role("checkbox").last
        if isinstance(action, Skip):
            await skip.check()
        elif isinstance(action, Revise):
            for kind, value in action.steps:
                if kind == "pick":
                    await choices.nth(labels.index(value)).check()
                elif kind == "unpick":
                    await choices.nth(labels.index(value)).uncheck()
                elif kind == "skip":
                    await skip.check()
                elif kind == "unskip":
                    await skip.uncheck()
                else:  # typed over the field, or cleared
                    await group.get_by_role("textbox").fill(value)
        else:
            way = action.way if isinstance(action, Pick) else None
            for label in action.labels:
                await _pick(card, choices.nth(labels.index(label)), way)
            if isinstance(action, TypeText):
                await group.get_by_role("textbox").fill(action.text)
    if "keyboard" in _ways(actions):
        # Focus is in the card, on the control last used: Ctrl+Enter sends the card.
        await card.page.keyboard.press("Control+Enter")
    else:
        await card.node.get_by_role("button", name="Send", exact=True).click()


async def _plan(card: _Card, question: AskUserQuestionItem, action: Action) -> None:
    """Act on a plan card: its buttons send at once, so typed feedback comes first."""
    intent: Any = question.get("intent")
    approve = intent["approve"]
    buttons = card.buttons()
    # Approve first, then the other option's button (or "Send feedback"); the
    # card ends with "Skip this question" and "Dismiss".
    count = await buttons.count()
    feedback = card.node.get_by_role("textbox", name="Feedback", exact=True)
    if isinstance(action, Skip):
        await buttons.nth(count - 2).click()
        return
    if isinstance(action, Revise):
        # Its buttons send at once: only the text is revised on the card, and the
        # button pressed is the one that sends what the question holds at the end
        # (nothing held: the revision ended skipped).
        for kind, value in action.steps:
            if kind in {"type", "clear"}:
                await feedback.fill(value)
        picked, text = held_after(action.steps, multi=False)
        if not picked and not text:
            await buttons.nth(count - 2).click()
            return
        target = buttons.nth(1) if text or picked != [approve] else buttons.first
        await target.click()
        return
    if isinstance(action, TypeText):
        await feedback.fill(action.text)
        await buttons.nth(1).click()
        return
    target = buttons.first if action.labels[0] == approve else buttons.nth(1)
    if action.way == "keyboard":
        await _press(card.page, target, "Enter")
    else:
        await target.click()


async def _sent(card: _Card, patience: float) -> None:
    """Wait until the card goes; fail with the page's reason if it refused what was sent."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while await card.node.count():
        said = [text.strip() for text in await card.node.get_by_role("alert").all_inner_texts()]
        refused = [text for text in said if text]
        if refused:
            msg = f"the page refused what the human sent: {' / '.join(refused)}"
            raise AssertionError(msg)
        if loop.time() > deadline:
            msg = f"the card was still on the page {patience:g} s after the human sent it"
            raise TimeoutError(msg)
        await asyncio.sleep(0.01)


async def act(
    page: Page,
    ask_id: str,
    questions: Sequence[AskUserQuestionItem],
    behaviour: Behaviour,
    *,
    hands: asyncio.Lock,
    patience: float,
) -> None:
    """In the browser host: find the ask's card and do *behaviour* on it.

    The human has one pair of hands: the page has one focus, which typing
    goes to, and a reload would wipe a card half filled or sent. So acting
    on a card, from the first gesture until it has gone, holds *hands*.
    """
    card = _Card(page, _card_of(page, ask_id))
    if isinstance(behaviour, Nothing):
        await card.node.wait_for(state="visible", timeout=patience * 1000)
        return
    async with hands:
        # Another gesture that failed half way may have left a key down.
        await release_keys(page)
        if isinstance(behaviour, tuple) and "after-reload" in _ways(behaviour):
            await page.reload()
            await connected(page, patience)
        await card.node.wait_for(state="visible", timeout=patience * 1000)
        # The suite cancels the driver when the ask ends first, as it does the
        # moment Ctrl+Enter has sent the card, before Control comes up. The
        # hands stay busy until the gesture has ended, or the next one's Enter
        # would go out as Ctrl+Enter.
        gesture = asyncio.ensure_future(_gesture(card, questions, behaviour))
        try:
            await asyncio.shield(gesture)
        except asyncio.CancelledError:
            await _let_end(card, gesture, patience)
            raise
        await _sent(card, patience)


async def _let_end(card: _Card, gesture: asyncio.Future[None], patience: float) -> None:
    """Let a cancelled act's *gesture* end, and stop it if it waits for a card that went.

    A gesture under way ends first (the next gesture's keys would go out
    with its modifier held), for at most *patience* seconds. One that waits
    for its card, which another tab's answer removed, is stopped: the tab is
    kept for the next subject, whose asks have the same ids, and the gesture
    would act on that one's card.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    with contextlib.suppress(Exception):  # a tab closing under it: stop the gesture
        while not gesture.done() and loop.time() < deadline:
            if not await card.node.count():
                break
            await asyncio.sleep(0.02)
    gesture.cancel()
    await asyncio.wait({gesture}, timeout=patience)


async def _gesture(
    card: _Card, questions: Sequence[AskUserQuestionItem], behaviour: tuple[Action, ...] | Dismiss
) -> None:
    """Dismiss the card, or fill and send it: a plan card as one, any other as a form."""
    page = card.page
    if isinstance(behaviour, Dismiss):
        if behaviour.way not in {None, *DISMISS_WAYS}:
            msg = f"no way to dismiss called {behaviour.way!r} on the page"
            raise ValueError(msg)
        dismiss = card.node.get_by_role("button", name="Dismiss", exact=True).last
        if behaviour.way == "keyboard":
            await _press(page, dismiss, "Enter")
        else:
            await dismiss.click()
    elif await card.node.get_by_role("textbox", name="Feedback", exact=True).count():
        await _plan(card, questions[0], behaviour[0])
    else:
        await _generic(card, questions, behaviour)


def _recent_line(page: Page, ask_id: str) -> Locator:
    """The "Recent" list's line for the ask: the page's word of how it ended."""
    return page.locator(f'#recent li[data-ask-id="{ask_id}"]')


async def _ended_here(page: Page, ask_id: str) -> None:
    """Return once the page has no card for the ask and says how it ended (polled: a DOM)."""
    while True:
        if not await _card_of(page, ask_id).count() and await _recent_line(page, ask_id).count():
            return
        await asyncio.sleep(0.02)


async def act_unless_ended(
    page: Page,
    ask_id: str,
    questions: Sequence[AskUserQuestionItem],
    behaviour: Behaviour,
    *,
    hands: asyncio.Lock,
    patience: float,
) -> bool:
    """:func:`act`, unless the ask ends first, as another tab's action can end it.

    Another tab's answer can remove the card while this tab's human fills
    it, or this tab's answer can come back refused ("yours was not saved"):
    either way the page then says how the ask ended, which is what the
    human sees. ``True`` when the action went through to its end; ``False``
    when the page said the ask ended before it could.
    """
    acting = asyncio.ensure_future(
        act(page, ask_id, questions, behaviour, hands=hands, patience=patience)
    )
    ending = asyncio.ensure_future(_ended_here(page, ask_id))
    try:
        await asyncio.wait({acting, ending}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        # Never leave the gesture behind: the tab is kept for the next subject,
        # whose asks have the same ids, and a gesture left waiting for this
        # card would act on that one's.
        acting.cancel()
        await asyncio.wait({acting}, timeout=patience)
        raise
    finally:
        ending.cancel()
    if acting.done():
        error = None if acting.cancelled() else acting.exception()
        if error is None:
            return True
        if not await _card_of(page, ask_id).count() and await _recent_line(page, ask_id).count():
            return False  # the card went, ended elsewhere, while the hands were on it
        raise error
    acting.cancel()
    await asyncio.wait({acting}, timeout=patience)
    return False


async def told_text(page: Page, ask_id: str, patience: float) -> str | None:
    """What the page's "Recent" list says of how the ask ended; ``None`` after *patience* s."""
    line = _recent_line(page, ask_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while not await line.count():
        if loop.time() > deadline:
            return None
        await asyncio.sleep(0.02)
    return (await line.locator(".how").first.inner_text()).strip()
