"""The pending asks and the pages that show them: the web provider's state, on one loop.

Every page sees every pending ask; the first valid answer or dismissal wins,
and every page hears how each ask ended and through which page. A page gets
its messages through a bounded queue of its own, so a slow or stuck page is
cut off instead of holding the agent or growing memory.

An ask served through a relay (``DUR-ACK-1``) has a verdict to wait for: its
first valid answer or dismissal is *sent* (returned to the relay, every page
told ``sending``), and the ask stays on the board until the store's verdict
settles it: ``answered``/``dismissed`` by that page when saved, how the
winner ended it (and by whom, where) when lost, ``unsaved`` when the relay
could not write it.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from dsh_user_interaction._deadline import deadline_of, default_answer
from dsh_user_interaction._durable._verdict import Verdict
from dsh_user_interaction._errors import ErrorCode, UserInteractionError
from dsh_user_interaction._types import AskUserQuestionAnswer, AskUserQuestionRequest

from ._view import ask_view, time_left

__all__ = ["Ask", "Board", "How", "Page"]

#: How an ask stopped being pending, as the pages are told: ``timed_out`` when
#: its deadline passed, or its signal timed out; ``defaulted`` when the deadline
#: passed and every question has a default, which the service then answers with;
#: ``withdrawn`` when the agent stopped it otherwise; ``expired`` when no agent came
#: back for it; ``unsaved`` when the relay could not write its answer (``DUR-ACK-1``).
How = Literal[
    "answered", "dismissed", "withdrawn", "timed_out", "defaulted", "disposed", "expired", "unsaved"
]
#: Settled asks remembered, so a late answer is told how its ask ended.
SETTLED_KEPT: Final = 1000
#: Messages a page may have waiting before it is cut off as too slow.
PAGE_BACKLOG: Final = 10_000


@dataclass(eq=False)
class Ask:
    """One pending ask: its request, its view for the pages, and the future the agent awaits."""

    id: str
    request: AskUserQuestionRequest
    view: dict[str, Any]
    future: asyncio.Future[AskUserQuestionAnswer]
    #: The request's deadline, read once (seconds since the epoch), or ``None``.
    deadline: float | None = None
    #: The store's verdict on the outcome sent, when a relay gives one (``DUR-ACK-1``).
    verdict: asyncio.Future[Verdict] | None = None
    #: What was sent and through which page, while the verdict is awaited.
    sending: tuple[How, str | None] | None = None
    #: Whether the store's verdict saved what was sent (``DUR-ACK-1``).
    saved: bool = False
    #: Set once the ask has left the board, however it ended.
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    def shown(self) -> dict[str, Any]:
        """The view as a page is sent it now: with the seconds left, when there is a deadline."""
        view = time_left(self.view, self.deadline)
        if self.sending is not None:
            view = {**view, "sending": self.sending[1]}
        return view

    def withdrawn(self, *, timed_out: bool = False) -> How:
        """How the agent's stopping this ask reads to the pages.

        *timed_out* when the stop was a timeout (a timeout signal's). An ask
        stopped at or after its deadline ran out of time too: with a default
        for every question, the service answers with them (``POL-DEFAULT-1``),
        as the card's countdown said it would.
        """
        if self.deadline is not None and time.time() >= self.deadline:
            return "defaulted" if default_answer(self.request) is not None else "timed_out"
        return "timed_out" if timed_out else "withdrawn"


@dataclass(eq=False)
class Page:
    """One connected page: what it is sent waits in its queue, in order."""

    id: str
    queue: asyncio.Queue[str | None] = field(default_factory=lambda: asyncio.Queue(PAGE_BACKLOG))
    #: Set when the page fell too far behind; its socket is closed.
    cut_off: bool = False
    #: Stops the page's writer at once, for a page cut off while its writer waits
    #: on a socket nobody reads; set by the socket's handler.
    stop: Callable[[], object] | None = None


def _encode(message: Mapping[str, Any]) -> str:
    # ASCII only: model text may hold lone surrogates, which only an escape carries.
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"))


class Board:
    """The asks pending in one web provider, and its pages."""

    def __init__(self) -> None:
        self.asks: dict[str, Ask] = {}
        self.pages: dict[str, Page] = {}
        self.settled: collections.OrderedDict[str, tuple[How, str | None]] = (
            collections.OrderedDict()
        )
        #: More on how a settled ask ended, beside :attr:`settled`: who ended it
        #: elsewhere (``principal``, ``via``), and a ``note`` (why it was not saved).
        self.details: dict[str, dict[str, str]] = {}
        self.agent_gone = False
        #: The tasks that send each page its messages; closing waits for them.
        self.writers: set[asyncio.Future[None]] = set()
        #: Sockets accepted and not yet ended, pages cut off included: the page limit counts these.
        self.sockets = 0
        self._next_ask = 1
        self._page_ids = itertools.count(1)

    # -- asks --------------------------------------------------------------

    def open(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict] | None = None
    ) -> Ask:
        """Add *request* as a new pending ask, and show it on every page.

        With a *verdict* (a relay's), the ask's answer or dismissal is sent,
        and the ask stays until the verdict settles it (``DUR-ACK-1``).
        """
        if self.agent_gone:
            raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)
        ask_id = f"a{self._next_ask}"
        self._next_ask += 1
        future: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        ask = Ask(ask_id, request, ask_view(ask_id, request), future, deadline_of(request))
        if verdict is not None:
            ask.verdict = verdict
            verdict.add_done_callback(lambda done: self._concluded(ask, done))
        self.asks[ask_id] = ask
        self.broadcast({"type": "ask", "ask": ask.shown()})
        return ask

    def ask_id_of(self, request: AskUserQuestionRequest) -> str | None:
        """The id of the pending ask of *request* (the same object), if there is one."""
        return next((ask.id for ask in self.asks.values() if ask.request is request), None)

    def issued(self, ask_id: str) -> bool:
        """Whether *ask_id* is one this board gave out (``a1``, ``a2``, ...)."""
        number = ask_id[1:]
        return ask_id[:1] == "a" and number.isdigit() and 0 < int(number) < self._next_ask

    def settle(
        self,
        ask_id: str,
        how: How,
        by: str | None,
        *,
        answer: AskUserQuestionAnswer | None = None,
        error: ErrorCode | None = None,
    ) -> bool:
        """End a pending ask with *answer* or *error*; ``False`` if it was no longer pending.

        What :meth:`tell` said about it goes to the pages with it.
        """
        ask = self.asks.pop(ask_id, None)
        if ask is None:
            return False
        _end(ask.future, answer, error)
        ask.ended.set()
        self.settled[ask_id] = (how, by)
        while len(self.settled) > SETTLED_KEPT:
            forgotten, _ = self.settled.popitem(last=False)
            self.details.pop(forgotten, None)
        told = self.details.get(ask_id, {})
        self.broadcast({"type": "settled", "askId": ask_id, "how": how, "by": by, **told})
        return True

    def tell(self, ask_id: str, **details: str | None) -> None:
        """Say more about how *ask_id* ends, before it settles: ``principal``, ``via``, ``note``."""
        kept = {key: value for key, value in details.items() if value is not None}
        if kept and ask_id in self.asks:  # (only of a pending ask: nothing is kept for none)
            self.details[ask_id] = kept

    def send(
        self,
        ask_id: str,
        how: How,
        by: str | None,
        *,
        answer: AskUserQuestionAnswer | None = None,
        error: ErrorCode | None = None,
    ) -> bool:
        """Give an ask with a verdict its outcome, and keep it until the verdict comes.

        Every page is told the ask is being sent (and through which page); a
        second answer finds it sending. ``False`` when it was not pending, or
        already sending.
        """
        ask = self.asks.get(ask_id)
        if ask is None or ask.sending is not None or ask.future.done():
            return False
        ask.sending = (how, by)
        _end(ask.future, answer, error)
        self.broadcast({"type": "sending", "askId": ask_id, "by": by})
        return True

    def _concluded(self, ask: Ask, verdict: asyncio.Future[Verdict]) -> None:
        """Settle a sent ask as the store's verdict says (``DUR-ACK-1``, ``DUR-TELL-1``)."""
        sent = ask.sending
        if ask.id not in self.asks or sent is None:
            return  # withdrawn before anything was sent: its own call settled it
        told = None if verdict.cancelled() else verdict.result()
        if told is not None and told.saved:
            ask.saved = True
            self.settle(ask.id, *sent)
            return
        if told is not None and told.outcome is not None:
            how = told.how
            self.tell(ask.id, principal=told.outcome.principal, via=told.outcome.via)
            self.settle(ask.id, how if how is not None else "answered", None)
            return
        reason = told.reason if told is not None else None
        self.tell(ask.id, note=reason or "the relay did not say whether it was saved")
        self.settle(ask.id, "unsaved", sent[1])

    # -- pages -------------------------------------------------------------

    def join(self, agent: str | None) -> Page:
        """A new page: it is sent hello and every pending ask, oldest first."""
        page = Page(f"p{next(self._page_ids)}")
        self.pages[page.id] = page
        self._send(page, {"type": "hello", "page": page.id, "agent": agent})
        # Each with the seconds left as of now: a page that joins late counts from there.
        pending = [ask.shown() for ask in self.asks.values()]
        self._send(page, {"type": "pending", "asks": pending})
        if self.agent_gone:
            self._send(page, {"type": "gone"})
        return page

    def leave(self, page: Page) -> None:
        self.pages.pop(page.id, None)

    def broadcast(self, message: Mapping[str, Any]) -> None:
        text = _encode(message)
        for page in list(self.pages.values()):
            self._put(page, text)

    def _send(self, page: Page, message: Mapping[str, Any]) -> None:
        self._put(page, _encode(message))

    def _put(self, page: Page, text: str) -> None:
        if page.cut_off:
            return
        try:
            page.queue.put_nowait(text)
        except asyncio.QueueFull:
            # Too slow to keep up: cut it off; it sees every pending ask again when it reconnects.
            self.end(page)

    def goodbye(self) -> None:
        """The provider is going: every pending ask ends as disposed, and every page is told."""
        for ask_id in list(self.asks):
            self.settle(ask_id, "disposed", None, error=ErrorCode.PROVIDER_DISPOSED)
        self.agent_gone = True
        self.broadcast({"type": "gone"})
        for page in list(self.pages.values()):
            self.end(page)

    def end(self, page: Page) -> None:
        """Close *page* once what it was sent so far has gone out; a full one at once."""
        self.pages.pop(page.id, None)
        if not page.cut_off:
            page.cut_off = True
            try:
                page.queue.put_nowait(None)
            except asyncio.QueueFull:
                # It reads nothing: its writer may be stuck on the socket, so stop it.
                while not page.queue.empty():
                    page.queue.get_nowait()
                page.queue.put_nowait(None)
                if page.stop is not None:
                    page.stop()


def _end(
    future: asyncio.Future[AskUserQuestionAnswer],
    answer: AskUserQuestionAnswer | None,
    error: ErrorCode | None,
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(UserInteractionError.of(error))
    elif answer is not None:
        future.set_result(answer)
    else:
        future.cancel()
