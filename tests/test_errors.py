"""Error codes, fixed messages and serialisation (ERR-*)."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import MESSAGES, ErrorCode, HarnessError, UserInteractionError, Violation

ORIGINAL_MESSAGES = {
    "ASK_ABORTED": "ask_user_question was aborted before the user answered",
    "EMPTY_QUESTIONS": "ask_user_question requires at least one question",
    "NO_PROVIDER": "no user-interaction provider is registered",
    "DUPLICATE_PROVIDER": "a user-interaction provider is already registered",
    "ASK_CANCELLED": "the user cancelled ask_user_question",
    "PROVIDER_DISPOSED": "the user-interaction provider was disposed before the user answered",
}
#: The successor package's messages for its caller gate's codes.
SUCCESSOR_MESSAGES = {
    "CALLER_NOT_LIVE": (
        "human interaction requires the exact live calling agent when an agent is supplied"
    ),
    "DELEGATED_CALLER": (
        "human interaction is unavailable while the calling agent is owned by another live"
        " agent; include the unresolved question or decision in the child agent's final result"
    ),
}


def test_codes_are_the_spec_codes_and_equal_their_names() -> None:
    """ERR-CODE-1: the twelve codes, each a string equal to its name."""
    assert {code.value for code in ErrorCode} == {
        "EMPTY_QUESTIONS", "BAD_INTENT", "NO_PROVIDER", "DUPLICATE_PROVIDER", "ASK_ABORTED",
        "ASK_CANCELLED", "BAD_REQUEST", "BAD_ANSWER", "PROVIDER_DISPOSED",
        "CALLER_NOT_LIVE", "DELEGATED_CALLER", "STORE_FAILED",
    }  # fmt: skip
    for code in ErrorCode:
        assert code == code.name
        assert isinstance(code, str)


def test_fixed_messages_are_byte_for_byte() -> None:
    """ERR-MSG-1: the messages a model sees match the original (and its successor) exactly."""
    assert {code.value: message for code, message in MESSAGES.items()} == {
        **ORIGINAL_MESSAGES,
        **SUCCESSOR_MESSAGES,
    }


def test_error_is_a_harness_error_constructed_like_the_original() -> None:
    """``UserInteractionError(message, code)``; ``str()`` is the message."""
    error = UserInteractionError("boom", "BAD_REQUEST")
    assert isinstance(error, HarnessError)
    assert isinstance(error, Exception)
    assert error.code is ErrorCode.BAD_REQUEST
    assert str(error) == "boom"
    assert error.answer is None
    assert error.violations == ()
    assert repr(error) == "UserInteractionError('boom', 'BAD_REQUEST')"


@given(
    message=st.text(),
    code=st.sampled_from(ErrorCode),
    answer=st.none()
    | st.recursive(
        st.text() | st.integers(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)
    ),
)
def test_errors_survive_pickle(message: str, code: ErrorCode, answer: object) -> None:
    """ERR-PICKLE-1: message, code, answer and violations survive a pickle round trip."""
    violation = Violation("ANS-SEL-3", "MUST", "q", "not an option")
    error = UserInteractionError(message, code, answer=answer, violations=[violation])
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is UserInteractionError
    assert (str(copy), copy.code, copy.answer, copy.violations) == (
        message,
        code,
        answer,
        (violation,),
    )


@given(message=st.text(), code=st.text())
def test_harness_errors_survive_pickle(message: str, code: str) -> None:
    """A plain HarnessError keeps its message and free-form code."""
    copy = pickle.loads(pickle.dumps(HarnessError(message, code)))
    assert (str(copy), copy.code) == (message, code)
