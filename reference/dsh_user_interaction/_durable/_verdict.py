"""What the store made of a UI's outcome: the verdict a relay gives a provider that asks for it.

A provider served through a relay (:func:`~dsh_user_interaction.durable.serve`)
returns its human's answer to the relay, which writes it to the store; the
store may take it, or keep an outcome another UI wrote first. A UI that tells
its human "answered" when its provider returns would be wrong both times the
write does not win (``DUR-ACK-1``). So a provider may implement
:class:`VerdictAware`: the relay then hands it, before each ask, a future
that gets the store's :class:`Verdict` on the outcome the provider gives for
that ask, and the UI says "answered" only on a ``saved`` verdict.

This is opt-in and outside the seam's contract: a provider without the
method, or registered directly with an agent's service (no relay, no
store), is never called, and its ``ask()`` is what it always was.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from .._types import AskUserQuestionRequest
from ._store import Outcome
from ._withdrawn import EndedHow, ended_how

__all__ = ["Verdict", "VerdictAware", "VerdictState"]

#: ``saved``: the provider's outcome is the ask's, written. ``lost``: another
#: outcome was written first. ``unsaved``: nothing was written for it (the
#: relay stopped first, or the store refused it for good); the ask is still
#: pending in the store.
VerdictState: TypeAlias = Literal["saved", "lost", "unsaved"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The store's verdict on the outcome a provider gave for one ask.

    >>> verdict = Verdict("call-1", "lost", Outcome.answered({"answers": []}, principal="ana"))
    >>> verdict.saved, verdict.how
    (False, 'answered')
    """

    #: The ask's id in the store.
    ask_id: str
    #: What became of the provider's outcome.
    state: VerdictState
    #: The ask's outcome as the store keeps it. The provider's own when
    #: ``saved``, the one that won when ``lost``, and ``None`` when ``unsaved``.
    outcome: Outcome | None = None
    #: Why the outcome is ``unsaved``, in words for the human; else ``None``.
    reason: str | None = None
    #: For an ``expired`` outcome: whether the ask's deadline ended it.
    timed_out: bool = False

    @property
    def saved(self) -> bool:
        """Whether the provider's outcome is the ask's outcome, written."""
        return self.state == "saved"

    @property
    def how(self) -> EndedHow | None:
        """How the ask ended, in the words every surface uses; ``None`` when ``unsaved``."""
        return None if self.outcome is None else ended_how(self.outcome, timed_out=self.timed_out)


@runtime_checkable
class VerdictAware(Protocol):
    """A provider that learns the store's verdict on each outcome it gives through a relay.

    Before the relay asks *request* (the very object the provider's ``ask``
    then receives), it calls :meth:`expect_verdict` with a future. The relay
    resolves it exactly once: with a :class:`Verdict` once the store has
    decided on the outcome the provider gave (an answer, or ``ASK_CANCELLED``),
    and keeps trying through store errors until it has (``DUR-KEEP-1``); it
    cancels the future when the provider gave no outcome (the ask was
    withdrawn first, or the provider failed). The method must return at once
    and never raise.
    """

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        """Remember that *request*'s outcome will get *verdict*; called before its ``ask``."""
        ...
