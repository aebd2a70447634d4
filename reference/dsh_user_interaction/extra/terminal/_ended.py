"""How the terminal words an ask that left the screen, and what the store made of an answer.

An ask leaves the screen when the human answers or dismisses it, and also
when it ends elsewhere or the agent stops it. The human is told which, in a
line of its own (``DUR-TELL-1``): shown under the status line while other
asks are on screen, and written to the terminal when it is left, so it stays
in the scrollback. Served through a relay, an answer is "saved" only once
the store has it (``DUR-ACK-1``). Each line starts ``[ask #N]``, never
``ask #N |``, so it is never mistaken for a status line.

>>> ended_line(3, "answered", principal="bo", via="phone")
'[ask #3] answered elsewhere by bo on phone'
>>> ended_line(3, "timed_out")
'[ask #3] time ran out'
"""

from __future__ import annotations

from typing import Final

from dsh_user_interaction._deadline import is_timeout
from dsh_user_interaction._durable._verdict import Verdict
from dsh_user_interaction._durable._withdrawn import Withdrawn

from ._visible import visible

__all__ = ["ended_line", "sending_line", "verdict_line", "withdrawn_line"]

_WORDS: Final = {
    "answered": "answered elsewhere",
    "dismissed": "dismissed elsewhere",
    "withdrawn": "withdrawn by the agent",
    "timed_out": "time ran out",
    "defaulted": "time ran out; the defaults were used",
    "expired": "expired: no agent came back for it",
}


def _where(principal: str | None, via: str | None) -> str:
    text = ""
    if principal is not None:
        text += f" by {visible(principal)}"
    if via is not None:
        text += f" on {visible(via)}"
    return text


def ended_line(
    number: int, how: str, *, principal: str | None = None, via: str | None = None
) -> str:
    """The line for ask *number* that ended *how*, one of the ``EndedHow`` words."""
    words = _WORDS.get(how, "no longer pending")
    if how in {"answered", "dismissed"}:
        words += _where(principal, via)
    return f"[ask #{number}] {words}"


def withdrawn_line(number: int, reason: object) -> str:
    """The line for ask *number*, whose request signal aborted with *reason*."""
    if isinstance(reason, Withdrawn):
        outcome = reason.outcome
        return ended_line(number, reason.how, principal=outcome.principal, via=outcome.via)
    return ended_line(number, "timed_out" if is_timeout(reason) else "withdrawn")


def sending_line(number: int, *, dismissed: bool) -> str:
    """The line for ask *number*, answered (or dismissed) here, while the store has not said."""
    what = "dismissal" if dismissed else "answer"
    return f"[ask #{number}] sending your {what}; not saved yet"


def verdict_line(number: int, verdict: Verdict, *, dismissed: bool) -> str:
    """The line for ask *number* once the store's *verdict* on this terminal's outcome is in."""
    if verdict.saved:
        return f"[ask #{number}] {'dismissed' if dismissed else 'answered'} here; saved"
    outcome = verdict.outcome
    if outcome is not None:
        first = ended_line(
            number, verdict.how or "answered", principal=outcome.principal, via=outcome.via
        )
        return f"{first}, first: yours was NOT saved"
    reason = verdict.reason or "the store did not take it"
    return f"[ask #{number}] NOT saved: {reason}; the question stays pending"
