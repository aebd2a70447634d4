"""Plan review (``exit_plan_mode``): the tool, the question, the verdict and the model's wording."""

from ._plan_review import EXIT_PLAN_MODE_TOOL as EXIT_PLAN_MODE_TOOL
from ._plan_review import PLAN_APPROVED as PLAN_APPROVED
from ._plan_review import PLAN_DISMISSED as PLAN_DISMISSED
from ._plan_review import PLAN_KEEP_PLANNING as PLAN_KEEP_PLANNING
from ._plan_review import PLAN_KEEP_PLANNING_WITH_FEEDBACK as PLAN_KEEP_PLANNING_WITH_FEEDBACK
from ._plan_review import PLAN_NEEDS_HEADING as PLAN_NEEDS_HEADING
from ._plan_review import PLAN_REVIEW_ID as PLAN_REVIEW_ID
from ._plan_review import PlanReviewVerdict as PlanReviewVerdict
from ._plan_review import exit_plan_mode as exit_plan_mode
from ._plan_review import has_plan_heading as has_plan_heading
from ._plan_review import plan_review_question as plan_review_question
from ._plan_review import plan_review_verdict as plan_review_verdict
from ._plan_review import review_plan as review_plan

__all__ = [
    "EXIT_PLAN_MODE_TOOL",
    "PLAN_APPROVED",
    "PLAN_DISMISSED",
    "PLAN_KEEP_PLANNING",
    "PLAN_KEEP_PLANNING_WITH_FEEDBACK",
    "PLAN_NEEDS_HEADING",
    "PLAN_REVIEW_ID",
    "PlanReviewVerdict",
    "exit_plan_mode",
    "has_plan_heading",
    "plan_review_question",
    "plan_review_verdict",
    "review_plan",
]
