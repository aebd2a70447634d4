"""The wire types of the seam, and the provider Protocol.

Keys are camelCase exactly as on the wire, so a request or an answer crosses to
a TypeScript provider unchanged. ``Required`` and ``NotRequired`` are explicit
on every key, so the JSON Schemas in ``spec/schema`` and Hypothesis's
``from_type`` agree with these types (a test keeps them in step).
"""

# Note: no ``from __future__ import annotations`` here. TypedDict reads
# Required and NotRequired when the class is created, so they must be real.
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Generic, Literal, NotRequired, Protocol, Required, TypeAlias

# typing_extensions' TypedDict, so that pydantic can validate these types on
# Python 3.11 too (it refuses typing.TypedDict before 3.12); its TypeVar, for
# the PEP 696 default.
from typing_extensions import ReadOnly, TypedDict, TypeVar

from ._abort import AbortSignal

__all__ = [
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "AskingService",
    "DefaultAnswer",
    "PlanReviewIntent",
    "ProviderRegistration",
    "UserInteractionProvider",
    "UserInteractionSeam",
]


class AskUserQuestionOption(TypedDict):
    """One choice offered for a question."""

    #: What the human picks, and what the answer echoes back, exactly.
    #: Non-empty, and unique within its question.
    label: Required[ReadOnly[str]]
    #: One sentence on the trade-off or impact of this choice.
    description: NotRequired[ReadOnly[str]]


class PlanReviewIntent(TypedDict):
    """Marks a question as the review of a plan, so a UI may show a plan card."""

    #: The kind of review; the only kind the spec defines.
    kind: Required[ReadOnly[Literal["plan-review"]]]
    #: The option label that means "approved"; it must be one of the labels.
    approve: Required[ReadOnly[str]]


#: Every intent kind the spec defines. Unknown kinds still pass the generic
#: intent checks (``INT-APPROVE-1``, ``INT-DETAIL-1``).
AskUserQuestionIntent: TypeAlias = PlanReviewIntent


class DefaultAnswer(TypedDict):
    """A question's default: what its answer item would hold, without the id."""

    #: Option labels, exactly as offered, as in an answer item.
    selected: Required[ReadOnly[Sequence[str]]]
    #: Free text, as in an answer item.
    custom: NotRequired[ReadOnly[str]]


class AskUserQuestionItem(TypedDict):
    """One question in a batch."""

    #: Stable id, echoed in the answer. Non-empty and unique in the batch.
    id: Required[ReadOnly[str]]
    #: The question the human reads. Non-empty.
    question: Required[ReadOnly[str]]
    #: Long-form material under review (for example a plan, in Markdown).
    #: Required, and non-empty, when ``intent`` is present.
    detail: NotRequired[ReadOnly[str]]
    #: A short tag such as "Confirm" or "Choose Mode".
    header: NotRequired[ReadOnly[str]]
    #: The choices. Absent or empty means the question takes custom text only.
    options: NotRequired[ReadOnly[Sequence[AskUserQuestionOption]]]
    #: Whether several labels may be selected. Absent means ``False``.
    multiSelect: NotRequired[ReadOnly[bool]]
    #: What the question is for, so a UI can specialise its presentation.
    intent: NotRequired[ReadOnly[AskUserQuestionIntent]]
    #: The answer used when the request's ``deadline`` passes, if every
    #: question has one (``REQ-DEFAULT-1``, ``REQ-DEFAULT-2``). Set by the
    #: application, never by a model; UIs show it while the deadline runs.
    default: NotRequired[ReadOnly[DefaultAnswer]]


#: The type of a request's ``agent``: whatever the caller's agent is; ``object``
#: when not given.
AgentT_co = TypeVar("AgentT_co", default=object, covariant=True)


class AskUserQuestionRequest(TypedDict, Generic[AgentT_co]):
    """What ``ask()`` receives, and what the provider receives unchanged.

    ``AskUserQuestionRequest[MyAgent]`` types the agent; a plain
    ``AskUserQuestionRequest`` takes any agent.
    """

    #: The batch, in the order the human sees it. At least one question.
    questions: Required[ReadOnly[Sequence[AskUserQuestionItem]]]
    #: The calling agent itself, any object (the original passes its ``Agent``).
    #: The seam passes it through untouched; a UI may show it, for example by
    #: its ``name`` attribute or ``str()``. Read-only, so that a request typed
    #: with a caller's own agent type is a plain request too.
    agent: NotRequired[ReadOnly[AgentT_co]]
    #: Aborts the ask; see :class:`~dsh_user_interaction.AbortSignal`.
    signal: NotRequired[ReadOnly[AbortSignal]]
    #: When the wait ends, in seconds since the Unix epoch (``time.time()``):
    #: the ask then resolves with its defaults or times out
    #: (``REQ-DEADLINE-1``, ``POL-DEADLINE-1``). UIs show the time left.
    deadline: NotRequired[ReadOnly[float]]


class AskUserQuestionAnswerItem(TypedDict):
    """The human's answer to one question.

    ``{id, selected: []}`` with no ``custom`` is a skipped question.
    """

    #: The question's id.
    id: Required[str]
    #: Picked option labels, exactly as offered, without duplicates.
    #: Single-select: at most one, and none when ``custom`` is present.
    selected: Required[list[str]]
    #: Free text; at least one non-whitespace character when present.
    custom: NotRequired[str]


class AskUserQuestionAnswer(TypedDict):
    """The human's answers: one item per question, in question order."""

    #: One item per question, in question order, with the same ids.
    answers: Required[list[AskUserQuestionAnswerItem]]
    #: Present, and ``True``, only on the answer a service made of the
    #: questions' defaults when the deadline passed (``POL-DEFAULT-2``): not
    #: the human's. A provider never returns it (``ANS-KEYS-1``).
    defaulted: NotRequired[bool]


class UserInteractionProvider(Protocol):
    """A UI that shows questions to a human and returns the answer.

    Exactly one provider is registered with a service at a time.
    """

    async def ask(self, request: "AskUserQuestionRequest[Any]") -> "AskUserQuestionAnswer":
        """Show *request* to the human and return their answer.

        Obligations (see the spec's ``PRV-*`` and ``ANS-*`` requirements):

        * Return an answer that keeps the answer rules: one item per question,
          in order, with the same ids; only offered labels; and so on.
        * Never mutate *request*.
        * When ``request["signal"]`` aborts, stop showing the questions and
          raise ``UserInteractionError`` with ``ASK_ABORTED``.
        * When the human dismisses the whole batch, raise
          ``UserInteractionError`` with ``ASK_CANCELLED``.
        * When cancelled, clean up and let ``CancelledError`` propagate.
        """
        ...


class AskingService(Protocol):
    """Anything with an async ``ask``: what the tools need of a service.

    :class:`~dsh_user_interaction.UserInteractionService` is one; so is any
    object with a compatible ``ask`` coroutine method.
    """

    async def ask(self, request: "AskUserQuestionRequest[Any]", /) -> "AskUserQuestionAnswer":
        """Ask; see :meth:`~dsh_user_interaction.UserInteractionService.ask`."""
        ...


class ProviderRegistration(Protocol):
    """What ``register_provider`` returns: a disposer, also a context manager.

    Calling it, calling ``dispose()`` or leaving its ``with`` block
    unregisters the provider (``SVC-REG-1``); a second disposal does nothing.
    """

    def __call__(self) -> None:
        """Unregister the provider."""
        ...

    def dispose(self) -> None:
        """Unregister the provider."""
        ...

    def __enter__(self) -> object: ...

    def __exit__(
        self,
        exc_type: "type[BaseException] | None",
        exc_value: "BaseException | None",
        traceback: "TracebackType | None",
        /,
    ) -> object: ...


class UserInteractionSeam(AskingService, Protocol):
    """The structural type of a service: ``register_provider`` and ``ask``.

    :class:`~dsh_user_interaction.UserInteractionService` is one; a
    third-party service typed only by this protocol type-checks wherever the
    package takes a service (``run_suite``, the tools).
    """

    def register_provider(self, provider: UserInteractionProvider, /) -> ProviderRegistration:
        """Register *provider*; raise ``DUPLICATE_PROVIDER`` while one is registered."""
        ...
