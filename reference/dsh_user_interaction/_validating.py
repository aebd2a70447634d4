"""A provider wrapper that checks both directions of the interface at runtime.

In the spirit of :mod:`wsgiref.validate`: put it between a service and a
provider under development, and every request the provider receives and every
answer it returns is checked against the spec.
"""

from __future__ import annotations

import copy
from typing import final

from ._checks import bad_answer, check_request, must_violations
from ._errors import ErrorCode, UserInteractionError
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider

__all__ = ["ValidatingProvider"]


def _snapshot(request: AskUserQuestionRequest) -> object:
    # The signal is live state, not request data; compare everything else.
    return copy.deepcopy({key: value for key, value in request.items() if key != "signal"})


@final
class ValidatingProvider:
    """Wrap *provider* so that both sides of every ask are checked.

    * The request it receives must pass :func:`check_request`; a bad one
      raises that error before the provider sees it.
    * The provider must not mutate the request (``PRV-MUTATE-1``).
    * The answer must keep every ``MUST`` answer rule; a bad one raises
      ``BAD_ANSWER`` with the raw answer on the error.

    >>> import asyncio
    >>> from dsh_user_interaction import ScriptedProvider, answer_of, answer_selected
    >>> from dsh_user_interaction import UserInteractionError
    >>> sloppy = ScriptedProvider(respond=lambda request: answer_of(answer_selected("go", "yes")))
    >>> request = {"questions": [{"id": "go", "question": "Go?", "options": [{"label": "Yes"}]}]}
    >>> try:
    ...     asyncio.run(ValidatingProvider(sloppy).ask(request))
    ... except UserInteractionError as error:
    ...     print(error.code, error.violations[0].requirement, error.answer)
    BAD_ANSWER ANS-SEL-3 {'answers': [{'id': 'go', 'selected': ['yes']}]}
    """

    __slots__ = ("_provider",)

    def __init__(self, provider: UserInteractionProvider) -> None:
        self._provider = provider

    @property
    def provider(self) -> UserInteractionProvider:
        """The wrapped provider."""
        return self._provider

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Check *request*, ask the wrapped provider, and check its answer."""
        check_request(request)
        before = _snapshot(request)
        answer = await self._provider.ask(request)
        if _snapshot(request) != before:
            msg = "the provider mutated the request it was given (PRV-MUTATE-1)"
            raise UserInteractionError(msg, ErrorCode.BAD_ANSWER, answer=answer)
        violations = must_violations(request, answer)
        if violations:
            raise bad_answer(answer, violations)
        return answer

    def __repr__(self) -> str:
        return f"ValidatingProvider({self._provider!r})"
