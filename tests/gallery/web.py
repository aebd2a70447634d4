"""Broken variants of the web provider, each a mistake a real web UI makes.

Each serves its page to headless Chromium and is driven by the same black-box
driver as the real provider. A broken page is the real page with one
deliberate bug, patched into a copy of its script; a broken server is the real
one with one method changed. ``BROKEN_WEB`` maps a name to its factory, the
requirements the suite may name (``|`` between them), and the check that
finds it.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, ClassVar

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest, ErrorCode
from dsh_user_interaction.extra.web import WebProvider
from dsh_user_interaction.extra.web._app import PAGE_FILES
from dsh_user_interaction.extra.web._board import Board, How, Page
from dsh_user_interaction.extra.web.testing import CAPABILITIES, make_subject
from dsh_user_interaction_conformance import Subject, with_capabilities

#: How long the driver waits for a card: a broken page that loses one costs this.
PATIENCE = 3.0


@functools.cache
def _pages() -> Path:
    made = Path(tempfile.mkdtemp(prefix="dsh-web-gallery-"))
    atexit.register(shutil.rmtree, made, ignore_errors=True)
    return made


def _patched(name: str, old: str, new: str) -> Traversable:
    """A copy of the page's files whose script has *old* replaced by *new*."""
    script = (PAGE_FILES / "app.js").read_text(encoding="utf-8")
    assert script.count(old) == 1, f"the page's script no longer holds {old!r}"
    folder = _pages() / name
    folder.mkdir(exist_ok=True)
    for file in ("index.html", "app.css"):
        (folder / file).write_bytes((PAGE_FILES / file).read_bytes())
    (folder / "app.js").write_text(script.replace(old, new), encoding="utf-8")
    return folder


def _page_with(name: str, old: str, new: str) -> type[WebProvider]:
    """A provider serving the page with one bug: *old* in its script replaced by *new*."""

    class Broken(WebProvider):
        _page_files: ClassVar[Traversable] = _patched(name, old, new)

    Broken.__name__ = Broken.__qualname__ = f"Page_{name.replace('-', '_')}"
    return Broken


class _ReloadLosesNewest(Board):
    """A page that (re)connects is sent every pending ask but the newest."""

    def join(self, agent: str | None) -> Page:
        hidden = dict(list(self.asks.items())[-1:])
        for ask_id in hidden:
            del self.asks[ask_id]
        try:
            return super().join(agent)
        finally:
            self.asks.update(hidden)


class ReloadLosesAsk(WebProvider):
    """A reload loses a pending ask: the snapshot a new connection gets leaves one out."""

    _board_type: ClassVar[type[Board]] = _ReloadLosesNewest


#: How a cancelled call's ask settles: stopped by the agent, or at its deadline.
_CANCELLED: frozenset[How] = frozenset({"withdrawn", "timed_out", "defaulted"})


class _CancelUnannounced(Board):
    """An ask whose call was cancelled ends, but the pages are never told."""

    def settle(
        self,
        ask_id: str,
        how: How,
        by: str | None,
        *,
        answer: AskUserQuestionAnswer | None = None,
        error: ErrorCode | None = None,
    ) -> bool:
        if how in _CANCELLED and error is None and ask_id in self.asks:
            self.asks.pop(ask_id).future.cancel()
            return True
        return super().settle(ask_id, how, by, answer=answer, error=error)


class CancelLeavesCard(WebProvider):
    """A cancelled ask's card stays on the page, answerable, after the agent stopped waiting."""

    _board_type: ClassVar[type[Board]] = _CancelUnannounced


class SignalIgnored(WebProvider):
    """The request's signal is never listened to: an abort leaves the ask pending."""

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        return await super().ask({k: v for k, v in request.items() if k != "signal"})  # type: ignore[arg-type] # the request, minus its signal

    def ask_id_of(self, request: AskUserQuestionRequest[Any]) -> str | None:
        # The ask's request is the copy without the signal: match by what it asks.
        return next(
            (
                ask.id
                for ask in self._board.asks.values()
                if ask.request["questions"] is request["questions"]
            ),
            None,
        )


#: The page's script, broken one way each: (the text replaced, its replacement).
_SCRIPT_BUGS: Mapping[str, tuple[str, str]] = {
    # A page that shows labels but sends their descriptions (when they have one).
    "descriptions-as-labels": (
        "return { input, label: String(option.label ?? '') };",
        "return { input, label: String(option.description || option.label || '') };",
    ),
    # Radio buttons without a shared name: picking another option keeps the first.
    "radios-not-grouped": ("    input.name = group;\n", ""),
    # The human's own text trimmed before it is sent.
    "custom-trimmed": (
        "  if (typed) return { id: q.id, selected, custom: text.value };",
        "  if (typed) return { id: q.id, selected, custom: text.value.trim() };",
    ),
    # A multi-select's Other text dropped as soon as an option is picked too.
    "multi-other-dropped": (
        "  if (typed) return { id: q.id, selected, custom: text.value };",
        "  if (typed && !selected.length) return { id: q.id, selected, custom: text.value };",
    ),
    # Dismiss sends every question skipped, an answer, instead of dismissing.
    "dismiss-as-skip": (
        "actions.append(button('Dismiss', 'secondary', () => post(card, 'dismiss', {})));",
        "actions.append(button('Dismiss', 'secondary', () => post(card, 'answer', "
        "{ answers: card.entries.map((e) => ({ id: e.q.id, selected: [] })) })));",
    ),
}


def _factory(provider_type: type[WebProvider], name: str) -> Callable[[], Awaitable[Subject]]:
    @with_capabilities(CAPABILITIES)
    async def factory() -> Subject:
        return await make_subject(provider_type, name=f"web-{name}", patience=PATIENCE)

    return factory


#: What the suite must name for each broken page, and the check that finds it.
_PAGES_JUDGED: Mapping[str, tuple[str, str]] = {
    "descriptions-as-labels": ("PRV-ANSWER-1|PRV-REVISE-1", "provider-answers"),
    "radios-not-grouped": ("PRV-ANSWER-1|PRV-REVISE-1", "provider-answers"),
    "custom-trimmed": ("PRV-TEXT-1", "provider-answers"),
    "multi-other-dropped": ("PRV-ANSWER-1", "provider-answers"),
    "dismiss-as-skip": ("PRV-DISMISS-1", "provider-lifecycle"),
}

#: Each broken variant: its factory, the requirements the suite may name, and the check.
BROKEN_WEB: dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]] = {
    **{
        name: (_factory(_page_with(name, *_SCRIPT_BUGS[name]), name), requirement, check)
        for name, (requirement, check) in _PAGES_JUDGED.items()
    },
    "reload-loses-ask": (
        _factory(ReloadLosesAsk, "reload-loses-ask"),
        "PRV-ANSWER-1|PRV-REVISE-1",
        "provider-answers",
    ),
    "cancel-leaves-card": (
        _factory(CancelLeavesCard, "cancel-leaves-card"),
        "PRV-CANCEL-1",
        "provider-lifecycle",
    ),
    "signal-ignored": (
        _factory(SignalIgnored, "signal-ignored"),
        "PRV-ABORT-2",
        "provider-lifecycle",
    ),
}
