"""The subject under test, the driver Protocol that simulates its human, and the reference pair."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from dsh_user_interaction import (
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionProvider,
    UserInteractionService,
)

from ._behaviour import Behaviour, Dismiss, Nothing, Skip, Type
from ._capabilities import Capabilities

__all__ = [
    "Driver",
    "ScriptedDriver",
    "ServiceFactory",
    "Subject",
    "SubjectFactory",
    "reference_service",
    "reference_subject",
]


class Driver(Protocol):
    """Acts as the human in front of one UI. You write one for your provider.

    Every method may wait; the suite bounds every wait, so a driver that never
    returns fails a check instead of hanging the run.
    """

    #: What the UI can do; the suite generates only these actions.
    capabilities: Capabilities

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Wait until *request* is on screen, then do *behaviour*.

        *behaviour* is a tuple with one action per question (``Pick``,
        ``Type``, ``Skip``), or ``Dismiss()`` for the whole batch, or
        ``Nothing()``, which only waits until the request is shown.
        """
        ...

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether any question of *request* is on screen now.

        Drivers without ``observes_screen`` may return ``False``.
        """
        ...


@dataclass
class Subject:
    """A provider under test, with the driver that plays its human."""

    provider: UserInteractionProvider
    driver: Driver
    #: A name for reports.
    name: str = field(default="subject")


#: Builds a fresh subject; the suite calls it once per generated example.
SubjectFactory = Callable[[], Subject]
#: Builds a fresh service (anything with ``register_provider`` and ``ask``).
ServiceFactory = Callable[[], UserInteractionService]


class ScriptedDriver:
    """The driver of :class:`~dsh_user_interaction.ScriptedProvider`: code plays the human."""

    def __init__(
        self, provider: ScriptedProvider, capabilities: Capabilities | None = None
    ) -> None:
        self.provider = provider
        self.capabilities = capabilities or Capabilities()

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Find the pending ask for *request* and settle it as *behaviour* says."""
        pending = await self.provider.wait_for(lambda p: p.request is request)
        if isinstance(behaviour, Nothing):
            return
        if isinstance(behaviour, Dismiss):
            pending.dismiss()
            return
        items: list[AskUserQuestionAnswerItem] = []
        for question, action in zip(request["questions"], behaviour, strict=True):
            offered = [option["label"] for option in question.get("options", ())]
            if isinstance(action, Skip):
                items.append({"id": question["id"], "selected": []})
                continue
            # A UI lists picked labels as it shows them: in option order.
            picked = [label for label in offered if label in action.labels]
            item: AskUserQuestionAnswerItem = {"id": question["id"], "selected": picked}
            if isinstance(action, Type):
                item["custom"] = action.text
            items.append(item)
        pending.answer({"answers": items})

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether *request* is still pending."""
        return any(p.request is request for p in self.provider.pending)


def reference_subject() -> Subject:
    """A fresh :class:`~dsh_user_interaction.ScriptedProvider` with its driver."""
    provider = ScriptedProvider()
    return Subject(provider=provider, driver=ScriptedDriver(provider), name="reference")


def reference_service() -> UserInteractionService:
    """A fresh strict :class:`~dsh_user_interaction.UserInteractionService`."""
    return UserInteractionService()
