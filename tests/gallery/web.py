"""Broken variants of the web provider, each a mistake a real web UI makes.

Each serves its page to headless Chromium and is driven by the same black-box
driver as the real provider. A broken page is the real page with one
deliberate bug, patched into a copy of its script; a broken server is the real
one with one method changed. ``BROKEN_WEB`` maps a name to its factory, the
requirements the suite may name (``|`` between them), and the check that
finds it. ``BROKEN_WEB_PROFILE`` does the same for the web profile (``WEB-*``,
``SHOULD``s, which a run reports as warnings): servers without one of their
checks, and a page that shows model text as HTML.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from http.cookies import SimpleCookie
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, ClassVar, cast
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest, ErrorCode
from dsh_user_interaction.extra.web import WebProvider
from dsh_user_interaction.extra.web._app import PAGE_FILES, Settings
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
    # Skip ignored once an option is picked or text typed: the draft is sent instead.
    "skip-ignored-after-pick": (
        "  if (skip.checked) return { id: q.id, selected: [] };",
        "  if (skip.checked && !choices.some((c) => c.input.checked) && !text.value.trim())"
        " return { id: q.id, selected: [] };",
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
    "skip-ignored-after-pick": ("PRV-REVISE-1", "provider-answers"),
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


# ---------------------------------------------------------------------------
# The web profile (WEB-*): servers and a page that let a hostile request in
# ---------------------------------------------------------------------------

#: The types of a body a page elsewhere can send without a CORS preflight.
_SIMPLE_TYPES = frozenset(
    {"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}
)


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope["headers"] if key.lower() == name), None)


def _with_header(scope: Scope, name: bytes, value: bytes | None) -> Scope:
    """*scope* with the header *name* set to *value* (left out when ``None``)."""
    headers = [(key, old) for key, old in scope["headers"] if key.lower() != name]
    if value is not None:
        headers.append((name, value))
    return {**scope, "headers": headers}


class _Loosened:
    """The server's application with one of its checks undone: a request is let in as if it passed.

    Each variant rewrites what the check reads (a missing secret, a foreign
    ``Origin``, a form's body, a cookie) into what the server accepts, which
    is what a server without that check does.
    """

    def __init__(self, app: ASGIApp, settings: Settings, loosen: str) -> None:
        self._app = app
        self._settings = settings
        self._loosen = loosen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith("/asks/"):
            await self._app(scope, receive, send)
            return
        secret = self._settings.secret.encode()
        if self._loosen == "no-secret-check":
            scope = _with_header(scope, b"x-dsh-secret", secret)
        elif self._loosen == "cookie-secret" and _header(scope, b"x-dsh-secret") is None:
            cookies = SimpleCookie((_header(scope, b"cookie") or b"").decode("latin-1"))
            if "dsh-secret" in cookies:
                scope = _with_header(scope, b"x-dsh-secret", cookies["dsh-secret"].value.encode())
        elif self._loosen == "no-origin-check":
            scope = _with_header(scope, b"origin", min(self._settings.origins).encode())
            scope = _with_header(scope, b"sec-fetch-site", None)
        elif self._loosen == "form-bodies":
            named = (_header(scope, b"content-type") or b"").decode("latin-1")
            if named.split(";", maxsplit=1)[0].strip().lower() in _SIMPLE_TYPES:
                body = await _whole_body(receive)
                scope = _with_header(scope, b"content-type", b"application/json")
                receive = _replay(_form_value(named, body))
        await self._app(scope, receive, send)


async def _whole_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    """A ``receive`` that gives *body* once, then waits as a connection that stays open does."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}  # pragma: no cover - never reached

    return receive


def _form_value(named: str, body: bytes) -> bytes:
    """The JSON a form-encoded *body* holds in its field ``answer``, or *body* itself."""
    media = named.split(";", maxsplit=1)[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        return "".join(parse_qs(body.decode("ascii")).get("answer", [""])).encode()
    if media == "multipart/form-data" and b"\r\n\r\n" in body:
        return body.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n--", 1)[0]
    return body


def _server_without(check: str) -> type[WebProvider]:
    """A provider whose server lets in what *check* would refuse."""

    class Loose(WebProvider):
        async def _serve(self) -> None:
            await super()._serve()
            assert self._server is not None
            config = self._server.config
            # Each connection takes its application from here when it opens.
            loaded: object = getattr(config, "loaded_app")  # noqa: B009 - typed loosely by uvicorn
            app = cast("ASGIApp", loaded)  # uvicorn's wrapping of the server's application
            config.loaded_app = _Loosened(app, self._settings, check)

    Loose.__name__ = Loose.__qualname__ = f"Server_{check.replace('-', '_')}"
    return Loose


#: Each broken server, and the requirement of the web profile it breaks.
_SERVERS_JUDGED: Mapping[str, str] = {
    "no-secret-check": "WEB-SECRET-1",
    "no-origin-check": "WEB-ORIGIN-1",
    "form-bodies": "WEB-BODY-1",
    "cookie-secret": "WEB-COOKIE-1",
}

#: Each broken variant of the web profile: its factory, the requirement it
#: breaks (a SHOULD: reported as a warning, in ``shoulds_broken``) and the check.
BROKEN_WEB_PROFILE: dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]] = {
    **{
        name: (_factory(_server_without(name), name), requirement, "web-profile")
        for name, requirement in _SERVERS_JUDGED.items()
    },
    # Model text inserted as HTML wherever the page shows it.
    "model-text-as-html": (
        _factory(
            _page_with(
                "model-text-as-html",
                "node.textContent = hidden ? '' : text;",
                "node.innerHTML = hidden ? '' : text;",
            ),
            "model-text-as-html",
        ),
        "WEB-MARKUP-1",
        "web-profile",
    ),
}
