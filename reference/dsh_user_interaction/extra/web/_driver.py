"""The conformance driver of the web provider: a person at the page, in headless Chromium.

It is black box. It opens the address the provider prints, as a person given
it would, in a tab of the browser host (a process of its own, see
``_chromium.py``), and acts there through roles and accessible names
(``_gestures.py``). The one thing it asks the provider is
:meth:`~dsh_user_interaction.extra.web.WebProvider.ask_id_of`: which card to
act on when several look alike.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction_conformance import (
    Behaviour,
    Capabilities,
    Subject,
    with_capabilities,
)

from .._polling import Handles
from ._chromium import Chromium, HostConnection, shared_chromium
from ._gestures import DISMISS_WAYS, PICK_WAYS
from ._provider import WebProvider
from ._wire import encode_behaviour

__all__ = [
    "CAPABILITIES",
    "PHONE_WIDTH",
    "WebDriver",
    "make_subject",
    "web_phone_subject",
    "web_subject",
]

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


class WebDriver:
    """Plays the human at one tab showing a :class:`~dsh_user_interaction.extra.web.WebProvider`.

    The tab is number *tab* of the browser host that *host* is connected to.
    """

    def __init__(
        self,
        provider: WebProvider,
        host: HostConnection,
        tab: int,
        *,
        capabilities: Capabilities = CAPABILITIES,
        settle: float = 1.0,
        patience: float = 10.0,
    ) -> None:
        self.provider = provider
        self.host = host
        self.tab = tab
        self.capabilities = capabilities
        #: Seconds a card may stay on the page after its ask settled (the
        #: server's message on its way to the page).
        self.settle = settle
        #: Seconds to wait for a card, or for a sent card to go, before failing.
        self.patience = patience
        self._ask_ids = Handles(provider.ask_id_of)

    async def perform(self, request: AskUserQuestionRequest[Any], behaviour: Behaviour) -> None:
        """Wait until the page shows *request*'s card, then do *behaviour* there.

        Picks, typing and skips fill the card; then it is sent, and the driver
        waits until the card goes (or raises with the page's reason for
        refusing it). ``Nothing`` only waits until the card is shown.
        """

        def message() -> str:
            return f"the provider never made the request an ask within {self.patience:g} s"

        ask_id = await self._ask_ids.wait(request, self.patience, message, eager=50)
        await self.host.call(
            "act",
            tab=self.tab,
            ask=ask_id,
            questions=request["questions"],
            behaviour=encode_behaviour(behaviour),
            patience=self.patience,
        )

    async def is_shown(self, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether the request's card is still on the page once :attr:`settle` has passed."""
        ask_id = self._ask_ids.of(request)
        if ask_id is None:
            return False  # never made an ask, so never shown
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle
        while await self.host.call("count", tab=self.tab, ask=ask_id):
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
    provider = provider_type()
    host: HostConnection | None = None
    try:
        await provider.start()
        host = await (chromium or shared_chromium()).connect()
        tab = await host.call("open", url=provider.url, width=width, patience=patience)
    except BaseException:
        if host is not None:
            await host.aclose()
        await provider.aclose()
        raise
    connection = host

    async def aclose() -> None:
        # The host keeps the subject's tab for the next subject once its connection closes.
        try:
            await connection.aclose()
        finally:
            await provider.aclose()

    driver = WebDriver(provider, connection, tab, patience=patience)
    return Subject(provider=provider, driver=driver, name=name, aclose=aclose)


@with_capabilities(CAPABILITIES)
async def web_subject() -> Subject:
    """A fresh web provider, its page open in headless Chromium at desktop width."""
    return await make_subject()


@with_capabilities(CAPABILITIES)
async def web_phone_subject() -> Subject:
    """The same, in a tab as narrow as a phone's screen (360 CSS pixels)."""
    return await make_subject(width=PHONE_WIDTH, name="web-phone")
