"""The conformance driver of the web provider: a person at the page, in headless Chromium.

It is black box. It opens the address the provider prints, as a person given
it would, and acts through Playwright by role and accessible name, as the
page's DOM contract (the head of ``static/app.js``) promises them: the radio
buttons and checkboxes of a question's group, its text field, its "Skip this
question", the card's "Send" and "Dismiss", the plan card's buttons. It never
calls the page's own scripts. Options are found by their position in the
group, as a person sees them listed, because an accessible name folds the
white space a hostile label may differ by. The one thing it asks the provider
is :meth:`~dsh_user_interaction.extra.web.WebProvider.ask_id_of`: which card
to act on when several look alike.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from playwright.async_api import Locator, Page, expect

from dsh_user_interaction import AskUserQuestionItem, AskUserQuestionRequest
from dsh_user_interaction_conformance import (
    Action,
    Behaviour,
    Capabilities,
    Dismiss,
    Nothing,
    Pick,
    Revise,
    Skip,
    Subject,
    TypeText,
    held_after,
    with_capabilities,
)

from .._polling import Handles
from ._chromium import Chromium, shared_chromium
from ._provider import WebProvider

__all__ = [
    "CAPABILITIES",
    "PHONE_WIDTH",
    "WebDriver",
    "make_subject",
    "web_phone_subject",
    "web_subject",
]

#: The ways of picking: a click; the keyboard (focus, Space, and Ctrl+Enter to
#: send); and a click after reloading the page, which must show every ask still
#: pending (and keep what the human had not sent yet only in that tab's memory).
PICK_WAYS: Final = ("click", "keyboard", "after-reload")
#: The ways of dismissing: the Dismiss button clicked, or pressed with Enter.
DISMISS_WAYS: Final = ("click", "keyboard")
#: What the web provider's page can do.
CAPABILITIES: Final = Capabilities(
    can_skip=True,
    can_dismiss=True,
    custom_on_single=True,
    custom_on_multi=True,
    revises=True,
    # An HTML text field holds every line break as a line feed.
    keeps_carriage_returns=False,
    concurrent=True,
    observes_screen=True,
    ways={"pick": PICK_WAYS, "dismiss": DISMISS_WAYS},
)
#: The width of a phone's screen, in CSS pixels: the page's narrowest layout.
PHONE_WIDTH: Final = 360
DESKTOP_WIDTH: Final = 1280


@dataclass(frozen=True)
class _Card:
    """The locators of one ask's card, on the browser's loop."""

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
        if isinstance(action, Skip):
            # The group's last checkbox: it follows a multi-select's options.
            await group.get_by_role("checkbox").last.check()
        elif isinstance(action, Revise):
            for kind, value in action.steps:
                if kind == "pick":
                    await choices.nth(labels.index(value)).check()
                elif kind == "unpick":
                    await choices.nth(labels.index(value)).uncheck()
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
        for kind, value in action.steps:
            if kind in {"type", "clear"}:
                await feedback.fill(value)
        picked, text = held_after(action.steps, multi=False)
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


async def _act(
    page: Page,
    ask_id: str,
    questions: Sequence[AskUserQuestionItem],
    behaviour: Behaviour,
    *,
    hands: asyncio.Lock,
    patience: float,
) -> None:
    """On the browser's loop: find the ask's card and do *behaviour* on it.

    The human has one pair of hands: the page has one focus, which typing
    goes to, and a reload would wipe a card half filled or sent. So acting
    on a card, from the first gesture until it has gone, holds *hands*.
    """
    card = _Card(page, page.locator(f'article[data-ask-id="{ask_id}"]'))
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
            await asyncio.wait({gesture}, timeout=patience)
            raise
        await _sent(card, patience)


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


class WebDriver:
    """Plays the human at one page of a :class:`~dsh_user_interaction.extra.web.WebProvider`.

    *page* is a Playwright page open at the provider's address, on
    *chromium*'s loop.
    """

    def __init__(
        self,
        provider: WebProvider,
        page: Page,
        chromium: Chromium,
        *,
        capabilities: Capabilities = CAPABILITIES,
        settle: float = 1.0,
        patience: float = 10.0,
    ) -> None:
        self.provider = provider
        self.page = page
        self.chromium = chromium
        self.capabilities = capabilities
        #: How long a card may stay on the page after its ask settled: the
        #: server's message on its way to the page.
        self.settle = settle
        #: How long to wait for a card, or for a sent card to go, before failing.
        self.patience = patience
        self._ask_ids = Handles(provider.ask_id_of)
        #: Held, on the browser's loop, while acting on a card (see _act).
        self._hands = asyncio.Lock()

    async def perform(self, request: AskUserQuestionRequest[Any], behaviour: Behaviour) -> None:
        """Wait until the page shows *request*'s card, then do *behaviour* there.

        Picks, typing and skips fill the card; then it is sent, and the driver
        waits until the card goes (or raises with the page's reason for
        refusing it). ``Nothing`` only waits until the card is shown.
        """

        def message() -> str:
            return f"the provider never made the request an ask within {self.patience:g} s"

        ask_id = await self._ask_ids.wait(request, self.patience, message, eager=50)
        # The request is the caller's: the browser's thread reads a copy.
        questions = copy.deepcopy(request["questions"])
        page, hands, patience = self.page, self._hands, self.patience
        await self.chromium.run(
            lambda: _act(page, ask_id, questions, behaviour, hands=hands, patience=patience)
        )

    async def is_shown(self, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether the request's card is still on the page once :attr:`settle` has passed."""
        ask_id = self._ask_ids.of(request)
        if ask_id is None:
            return False  # never made an ask, so never shown
        card = self.page.locator(f'article[data-ask-id="{ask_id}"]')
        hands = self._hands

        async def count() -> int:
            async with hands:  # not while a reload empties the page
                return await card.count()

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle
        while await self.chromium.run(count):
            if loop.time() >= deadline:
                return True
            await asyncio.sleep(0.01)
        return False


async def make_subject(
    provider_type: type[WebProvider] = WebProvider,
    *,
    chromium: Chromium | None = None,
    width: int = DESKTOP_WIDTH,
    name: str = "web",
    patience: float = 10.0,
) -> Subject:
    """A fresh provider, serving its page to a fresh browser tab whose human is the driver.

    *provider_type* is :class:`~dsh_user_interaction.extra.web.WebProvider`
    or a variant of it (the test gallery's broken ones). The tab is *width*
    CSS pixels wide, in *chromium* (by default the process's shared one).
    """
    browser = chromium or shared_chromium()
    provider = provider_type()
    try:
        await provider.start()

        async def opened() -> Page:
            page = await browser.tab(width)
            try:
                await open_page(page, provider.url, patience)
            except BaseException:
                await page.context.close()
                raise
            return page

        page = await browser.run(opened)
    except BaseException:
        await provider.aclose()
        raise

    async def aclose() -> None:
        try:
            await browser.run(lambda: browser.give_back(page))
        finally:
            await provider.aclose()

    driver = WebDriver(provider, page, browser, patience=patience)
    return Subject(provider=provider, driver=driver, name=name, aclose=aclose)


@with_capabilities(CAPABILITIES)
async def web_subject() -> Subject:
    """A fresh web provider, its page open in headless Chromium at desktop width."""
    return await make_subject()


@with_capabilities(CAPABILITIES)
async def web_phone_subject() -> Subject:
    """The same, in a tab as narrow as a phone's screen (360 CSS pixels)."""
    return await make_subject(width=PHONE_WIDTH, name="web-phone")
