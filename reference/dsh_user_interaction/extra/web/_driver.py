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
from dataclasses import replace
from typing import Any, Final

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction_conformance import (
    ENDINGS,
    Behaviour,
    Capabilities,
    Dismiss,
    Nothing,
    Pick,
    SecretOffer,
    Subject,
    Told,
    with_capabilities,
)

from .._polling import Handles
from ._chromium import Chromium, HostConnection, shared_chromium
from ._gestures import DISMISS_WAYS, PICK_WAYS
from ._hostile import page_origin
from ._hostile import send as send_hostile
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
    # It serves the page over HTTP, and the driver sends as a hostile page would (WEB-*).
    serves_http=True,
    # Tabs of one page: the first is opened with the subject, the second when
    # the suite first acts there (SURF-*).
    surfaces=2,
    ways={"pick": PICK_WAYS, "dismiss": DISMISS_WAYS},
)
#: The width of a phone's screen, in CSS pixels: the page's narrowest layout.
PHONE_WIDTH: Final = 360
DESKTOP_WIDTH: Final = 1280


class WebDriver:
    """Plays the human at the tabs showing a :class:`~dsh_user_interaction.extra.web.WebProvider`.

    Its first surface is tab number *tab* of the browser host that *host* is
    connected to; the others are tabs it opens at *url* when first used, *width*
    CSS pixels wide (``SURF-*``: a tab is a surface).
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
        url: str | None = None,
        width: int = 1280,
    ) -> None:
        self.provider = provider
        self.host = host
        self.tab = tab
        #: The host's tab number of each surface that is open, by surface.
        self.tabs: dict[int, int] = {0: tab}
        self.url = url if url is not None else provider.url
        self.width = width
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
        return await self._still_shown(self.tab, request)

    async def _still_shown(self, tab: int, request: AskUserQuestionRequest[Any]) -> bool:
        ask_id = self._ask_ids.of(request)
        if ask_id is None:
            return False  # never made an ask, so never shown
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle
        while await self.host.call("count", tab=tab, ask=ask_id):
            if loop.time() >= deadline:
                return True
            await asyncio.sleep(0.01)
        return False

    async def _tab(self, surface: int) -> int:
        """The host's tab of *surface*, opened now if it has not been yet."""
        if not 0 <= surface < self.capabilities.surfaces:
            msg = f"no surface {surface}: the page has {self.capabilities.surfaces}"
            raise ValueError(msg)
        if surface not in self.tabs:
            self.tabs[surface] = await self._open()
        return self.tabs[surface]

    async def _open(self) -> int:
        opened = await self.host.call(
            "open", url=self.url, width=self.width, patience=self.patience
        )
        if not isinstance(opened, int):
            msg = f"the browser host opened {opened!r}, not a tab"
            raise TypeError(msg)
        return opened

    async def perform_on(
        self, surface: int, request: AskUserQuestionRequest[Any], behaviour: Behaviour
    ) -> None:
        """Do *behaviour* at *surface*'s tab; return quietly if another tab ended the ask first."""
        tab = await self._tab(surface)
        remembered = self._ask_ids.of(request)
        if remembered is not None and self.provider.ask_id_of(request) is None:
            # Found before, on another surface: the ask has ended since.
            ask_id = remembered
        else:
            ask_id = await self._ask_ids.wait(
                request,
                self.patience,
                lambda: f"the provider never made the request an ask within {self.patience:g} s",
                eager=50,
            )
        if isinstance(behaviour, tuple):
            # A pick "after-reload" reloads the tab first: as another tab ends the ask,
            # the fresh page has neither the card nor its word of how the ask ended.
            # A reload is a step of its own on several surfaces (SURF-RELOAD-1).
            behaviour = tuple(
                replace(action, way=None)
                if isinstance(action, Pick) and action.way == "after-reload"
                else action
                for action in behaviour
            )
        await self.host.call(
            "act" if isinstance(behaviour, Nothing) else "act-on",
            tab=tab,
            ask=ask_id,
            questions=request["questions"],
            behaviour=encode_behaviour(behaviour),
            patience=self.patience,
        )

    async def is_shown_on(self, surface: int, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether *surface*'s tab still shows the request's card once :attr:`settle` has passed."""
        return await self._still_shown(await self._tab(surface), request)

    async def told_on(self, surface: int, request: AskUserQuestionRequest[Any]) -> Told | None:
        """What *surface*'s "Recent" list says of how the request's ask ended.

        It waits up to :attr:`patience` seconds for the line: the ask has
        ended, so a page that says nothing is wrong. "Answered here" is an
        answer taken from this tab; "in another page" and "elsewhere" one
        from another; "Withdrawn by the agent" and "Time ran out" say the
        agent ended it.
        """
        ask_id = self._ask_ids.of(request)
        if ask_id is None:
            return None
        said = await self.host.call(
            "told", tab=await self._tab(surface), ask=ask_id, patience=self.patience
        )
        return None if not isinstance(said, str) else told_from(said)

    async def reload(self, surface: int) -> None:
        """Reload *surface*'s tab, and return once the page says it is connected again."""
        await self.host.call("reload", tab=await self._tab(surface), patience=self.patience)

    async def close(self, surface: int) -> None:
        """Close *surface*'s tab, as its human would (its socket closes with it)."""
        tab = self.tabs.pop(surface, None)
        if tab is not None:
            await self.host.call("shut", tab=tab)

    async def reopen(self, surface: int) -> None:
        """Open *surface*'s tab again at the page's address, once it says it is connected."""
        if surface not in self.tabs:
            self.tabs[surface] = await self._open()

    @property
    def origin(self) -> str:
        """The page's own origin, as the browser sends it (the ``HttpProbe`` protocol)."""
        return page_origin(self.provider.url)

    async def send(
        self,
        request: AskUserQuestionRequest[Any],
        outcome: AskUserQuestionAnswer | Dismiss,
        *,
        secret: SecretOffer,
        origin: str,
        content_type: str,
    ) -> int:
        """POST *outcome* for *request*'s ask as the page would, but as the keywords say.

        The ``HttpProbe`` protocol: raw HTTP, no browser. With
        ``secret="cookie"`` the secret goes only as a ``dsh-secret`` cookie; a
        form body holds the page's JSON as the field ``answer``. Returns the
        response's status.
        """
        ask_id = await self._ask_ids.wait(
            request,
            self.patience,
            lambda: f"the provider never made the request an ask within {self.patience:g} s",
            eager=50,
        )
        return await send_hostile(
            self.provider.url,
            ask_id,
            outcome,
            offer=secret,
            origin=origin,
            content_type=content_type,
        )

    async def markup_from_model(self, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether the first tab has an element with the suite's probe attribute (``HttpProbe``)."""
        del request  # the whole page is looked at: model text may be shown outside its card
        return bool(await self.host.call("markup", tab=self.tab))


def told_from(said: str) -> Told:
    """The suite's reading of a "Recent" line's words of how an ask ended.

    >>> told_from("Answered here"), told_from("Dismissed in another page")
    (Told(how='answered', here=True), Told(how='dismissed', here=False))
    >>> told_from("Time ran out")
    Told(how='timed_out', here=None)
    """
    for how, words in _SAID:
        if said == words or said.startswith((f"{words} ", f"{words};")):
            rest = said[len(words) :]
            if how in {"answered", "dismissed"}:
                here = True if rest == " here" else False if rest.strip() else None
                return Told(how, here)
            return Told(how, None) if rest == "" else Told(said, None)
    return Told(said, None)


#: How the page words each ending (``describe`` in ``static/app.js``).
_SAID: Final = tuple(
    zip(ENDINGS, ("Answered", "Dismissed", "Withdrawn by the agent", "Time ran out"), strict=True)
)


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
        # Connecting may take longer than a card on a busy machine: at least 10 s.
        tab = await host.call("open", url=provider.url, width=width, patience=max(patience, 10.0))
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

    driver = WebDriver(provider, connection, tab, patience=patience, width=width)
    return Subject(provider=provider, driver=driver, name=name, aclose=aclose)


@with_capabilities(CAPABILITIES)
async def web_subject() -> Subject:
    """A fresh web provider, its page open in headless Chromium at desktop width."""
    return await make_subject()


@with_capabilities(CAPABILITIES)
async def web_phone_subject() -> Subject:
    """The same, in a tab as narrow as a phone's screen (360 CSS pixels)."""
    return await make_subject(width=PHONE_WIDTH, name="web-phone")
