"""The harness suite: subjects and services in another process, in any language.

A child speaks ``spec/harness.md`` over its standard streams
(:mod:`._subjects`); ``python -m dsh_user_interaction_conformance.child``
serves one of this package's subjects that way.
"""

from ._subjects import HarnessServices as HarnessServices
from ._subjects import HarnessSubjects as HarnessSubjects

__all__ = ["HarnessServices", "HarnessSubjects"]
