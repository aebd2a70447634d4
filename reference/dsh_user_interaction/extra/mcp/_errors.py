"""The errors the MCP bridge adds to the seam's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from dsh_user_interaction import ErrorCode, UserInteractionError, Violation

__all__ = ["ElicitationCancelled", "ElicitationUnsupported"]

#: What the client answered instead of a form: the user refused, or dismissed it.
EndAction = Literal["decline", "cancel"]


class ElicitationCancelled(UserInteractionError):
    """``ASK_CANCELLED`` because the MCP client answered ``decline`` or ``cancel``.

    Raised by :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`
    when the user refused the form (``decline``) or dismissed it without
    choosing (``cancel``). The message is the spec's, ``the user cancelled
    ask_user_question``, for both; :attr:`action` says which one it was, and
    :attr:`reason` holds the reason a client gave in the result's ``_meta``
    (``dsh-user-interaction/reason``), if any. It is a
    :class:`~dsh_user_interaction.UserInteractionError`, so callers that
    branch on the code need nothing new.

    >>> import pickle
    >>> error = ElicitationCancelled.of_action("decline", reason="no forms here")
    >>> again = pickle.loads(pickle.dumps(error))
    >>> again.code, again.action, again.reason
    (<ErrorCode.ASK_CANCELLED: 'ASK_CANCELLED'>, 'decline', 'no forms here')
    >>> str(again)
    'the user cancelled ask_user_question'

    """

    #: ``"decline"``: the user refused; ``"cancel"``: the user dismissed the form.
    action: EndAction
    #: The reason the client gave, when it gave one.
    reason: str | None

    def __init__(
        self,
        message: str,
        code: ErrorCode | str = ErrorCode.ASK_CANCELLED,
        *,
        action: EndAction = "cancel",
        reason: str | None = None,
        answer: object | None = None,
        violations: Sequence[Violation] = (),
    ) -> None:
        super().__init__(message, code, answer=answer, violations=violations)
        self.action = action
        self.reason = reason

    @classmethod
    def of_action(cls, action: EndAction, *, reason: str | None = None) -> ElicitationCancelled:
        """The ``ASK_CANCELLED`` error for a client's *action*, with the spec's message."""
        error = cls.of(ErrorCode.ASK_CANCELLED)
        assert isinstance(error, ElicitationCancelled)
        error.action = action
        error.reason = reason
        return error


class ElicitationUnsupported(UserInteractionError, RuntimeError):
    """``NO_PROVIDER``: the MCP client cannot be asked (no form elicitation, or no back-channel).

    Raised by :meth:`~dsh_user_interaction.extra.mcp.McpElicitationProvider.ask`
    at once, before any request is sent, so the tool call fails fast instead
    of waiting for a human who will never see the question. It is a
    :class:`~dsh_user_interaction.UserInteractionError` with the code
    ``NO_PROVIDER`` (nobody is there to ask, as when no provider is
    registered), so ``except UserInteractionError`` catches it; it is still a
    ``RuntimeError``, as it was before. The message says why, and the
    model-facing tool reports it as ``Error: <message>``.

    >>> import pickle
    >>> error = pickle.loads(pickle.dumps(ElicitationUnsupported("no elicitation")))
    >>> error.code, str(error), isinstance(error, RuntimeError)
    (<ErrorCode.NO_PROVIDER: 'NO_PROVIDER'>, 'no elicitation', True)
    """

    def __init__(
        self,
        message: str,
        code: ErrorCode | str = ErrorCode.NO_PROVIDER,
        *,
        answer: object | None = None,
        violations: Sequence[Violation] = (),
    ) -> None:
        super().__init__(message, code, answer=answer, violations=violations)
