"""How a UI learns that its ask ended elsewhere, and how a losing answer is kept.

When several UIs show one ask (a :class:`~dsh_user_interaction.durable.FanOutProvider`,
or several relays on one store), the first outcome wins. Every other UI's
request signal then aborts with a :class:`Withdrawn` reason that says how the
ask ended and where, so the UI can tell its human ("answered on the web page
by ana") instead of a bare abort. An answer that arrives after another outcome
won is not dropped silently: it is reported as a :class:`LostAnswer`.
"""

from __future__ import annotations

from .._types import AskUserQuestionAnswer
from ._store import Outcome

__all__ = ["LostAnswer", "Withdrawn", "describe_outcome"]

_VERBS = {
    "answered": "was answered",
    "cancelled": "was dismissed",
    "aborted": "was aborted by the asking program",
    "expired": "expired",
}


def describe_outcome(outcome: Outcome) -> str:
    """A sentence on how an ask ended and where, for a human.

    >>> describe_outcome(Outcome.answered({"answers": []}, principal="ana", via="web"))
    'the question was answered on web by ana'
    """
    text = f"the question {_VERBS[outcome.state]}"
    if outcome.via is not None:
        text += f" on {outcome.via}"
    if outcome.principal is not None:
        text += f" by {outcome.principal}"
    return text


class Withdrawn(Exception):
    """The abort reason of a UI whose ask ended elsewhere; :attr:`outcome` says how.

    >>> reason = Withdrawn(Outcome.cancelled(via="terminal"), ask_id="call-1")
    >>> str(reason), reason.ask_id
    ('the question was dismissed on terminal', 'call-1')
    """

    def __init__(self, outcome: Outcome, *, ask_id: str | None = None) -> None:
        super().__init__(describe_outcome(outcome))
        #: How, where and by whom the ask ended.
        self.outcome = outcome
        #: The ask's id, when it has one.
        self.ask_id = ask_id


class LostAnswer(Exception):
    """An answer given after another outcome had won: reported, never dropped silently."""

    def __init__(
        self, answer: AskUserQuestionAnswer, winner: Outcome, *, ask_id: str | None = None
    ) -> None:
        super().__init__(f"an answer came after {describe_outcome(winner)}: {answer!r}")
        #: The answer that came too late.
        self.answer = answer
        #: The outcome that had won.
        self.winner = winner
        #: The ask's id, when it has one.
        self.ask_id = ask_id
