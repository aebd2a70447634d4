"""The error of a resume this package refuses, and the ``RUN_ERROR`` event that reports it.

A refused resume changes nothing: every interrupt it named stays as it was
(open, or ended with its first outcome), so a corrected resume can follow.
Callers branch on :attr:`ResumeError.code`, never on the message; the message
names the resume entry and the field at fault.
"""

from __future__ import annotations

import enum

from ag_ui.core import RunErrorEvent

__all__ = ["ResumeError", "ResumeErrorCode", "run_error_of"]


class ResumeErrorCode(enum.StrEnum):
    """Why a resume was refused; the value is the ``RUN_ERROR`` event's ``code``."""

    #: A resume entry (or the resume list itself) is not the protocol's shape:
    #: not a list, an entry without ``interruptId``, a ``status`` that is neither
    #: ``resolved`` nor ``cancelled``.
    MALFORMED_RESUME = "MALFORMED_RESUME"
    #: A resume entry names an interrupt this provider never raised.
    UNKNOWN_INTERRUPT = "UNKNOWN_INTERRUPT"
    #: One resume names the same interrupt twice.
    DUPLICATE_INTERRUPT = "DUPLICATE_INTERRUPT"
    #: The resume leaves out an open interrupt that a run ended with, where
    #: every such interrupt is answered at once, in one resume.
    MISSING_INTERRUPT = "MISSING_INTERRUPT"
    #: The interrupt's ``expiresAt`` has passed: its ask timed out or took its
    #: defaults, and no answer can reach it any more.
    INTERRUPT_EXPIRED = "INTERRUPT_EXPIRED"
    #: The interrupt's ask already ended otherwise (answered by an earlier,
    #: different resume, dismissed, aborted, or its provider disposed); its
    #: outcome is unchanged. The same resume sent again is no error.
    INTERRUPT_ENDED = "INTERRUPT_ENDED"
    #: A ``resolved`` entry's ``payload`` is not an answer to the interrupt's
    #: questions (the message names the field and the rule it breaks).
    BAD_PAYLOAD = "BAD_PAYLOAD"


class ResumeError(ValueError):
    """A resume refused as a whole; nothing it carried was delivered.

    ``str(error)`` says which entry and which field, and why; :attr:`code`
    says what kind of problem it is; :attr:`interrupt_id` names the interrupt,
    when the problem is one interrupt's.
    """

    #: What kind of problem it is.
    code: ResumeErrorCode
    #: The interrupt at fault, when there is one.
    interrupt_id: str | None

    def __init__(
        self, message: str, code: ResumeErrorCode, *, interrupt_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.interrupt_id = interrupt_id


def run_error_of(error: ResumeError) -> RunErrorEvent:
    """The ``RUN_ERROR`` event that ends a run whose resume was refused.

    >>> error = ResumeError("resume[0]: no such interrupt", ResumeErrorCode.UNKNOWN_INTERRUPT)
    >>> event = run_error_of(error)
    >>> event.code, event.message
    ('UNKNOWN_INTERRUPT', 'resume[0]: no such interrupt')
    """
    return RunErrorEvent(message=str(error), code=str(error.code))
