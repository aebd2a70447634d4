"""The user-interaction seam: one UI provider, an async ``ask()``, and its rules.

This module only re-exports; the code lives in private modules, one concept
each. ``dsh_user_interaction.tool`` and ``dsh_user_interaction.plan_review``
hold the model-facing side.
"""

from ._abort import AbortController as AbortController
from ._abort import AbortError as AbortError
from ._abort import AbortSignal as AbortSignal
from ._builders import answer_custom as answer_custom
from ._builders import answer_of as answer_of
from ._builders import answer_selected as answer_selected
from ._builders import answer_skipped as answer_skipped
from ._builders import option_of as option_of
from ._builders import question_of as question_of
from ._checks import RequestViolation as RequestViolation
from ._checks import Violation as Violation
from ._checks import answer_violations as answer_violations
from ._checks import check_request as check_request
from ._checks import is_blank as is_blank
from ._checks import request_violations as request_violations
from ._deadline import countdown_text as countdown_text
from ._deadline import deadline_of as deadline_of
from ._deadline import default_answer as default_answer
from ._deadline import default_text as default_text
from ._deadline import is_timeout as is_timeout
from ._errors import MESSAGES as MESSAGES
from ._errors import TIMED_OUT_MESSAGE as TIMED_OUT_MESSAGE
from ._errors import ErrorCode as ErrorCode
from ._errors import HarnessError as HarnessError
from ._errors import UserInteractionError as UserInteractionError
from ._gate import CallerGate as CallerGate
from ._gate import CallerVerdict as CallerVerdict
from ._gate import LiveAgents as LiveAgents
from ._observers import AskEvent as AskEvent
from ._observers import AskObserver as AskObserver
from ._observers import AskOutcome as AskOutcome
from ._scripted import PendingAsk as PendingAsk
from ._scripted import Responder as Responder
from ._scripted import ScriptedProvider as ScriptedProvider
from ._service import Registration as Registration
from ._service import UserInteractionService as UserInteractionService
from ._types import AskingService as AskingService
from ._types import AskUserQuestionAnswer as AskUserQuestionAnswer
from ._types import AskUserQuestionAnswerItem as AskUserQuestionAnswerItem
from ._types import AskUserQuestionIntent as AskUserQuestionIntent
from ._types import AskUserQuestionItem as AskUserQuestionItem
from ._types import AskUserQuestionOption as AskUserQuestionOption
from ._types import AskUserQuestionRequest as AskUserQuestionRequest
from ._types import DefaultAnswer as DefaultAnswer
from ._types import PlanReviewIntent as PlanReviewIntent
from ._types import ProviderRegistration as ProviderRegistration
from ._types import UserInteractionProvider as UserInteractionProvider
from ._types import UserInteractionSeam as UserInteractionSeam
from ._validating import ValidatingProvider as ValidatingProvider
from ._version import SPEC_VERSION as SPEC_VERSION
from ._version import __version__ as __version__

__all__ = [
    "MESSAGES",
    "SPEC_VERSION",
    "TIMED_OUT_MESSAGE",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AskEvent",
    "AskObserver",
    "AskOutcome",
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "AskingService",
    "CallerGate",
    "CallerVerdict",
    "DefaultAnswer",
    "ErrorCode",
    "HarnessError",
    "LiveAgents",
    "PendingAsk",
    "PlanReviewIntent",
    "ProviderRegistration",
    "Registration",
    "RequestViolation",
    "Responder",
    "ScriptedProvider",
    "UserInteractionError",
    "UserInteractionProvider",
    "UserInteractionSeam",
    "UserInteractionService",
    "ValidatingProvider",
    "Violation",
    "__version__",
    "answer_custom",
    "answer_of",
    "answer_selected",
    "answer_skipped",
    "answer_violations",
    "check_request",
    "countdown_text",
    "deadline_of",
    "default_answer",
    "default_text",
    "is_blank",
    "is_timeout",
    "option_of",
    "question_of",
    "request_violations",
]
