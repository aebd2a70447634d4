"""The AG-UI interrupt provider as a conformance-suite subject: a client plays the human.

Design notes:

* The suite asks :class:`ToolCallAsks`, the agent side of an AG-UI server:
  each ``ask()`` is one tool call of the agent's, asked under the call's id
  (``askId`` and ``agUiToolCallId``, as
  :func:`~dsh_user_interaction.extra.ag_ui.run_tool_call` names it) through
  the :class:`~dsh_user_interaction.extra.ag_ui.AgUiInterruptProvider`
  under test, so the interrupt's id tells the client which ask it shows.
  The request is copied, never changed; its signal goes with it.
* :class:`AgUiClient` is the client: it waits until the interrupt is open,
  turns the human's behaviour into one resume entry (``resolved`` with our
  answer as its payload, as the interrupt's ``responseSchema`` says, or
  ``cancelled`` for a dismissal) and sends it in a later run's
  ``RunAgentInput.resume``.
* Rule 1 (all at once) binds the interrupts a run has ended with. This
  subject's server never ends a run with them: its client sees each
  interrupt as it opens, and a resume carries the one entry the human has
  just given. A run loop that announces would make its client hold every
  answer until the last of the batch is given, and an ask aborted in
  between would then end its interrupt while the client still holds it,
  refusing the whole resume (Rule 3). The suite's human answers pending
  asks one at a time, in any order, with aborts between, as
  ``PRV-CONC-1`` needs; the subject judges the provider's own part, each
  ask kept apart from the others, and leaves the batching to the tests of
  Rule 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol, cast

from ag_ui.core import Interrupt, ResumeEntry, RunAgentInput

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
)
from dsh_user_interaction.durable import ASK_ID_KEY
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
    revised,
    with_capabilities,
)

from .._polling import Handles, poll_until
from ._interrupt import TOOL_CALL_ID_KEY
from ._provider import AgUiInterruptProvider, Resumed

__all__ = [
    "CAPABILITIES",
    "AgUiClient",
    "InterruptServer",
    "ToolCallAsks",
    "ag_ui_subject",
    "client_answer",
    "make_ag_ui_subject",
]

#: What an AG-UI client in front of the provider can do: the payload is our
#: answer itself, so every answer a form can hold is sent as it stands.
CAPABILITIES: Final = Capabilities(
    can_skip=True,
    can_dismiss=True,
    custom_on_single=True,
    custom_on_multi=True,
    revises=True,
    keeps_carriage_returns=True,
    concurrent=True,
    observes_screen=True,
)


class InterruptServer(Protocol):
    """What the subject needs of the provider under test (an ``AgUiInterruptProvider``)."""

    @property
    def pending(self) -> tuple[Interrupt, ...]:
        """The open interrupts, oldest first."""
        ...

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Open an interrupt for *request* and wait for the resume that ends it."""
        ...

    def resume(
        self, resume: RunAgentInput | Sequence[ResumeEntry | Mapping[str, Any]]
    ) -> list[Resumed]:
        """Deliver a run's resume entries to the waiting asks."""
        ...


class ToolCallAsks:
    """The agent side of an AG-UI server: each ``ask()`` is a tool call, asked through *inner*.

    *inner* is the provider under test (a fresh
    :class:`~dsh_user_interaction.extra.ag_ui.AgUiInterruptProvider` by
    default). Each ask gets the next tool call id, ``call-<n>``, as its
    ``askId`` and ``agUiToolCallId``; it raises whatever *inner* raises.
    """

    def __init__(self, inner: InterruptServer | None = None) -> None:
        self.inner: InterruptServer = inner if inner is not None else AgUiInterruptProvider()
        self._numbers = itertools.count(1)
        self._calls: list[tuple[AskUserQuestionRequest[Any], str]] = []

    def call_of(self, request: AskUserQuestionRequest[Any]) -> str | None:
        """The tool call id *request* is being asked under, while its ask runs; else ``None``."""
        return next((call for asked, call in self._calls if asked is request), None)

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Ask *request* as the tool call ``call-<n>``: *inner*'s answer, or its error."""
        call = f"call-{next(self._numbers)}"
        named: dict[str, Any] = dict(request)
        named[ASK_ID_KEY] = call
        named[TOOL_CALL_ID_KEY] = call
        held = (request, call)
        self._calls.append(held)
        try:
            return await self.inner.ask(cast("AskUserQuestionRequest[Any]", named))
        finally:
            self._calls.remove(held)


def client_answer(
    request: AskUserQuestionRequest[Any], behaviour: Sequence[Action]
) -> AskUserQuestionAnswer:
    """The answer a client's form holds after the human's *behaviour*: a resume's payload.

    Picked labels come in option order, as a form lists them; a revised
    question holds what its last step left.
    """
    items: list[AskUserQuestionAnswerItem] = []
    for question, action in zip(request["questions"], behaviour, strict=True):
        if isinstance(action, Revise):
            items.append(revised(question, action.steps))
            continue
        if isinstance(action, Skip):
            items.append({"id": question["id"], "selected": []})
            continue
        offered = [option["label"] for option in question.get("options", ())]
        labels: tuple[str, ...] = action.labels
        item: AskUserQuestionAnswerItem = {
            "id": question["id"],
            "selected": [label for label in offered if label in labels],
        }
        if isinstance(action, TypeText):
            item["custom"] = action.text
        items.append(item)
    return {"answers": items}


class AgUiClient:
    """Plays the human at an AG-UI client in front of :class:`ToolCallAsks`.

    It finds a request's interrupt by its tool call id, and answers it with a
    ``RunAgentInput`` whose ``resume`` holds one entry. *patience* bounds
    each wait for an interrupt to open.
    """

    def __init__(
        self,
        asks: ToolCallAsks,
        *,
        capabilities: Capabilities = CAPABILITIES,
        patience: float = 10.0,
    ) -> None:
        self.asks = asks
        self.capabilities = capabilities
        self.patience = patience
        self._calls: Handles[str] = Handles(asks.call_of)
        self._runs = itertools.count(1)

    def _open(self, call: str) -> bool:
        return any(interrupt.id == call for interrupt in self.asks.inner.pending)

    async def perform(self, request: AskUserQuestionRequest[Any], behaviour: Behaviour) -> None:
        """Wait until *request*'s interrupt is open, then resume it as *behaviour* says.

        ``Nothing`` only waits; a dismissal sends a ``cancelled`` entry;
        actions send a ``resolved`` entry whose payload is the form's
        answer. Raises :class:`TimeoutError` when the interrupt never opens,
        and the provider's :class:`~dsh_user_interaction.extra.ag_ui.ResumeError`
        when it refuses the resume.
        """

        def never() -> str:
            return f"no interrupt opened for the request within {self.patience:g} s"

        call = await self._calls.wait(request, self.patience, never, eager=50)
        await poll_until(lambda: self._open(call), self.patience, never, eager=50)
        if isinstance(behaviour, Nothing):
            return
        entry: dict[str, object]
        if isinstance(behaviour, Dismiss):
            entry = {"interruptId": call, "status": "cancelled"}
        else:
            payload = client_answer(request, behaviour)
            entry = {"interruptId": call, "status": "resolved", "payload": payload}
        run = RunAgentInput.model_validate(
            {
                "threadId": "thread-1",
                "runId": f"run-{next(self._runs)}",
                "state": {},
                "messages": [],
                "tools": [],
                "context": [],
                "forwardedProps": {},
                "resume": [entry],
            }
        )
        self.asks.inner.resume(run)

    async def is_shown(self, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether *request*'s interrupt is still open: a client would still show it."""
        call = self._calls.of(request)
        return call is not None and self._open(call)


async def make_ag_ui_subject(
    inner: InterruptServer | None = None, *, name: str = "ag-ui"
) -> Subject:
    """A subject whose provider asks through *inner* (a fresh ``AgUiInterruptProvider``).

    The test gallery passes a broken variant of the provider as *inner*.
    """
    asks = ToolCallAsks(inner)
    return Subject(provider=asks, driver=AgUiClient(asks), name=name)


@with_capabilities(CAPABILITIES)
async def ag_ui_subject() -> Subject:
    """A fresh AG-UI interrupt provider, each ask a tool call, its client the driver."""
    return await make_ag_ui_subject()
