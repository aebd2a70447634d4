"""Broken variants of the web provider across its tabs, each caught by the surfaces check.

A tab of the page is a surface (``SURF-*``). Each variant is the real page or
server with one mistake a multi-tab UI makes: every tab told that its own
action won, the other tabs never told, a dismissal told as an answer, a
tab's close taken for a dismissal, a reload that shows ended asks.

A server that answers a late POST with ``200`` instead of ``409`` is not
among them: by the time that reply comes, the page has heard the server's
message that the ask ended, and says "answered in another page" whatever
the reply says. The suite judges what the human is told, and could not
tell it from the real server (a 20-seed detection run against it went 20
minutes without finishing its seeds).
``BROKEN_TABS`` maps a name to its factory, the requirements the suite may
name (``|`` between them), and the check that finds it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from dsh_user_interaction import ErrorCode
from dsh_user_interaction.extra.web import WebProvider
from dsh_user_interaction.extra.web._board import Ask, Board, Page
from dsh_user_interaction_conformance import Subject

from .web import _factory, _page_with

__all__ = ["BROKEN_TABS"]


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
    # Every tab says an answer or dismissal was its own: a losing tab is told it won.
    "every-tab-told-it-won": (
        "  const here = by != null && state.pageIds.has(by);",
        "  const here = by != null;",
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
