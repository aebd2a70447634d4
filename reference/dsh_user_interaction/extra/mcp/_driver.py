"""The conformance driver of the server-side provider: a human at a real MCP client.

The human is the client's elicitation callback (:class:`Human`): each
elicitation request the server sends waits there, outstanding, until the
driver fills the form and accepts it, declines or cancels it, or the server
cancels it. :class:`ElicitationDriver` knows the form only as the client
sees it: the requested schema (question *n* is property ``q<n>``, its own
answer ``q<n>_other``; an option is picked by its position, as a human
clicks it) and the ask number in the request's ``_meta``. The one thing it
asks the provider is
:meth:`~dsh_user_interaction.extra.mcp.McpElicitationProvider.number_of`:
which number to look for when several asks wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, Protocol, cast

import mcp_types as types
from mcp.client.session import ClientRequestContext

from dsh_user_interaction import AskUserQuestionItem, AskUserQuestionRequest
from dsh_user_interaction_conformance import (
    Action,
    Behaviour,
    Capabilities,
    Dismiss,
    Nothing,
    Revise,
    Skip,
    Subject,
    TypeText,
    held_after,
    with_capabilities,
)

from .._polling import Handles, poll_until
from ._connection import Connection
from ._provider import ASK_META_KEY, McpElicitationProvider

__all__ = [
    "CAPABILITIES",
    "CAPABILITIES_WITHOUT_CUSTOM_TEXT",
    "ElicitationDriver",
    "Human",
    "Numbered",
    "OutstandingElicitation",
    "make_subject",
    "mcp_subject",
]

#: What the MCP bridge can do, with a text field on every question with options.
CAPABILITIES: Final = Capabilities(
    can_skip=True,
    can_dismiss=True,
    custom_on_single=True,
    custom_on_multi=True,
    concurrent=True,
    observes_screen=True,
    # The client's human declines the form, or cancels it: both dismiss the batch,
    # and the suite draws each in every run.
    ways={"dismiss": ("decline", "cancel")},
)
#: What it can do with ``custom_text=False``: no answer of the human's own beside the options.
CAPABILITIES_WITHOUT_CUSTOM_TEXT: Final = replace(
    CAPABILITIES, custom_on_single=False, custom_on_multi=False
)


@dataclass(eq=False)
class OutstandingElicitation:
    """An elicitation request the client holds: what it asks, and how it will be answered."""

    #: The ask number from the request's ``_meta``, when it has one; on revision
    #: 2026-07-28, the input request's key instead.
    number: int | str | None
    params: types.ElicitRequestFormParams
    result: asyncio.Future[types.ElicitResult]


class Human:
    """The client's elicitation callback: holds every request until the driver answers it."""

    def __init__(self) -> None:
        self.outstanding: list[OutstandingElicitation] = []
        #: How many requests the server has cancelled while they were outstanding.
        self.withdrawn = 0

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Hold the request until the driver settles it, or the server cancels it."""
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ErrorData(code=types.INVALID_PARAMS, message="forms only")
        meta = params.meta or {}
        number = meta.get(ASK_META_KEY)
        if not isinstance(number, int) and isinstance(context.request_id, str):
            # An input request of revision 2026-07-28 reaches the client without its
            # _meta: its key tells the asks apart (see _rounds.py).
            number = context.request_id
        held = OutstandingElicitation(
            number if isinstance(number, int | str) else None,
            params,
            asyncio.get_running_loop().create_future(),
        )
        self.outstanding.append(held)
        try:
            return await held.result
        except asyncio.CancelledError:
            self.withdrawn += 1
            raise
        finally:
            self.outstanding.remove(held)

    def find(self, number: int | str) -> OutstandingElicitation | None:
        """The outstanding request of ask *number*, if the client holds it."""
        return next((e for e in self.outstanding if e.number == number), None)


def _const(prop: object, position: int, name: str) -> str:
    """The value of the option at *position* in an enum property, as the form offers it."""
    if not isinstance(prop, dict):
        msg = f"the form has no property {name}"
        raise LookupError(msg)
    spec = cast("dict[str, Any]", prop)
    holder = cast("dict[str, Any]", spec.get("items", spec))
    entries = cast("list[Any]", holder.get("oneOf") or holder.get("anyOf") or holder.get("enum"))
    entry: object = entries[position]
    value = cast("dict[str, object]", entry)["const"] if isinstance(entry, dict) else entry
    return cast("str", value)


def fill(
    request: AskUserQuestionRequest[Any], schema: dict[str, Any], actions: tuple[Action, ...]
) -> dict[str, str | int | float | bool | list[str] | None]:
    """The content a human submits who does *actions* on the form *schema* shows."""
    properties = cast("dict[str, Any]", schema.get("properties", {}))
    content: dict[str, str | int | float | bool | list[str] | None] = {}
    for number, (question, action) in enumerate(zip(request["questions"], actions, strict=True), 1):
        name = f"q{number}"
        if isinstance(action, Skip):
            continue
        labels = _labels(question)
        multi = question.get("multiSelect") is True
        if isinstance(action, Revise):
            # The form holds what the human left in it: the last pick (or the picks
            # left), and the text last typed, both sent as they stand. A form has
            # no Skip: a question skipped is one left empty, whatever it held.
            chosen, text = held_after(action.steps, multi=multi)
            if not chosen and not text:
                continue
        else:
            chosen = list(action.labels) if labels else []
            text = action.text if isinstance(action, TypeText) else ""
        if not labels:
            content[name] = text
            continue
        picks = [_const(properties.get(name), labels.index(label), name) for label in chosen]
        if multi:
            if picks or not text:
                content[name] = picks
        elif picks:
            content[name] = picks[0]
        if text:
            other = f"{name}_other"
            if other not in properties:
                msg = f"the form has no property {other} for the human's own answer"
                raise LookupError(msg)
            content[other] = text
    return content


def _labels(question: AskUserQuestionItem) -> list[str]:
    return [option["label"] for option in question.get("options", ())]


class Numbered(Protocol):
    """A provider that tells the number its pending request's form carries in ``_meta``."""

    def number_of(self, request: AskUserQuestionRequest[Any]) -> int | str | None: ...


class ElicitationDriver:
    """Plays the human at the MCP client in front of a provider.

    The provider is a :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`
    (or a variant of it) whose client's elicitation callback is *human*, or
    anything else that tells each pending request's number.
    """

    def __init__(
        self,
        provider: Numbered,
        human: Human,
        *,
        capabilities: Capabilities = CAPABILITIES,
        settle: float = 0.1,
        patience: float = 10.0,
    ) -> None:
        self.provider = provider
        self.human = human
        self.capabilities = capabilities
        #: How long a request may stay outstanding after its ask settled (the
        #: cancellation in flight).
        self.settle = settle
        #: How long to wait for a request before giving up with an error.
        self.patience = patience
        self._numbers: Handles[int | str] = Handles(provider.number_of)

    async def _until(self, what: str, check: Callable[[], bool]) -> None:
        def message() -> str:
            return f"the client never received {what} within {self.patience:g} s"

        await poll_until(check, self.patience, message, eager=50)

    async def perform(self, request: AskUserQuestionRequest[Any], behaviour: Behaviour) -> None:
        """Wait until the client holds *request*'s elicitation, then settle it as *behaviour* says.

        Pick and type fill the form field by field; a dismissal declines the
        form or cancels it, as its way says; ``Nothing`` only waits.
        """

        def message() -> str:
            return f"the client never received the ask within {self.patience:g} s"

        number = await self._numbers.wait(request, self.patience, message, eager=50)
        await self._until(
            f"the elicitation of ask #{number}", lambda: self.human.find(number) is not None
        )
        held = self.human.find(number)
        assert held is not None
        if isinstance(behaviour, Nothing) or held.result.done():
            return
        if isinstance(behaviour, Dismiss):
            # Both end the batch with ASK_CANCELLED.
            if behaviour.way not in {None, "decline", "cancel"}:
                msg = f"no way to dismiss called {behaviour.way!r} at an MCP client"
                raise ValueError(msg)
            cancel = behaviour.way == "cancel"
            action: Literal["decline", "cancel"] = "cancel" if cancel else "decline"
            held.result.set_result(types.ElicitResult(action=action))
            return
        content = fill(request, held.params.requested_schema, behaviour)
        held.result.set_result(types.ElicitResult(action="accept", content=content))

    async def is_shown(self, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether the client still holds the request's elicitation, after the settle time."""
        number = self._numbers.of(request)
        if number is None:
            return False  # never sent, so never shown
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle
        while self.human.find(number) is not None:
            if loop.time() >= deadline:
                return True
            await asyncio.sleep(0.002)
        return False


async def make_subject(
    provider_type: type[McpElicitationProvider] = McpElicitationProvider,
    *,
    custom_text: bool = True,
    name: str = "mcp",
) -> Subject:
    """A fresh provider on a real MCP server, with a real client whose human is the driver.

    *provider_type* is :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`
    or a variant of it (the test gallery's broken ones).
    """
    human = Human()
    connection = Connection(human)
    context = await connection.open()
    provider = provider_type(context, custom_text=custom_text)
    capabilities = CAPABILITIES if custom_text else CAPABILITIES_WITHOUT_CUSTOM_TEXT
    driver = ElicitationDriver(provider, human, capabilities=capabilities)
    return Subject(provider=provider, driver=driver, name=name, aclose=connection.aclose)


@with_capabilities(CAPABILITIES)
async def mcp_subject() -> Subject:
    """A fresh MCP elicitation provider, a real server and client over in-memory streams."""
    return await make_subject()


@with_capabilities(CAPABILITIES_WITHOUT_CUSTOM_TEXT)
async def mcp_subject_without_custom_text() -> Subject:
    """The same, with ``custom_text=False``: questions with options take no text."""
    return await make_subject(custom_text=False, name="mcp-without-custom-text")
