"""Broken variants of the web provider across its tabs, each caught by the surfaces check.

A tab of the page is a surface (``SURF-*``). Each variant is the real page or
server with one mistake a multi-tab UI makes: a late answer from a second
tab told it was taken, the other tabs never told, a dismissal told as an
answer, a tab's close taken for a dismissal, a reload that shows ended asks.
``BROKEN_TABS`` maps a name to its factory, the requirements the suite may
name (``|`` between them), and the check that finds it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dsh_user_interaction import ErrorCode
from dsh_user_interaction.extra.web import WebProvider
from dsh_user_interaction.extra.web._board import Ask, Board, Page
from dsh_user_interaction_conformance import Subject

from .web import _factory, _page_with

__all__ = ["BROKEN_TABS"]


class _LateOk:
    """The server's application, except that a refused late answer or dismissal is said to be taken.

    The POST of a tab whose action came too late gets ``200 {"ok": true}``
    instead of the ``409`` that says the ask ended elsewhere.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith("/asks/"):
            await self._app(scope, receive, send)
            return
        late: list[bool] = []

        async def rewritten(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 409:
                late.append(True)
                body = json.dumps({"ok": True}).encode()
                headers = [
                    (key, value)
                    for key, value in message.get("headers", [])
                    if key.lower() != b"content-length"
                ]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({**message, "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            if late:
                return  # the refusal's own body, replaced above
            await send(message)

        await self._app(scope, receive, rewritten)


class LateAnswerTaken(WebProvider):
    """A second tab's answer, sent after the ask ended elsewhere, is told it was taken."""

    async def _serve(self) -> None:
        await super()._serve()
        assert self._server is not None
        config = self._server.config
        loaded: object = getattr(config, "loaded_app")  # noqa: B009 - typed loosely by uvicorn
        config.loaded_app = _LateOk(cast("ASGIApp", loaded))


class _LeavingDismisses(Board):
    """A page that leaves (its tab closed) takes every pending ask with it, as dismissed."""

    def leave(self, page: Page) -> None:
        super().leave(page)
        for ask_id in list(self.asks):
            self.settle(ask_id, "dismissed", page.id, error=ErrorCode.ASK_CANCELLED)


class ClosingTabDismisses(WebProvider):
    """Closing one tab dismisses the asks it showed, though other tabs still show them."""

    _board_type: ClassVar[type[Board]] = _LeavingDismisses


class _RemembersEnded(Board):
    """A page that (re)connects is sent the asks that ended too, as if still pending."""

    def __init__(self) -> None:
        super().__init__()
        self.ended: dict[str, Ask] = {}

    def settle(self, ask_id: str, *args: Any, **kwargs: Any) -> bool:
        ask = self.asks.get(ask_id)
        settled = super().settle(ask_id, *args, **kwargs)
        if settled and ask is not None:
            self.ended[ask_id] = ask
        return settled

    def join(self, agent: str | None) -> Page:
        kept = dict(self.asks)
        self.asks.update(self.ended)
        try:
            return super().join(agent)
        finally:
            self.asks.clear()
            self.asks.update(kept)


class ReloadShowsEnded(WebProvider):
    """A reloaded tab shows the asks that ended, answerable again, beside those still pending."""

    _board_type: ClassVar[type[Board]] = _RemembersEnded


#: The page's script, broken one way each across tabs: (the text replaced, its replacement).
_SCRIPT_BUGS: Mapping[str, tuple[str, str]] = {
    # Only the tab that answered is told: the others keep the card of an ended ask.
    "others-not-told": (
        "    case 'settled': settle(message.askId, message.how, message.by, message.note, message);"
        " break;",
        "    case 'settled': if (message.by == null || state.pageIds.has(message.by))"
        " settle(message.askId, message.how, message.by, message.note, message); break;",
    ),
    # A dismissal, here or elsewhere, is told as an answer.
    "dismissal-told-as-answer": (
        "    case 'dismissed': return `Dismissed${where}`;",
        "    case 'dismissed': return `Answered${where}`;",
    ),
}

#: Each broken variant: its factory, the requirements the suite may name, and the check.
BROKEN_TABS: dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]] = {
    **{
        name: (_factory(_page_with(name, *bug), name), "SURF-TELL-1", "surfaces")
        for name, bug in _SCRIPT_BUGS.items()
    },
    "late-answer-taken": (
        _factory(LateAnswerTaken, "late-answer-taken"),
        "SURF-TELL-1|SURF-ONE-1",
        "surfaces",
    ),
    "closing-tab-dismisses": (
        _factory(ClosingTabDismisses, "closing-tab-dismisses"),
        "SURF-CLOSE-1|SURF-ONE-1",
        "surfaces",
    ),
    "reload-shows-ended": (
        _factory(ReloadShowsEnded, "reload-shows-ended"),
        "SURF-RELOAD-1|SURF-CLOSE-1",
        "surfaces",
    ),
}
