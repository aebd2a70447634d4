"""How a UI learns that its ask ended elsewhere, and how a losing answer is kept.

When several UIs show one ask (a :class:`~dsh_user_interaction.durable.FanOutProvider`,
or several relays on one store), the first outcome wins. Every other UI's
request signal then aborts with a :class:`Withdrawn` reason that says how the
ask ended and where, so the UI can tell its human ("answered on the web page
by ana") instead of a bare abort. An answer that arrives after another outcome
won is not dropped silently: it is reported as a :class:`LostAnswer`; one
that a relay could not write before it stopped is reported (and logged) as an
:class:`UnsavedAnswer`.

The ways an ask ends, as every surface words them (:data:`EndedHow`,
``DUR-TELL-1``): ``answered`` and ``dismissed`` (by a human, here or
elsewhere: the outcome's principal and ``via`` say who and where),
``withdrawn`` (the asking program aborted it), ``timed_out`` (its deadline
passed without defaults), ``defaulted`` (its deadline passed and the
defaults answered it), ``expired`` (no agent came back for it in time).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._types import AskUserQuestionAnswer
from ._store import Outcome

__all__ = ["EndedHow", "LostAnswer", "UnsavedAnswer", "Withdrawn", "describe_outcome", "ended_how"]

#: How an ask ended, in the words every surface uses (``DUR-TELL-1``).
EndedHow: TypeAlias = Literal[
    "answered", "dismissed", "withdrawn", "timed_out", "defaulted", "expired"
]

_PHRASES: dict[EndedHow, str] = {
    "answered": "was answered",
    "dismissed": "was dismissed",
    "withdrawn": "was withdrawn by the asking program",
    "timed_out": "timed out",
    "defaulted": "timed out, and its defaults were used",
    "expired": "expired: no agent came back for it",
}


def ended_how(outcome: Outcome, *, timed_out: bool = False) -> EndedHow:
    """How *outcome* reads to a human: one of the ``EndedHow`` words.

    *timed_out* says that an ``expired`` ask had a deadline, which is what
    ended it (``DUR-DEADLINE-1``); without it, ``expired`` is the expiry
    policy's.

    >>> ended_how(Outcome.answered({"answers": [], "defaulted": True}))
    'defaulted'
    >>> ended_how(Outcome.expired(), timed_out=True), ended_how(Outcome.aborted())
    ('timed_out', 'withdrawn')
    """
    if outcome.state == "answered":
        answer = outcome.answer
        return "defaulted" if answer is not None and answer.get("defaulted") is True else "answered"
    if outcome.state == "cancelled":
        return "dismissed"
    if outcome.state == "aborted":
        return "withdrawn"
    return "timed_out" if timed_out else "expired"


def describe_outcome(outcome: Outcome, *, timed_out: bool = False) -> str:
    """A sentence on how an ask ended and where, for a human.

    >>> describe_outcome(Outcome.answered({"answers": []}, principal="ana", via="web"))
    'the question was answered on web by ana'
    >>> describe_outcome(Outcome.expired(via="agent"), timed_out=True)
    'the question timed out on agent'
    """
    text = f"the question {_PHRASES[ended_how(outcome, timed_out=timed_out)]}"
    if outcome.via is not None:
        text += f" on {outcome.via}"
    if outcome.principal is not None:
        text += f" by {outcome.principal}"
    return text


class Withdrawn(Exception):
    """The abort reason of a UI whose ask ended elsewhere; :attr:`outcome` says how.

    >>> reason = Withdrawn(Outcome.cancelled(via="terminal"), ask_id="call-1")
    >>> str(reason), reason.ask_id, reason.how
    ('the question was dismissed on terminal', 'call-1', 'dismissed')
    """

    def __init__(
        self, outcome: Outcome, *, ask_id: str | None = None, timed_out: bool = False
    ) -> None:
        super().__init__(describe_outcome(outcome, timed_out=timed_out))
        #: How, where and by whom the ask ended.
        self.outcome = outcome
        #: The ask's id, when it has one.
        self.ask_id = ask_id
        #: How it ended, in the words every surface uses (:func:`ended_how`).
        self.how: EndedHow = ended_how(outcome, timed_out=timed_out)


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


class UnsavedAnswer(Exception):
    """An outcome a relay collected but could not write before it stopped (``DUR-KEEP-1``).

    The ask stays pending in the store, for the next relay; the outcome is
    on :attr:`outcome` (its answer, for an answer), and the relay logs it.
    """

    def __init__(self, outcome: Outcome, *, ask_id: str, cause: BaseException | None) -> None:
        kept = outcome.answer if outcome.answer is not None else outcome.state
        because = f" (the last store error: {cause!r})" if cause is not None else ""
        super().__init__(f"ask {ask_id!r}: the relay stopped before it saved {kept!r}{because}")
        #: The outcome that was not written.
        self.outcome = outcome
        #: The ask's id.
        self.ask_id = ask_id
        #: The last error the store raised on writing it, if any.
        self.cause = cause
