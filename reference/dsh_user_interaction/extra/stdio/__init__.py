"""Implementations in other processes, over the JSON-lines protocol of ``spec/harness.md``.

This module only re-exports, and needs nothing beyond the standard library.
:class:`StdioProvider` runs a provider written in any language as a child
process; the conformance suite's ``--provider-cmd`` and ``--service-cmd``
drive children through the same connection.
"""

from ._provider import StdioProvider as StdioProvider
from ._session import KEPT_PROBLEMS as KEPT_PROBLEMS
from ._session import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._session import ChildFailed as ChildFailed
from ._values import UNDEFINED as UNDEFINED
from ._values import Opaque as Opaque
from ._values import RemoteError as RemoteError
from ._values import Undefined as Undefined
from ._values import WireError as WireError

__all__ = [
    "KEPT_PROBLEMS",
    "PROTOCOL_VERSION",
    "UNDEFINED",
    "ChildFailed",
    "Opaque",
    "RemoteError",
    "StdioProvider",
    "Undefined",
    "WireError",
]
