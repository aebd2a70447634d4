"""Errors with stable codes.

Callers branch on :attr:`UserInteractionError.code`, never on message text.
The messages that the spec fixes (and that a model sees through the tool) are
kept byte for byte in :data:`MESSAGES`.

``asyncio.CancelledError`` is a ``BaseException`` and is never turned into one
of these errors: cancellation always passes through untouched.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final

from typing_extensions import override

from ._violations import Violation

__all__ = ["MESSAGES", "TIMED_OUT_MESSAGE", "ErrorCode", "HarnessError", "UserInteractionError"]


class ErrorCode(enum.StrEnum):
    """The stable codes a :class:`UserInteractionError` carries.

    The values equal the names, and equal the codes of the original package, so
    a code crosses a process or language boundary as a plain string.
    """

    #: The request has no questions. Raised by ``ask()`` at stage 2, after the
    #: pre-abort check and before any structural check (``SVC-ORDER-2``).
    EMPTY_QUESTIONS = "EMPTY_QUESTIONS"
    #: A question declares an ``intent`` whose ``approve`` label names none of
    #: its options, or which lacks the ``detail`` it reviews. Raised by
    #: ``ask()`` at stage 4, only for requests that are structurally sound.
    BAD_INTENT = "BAD_INTENT"
    #: ``ask()`` passed every request check but no provider is registered.
    #: This is the last check, so a bad request never reports it.
    NO_PROVIDER = "NO_PROVIDER"
    #: ``register_provider()`` was called while a provider is active. Raised at
    #: once (not from a coroutine), for the same provider object too.
    DUPLICATE_PROVIDER = "DUPLICATE_PROVIDER"
    #: The request's signal was aborted, before ``ask()`` (stage 1, nothing is
    #: shown) or while the provider was pending. Distinct from
    #: ``ASK_CANCELLED``: the *program* gave up, not the human.
    ASK_ABORTED = "ASK_ABORTED"
    #: The human dismissed the whole batch. Raised by providers, never by the
    #: service. Distinct from a skip, which answers one question with nothing.
    ASK_CANCELLED = "ASK_CANCELLED"
    #: The request is structurally malformed (a wrong type, an empty or
    #: duplicated id, duplicated option labels). Stage 3 of ``ask()``; the
    #: message names the question and the field.
    BAD_REQUEST = "BAD_REQUEST"
    #: A provider returned an answer that breaks the answer rules. Raised by a
    #: strict service or a ``ValidatingProvider``; the raw answer stays on the
    #: error as :attr:`UserInteractionError.answer`.
    BAD_ANSWER = "BAD_ANSWER"
    #: The provider's registration was disposed while the ask was pending.
    #: Distinct from ``ASK_ABORTED`` (the caller's signal) and
    #: ``ASK_CANCELLED`` (the human).
    PROVIDER_DISPOSED = "PROVIDER_DISPOSED"
    #: A caller gate (``GATE-1``) found that the calling agent is not the live
    #: agent it claims to be: a stale agent, or one no registry knows. Raised
    #: by ``ask()`` after ``EMPTY_QUESTIONS`` and before ``BAD_REQUEST``, only
    #: by a service configured with a gate. The successor package's code.
    CALLER_NOT_LIVE = "CALLER_NOT_LIVE"
    #: A caller gate found that the calling agent is live but owned by another
    #: agent (a delegated child), which has no human to ask. Raised at the same
    #: stage as ``CALLER_NOT_LIVE``; the message tells the child to put its
    #: question in its final result. The successor package's code.
    DELEGATED_CALLER = "DELEGATED_CALLER"
    #: The store of a durable ask failed, because its database could not be
    #: opened, read or written (disk full, read-only, locked beyond its wait,
    #: server out of reach, a corrupt file, a missing directory, a layout of a
    #: newer or an unknown version). Raised by the stores of section 7 and by ``ask()``
    #: through a durable provider, never by the service itself; the message
    #: names the cause in plain words and the database's own error is kept
    #: as ``__cause__``. Distinct from ``ASK_ABORTED``: nothing ended the ask;
    #: its outcome is not known here, and it stays pending in the store for
    #: whoever can reach it (``DUR-FAIL-1``). Not a code of the original.
    STORE_FAILED = "STORE_FAILED"


#: The fixed messages, byte for byte as in the original where it has them.
MESSAGES: Final[dict[ErrorCode, str]] = {
    ErrorCode.ASK_ABORTED: "ask_user_question was aborted before the user answered",
    ErrorCode.EMPTY_QUESTIONS: "ask_user_question requires at least one question",
    ErrorCode.NO_PROVIDER: "no user-interaction provider is registered",
    ErrorCode.DUPLICATE_PROVIDER: "a user-interaction provider is already registered",
    ErrorCode.ASK_CANCELLED: "the user cancelled ask_user_question",
    ErrorCode.PROVIDER_DISPOSED: (
        "the user-interaction provider was disposed before the user answered"
    ),
    # The successor package's messages, byte for byte.
    ErrorCode.CALLER_NOT_LIVE: (
        "human interaction requires the exact live calling agent when an agent is supplied"
    ),
    ErrorCode.DELEGATED_CALLER: (
        "human interaction is unavailable while the calling agent is owned by another live"
        " agent; include the unresolved question or decision in the child agent's final result"
    ),
}

#: The message of an ``ASK_ABORTED`` whose signal's reason is a timeout, or
#: whose request's ``deadline`` passed (``POL-TIMEOUT-1``). The code stays
#: ``ASK_ABORTED`` so that code branching on it keeps working; the words tell a
#: model that the human did not answer in time, not that the program stopped.
TIMED_OUT_MESSAGE: Final = (
    "ask_user_question timed out before the user answered; do not assume an answer"
)


class HarnessError(Exception):
    """An error of the agent harness, constructed as ``HarnessError(message, code)``.

    ``str(error)`` is the message; ``error.code`` is the code.

    >>> error = HarnessError("disk full", "IO")
    >>> str(error), error.code
    ('disk full', 'IO')
    """

    message: str

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self._code = code

    @property
    def code(self) -> str:
        """The error's code, the contract callers branch on."""
        return self._code

    @override
    def __str__(self) -> str:
        return self.message

    @override
    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, {str(self.code)!r})"

    @override
    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.code), self.__dict__)


class UserInteractionError(HarnessError):
    """An error of the user-interaction seam, with an :class:`ErrorCode`.

    Constructed like the original, as ``UserInteractionError(message, code)``.
    A ``BAD_ANSWER`` error also carries the provider's raw ``answer`` and the
    ``violations`` found in it, so the human's input is never lost.

    >>> error = UserInteractionError.of(ErrorCode.NO_PROVIDER)
    >>> error.code is ErrorCode.NO_PROVIDER
    True
    >>> str(error)
    'no user-interaction provider is registered'
    >>> import pickle
    >>> pickle.loads(pickle.dumps(error)).code
    <ErrorCode.NO_PROVIDER: 'NO_PROVIDER'>
    """

    #: The raw answer a provider returned, when the error rejects or outlives it.
    answer: object | None
    #: The answer-rule violations behind a ``BAD_ANSWER``; empty otherwise.
    violations: tuple[Violation, ...]
    #: Whether this ``ASK_ABORTED`` is a timeout: the signal's reason was a
    #: :class:`TimeoutError`, or the request's ``deadline`` passed. Its message
    #: is then :data:`TIMED_OUT_MESSAGE`.
    timed_out: bool
    #: Whether this timed-out ``ASK_ABORTED`` is a provider's word that the
    #: request's ``deadline`` passed by a clock the service cannot see (an
    #: ask carried across MCP rounds): a service answers it as its own
    #: deadline, with the request's defaults where every question has one
    #: and the error keeps no answer (``POL-DEFAULT-1``).
    deadline_passed: bool

    def __init__(
        self,
        message: str,
        code: ErrorCode | str,
        *,
        answer: object | None = None,
        violations: Sequence[Violation] = (),
    ) -> None:
        super().__init__(message, ErrorCode(code))
        self._error_code = ErrorCode(code)
        self.answer = answer
        self.violations = tuple(violations)
        self.timed_out = False
        self.deadline_passed = False

    @property
    @override
    def code(self) -> ErrorCode:
        """The :class:`ErrorCode`; branch on this, never on the message."""
        return self._error_code

    @classmethod
    def of(cls, code: ErrorCode, *, answer: object | None = None) -> UserInteractionError:
        """Build the error for *code* with its fixed message.

        The message comes from :data:`~dsh_user_interaction.MESSAGES`.
        """
        return cls(MESSAGES[code], code, answer=answer)

    @classmethod
    def timed_out_error(
        cls, *, answer: object | None = None, deadline_passed: bool = False
    ) -> UserInteractionError:
        """The ``ASK_ABORTED`` of an ask whose time ran out (``POL-TIMEOUT-1``).

        *deadline_passed*: a provider's word that it was the request's
        ``deadline`` that passed (:attr:`deadline_passed`).

        >>> error = UserInteractionError.timed_out_error()
        >>> error.code, error.timed_out, error.deadline_passed
        (<ErrorCode.ASK_ABORTED: 'ASK_ABORTED'>, True, False)
        >>> print(error)
        ask_user_question timed out before the user answered; do not assume an answer
        """
        error = cls(TIMED_OUT_MESSAGE, ErrorCode.ASK_ABORTED, answer=answer)
        error.timed_out = True
        error.deadline_passed = deadline_passed
        return error
