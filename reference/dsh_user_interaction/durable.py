"""Durable asks: a store that outlives the process, several UIs, and the audit record.

This module only re-exports; the code lives in private modules, one concept
each. See the docs' "Durable asks" page and the spec's section 7.
"""

from ._sqlite_store import SQLiteStore as SQLiteStore
from ._store import ASK_ID_KEY as ASK_ID_KEY
from ._store import SETTLED_STATES as SETTLED_STATES
from ._store import AskRecord as AskRecord
from ._store import AskState as AskState
from ._store import AskStore as AskStore
from ._store import Outcome as Outcome
from ._store import Settlement as Settlement
from ._store import StoredRequest as StoredRequest
from ._store import decode_json as decode_json
from ._store import encode_json as encode_json
from ._store import stored_request as stored_request

__all__ = [
    "ASK_ID_KEY",
    "SETTLED_STATES",
    "AskRecord",
    "AskState",
    "AskStore",
    "Outcome",
    "SQLiteStore",
    "Settlement",
    "StoredRequest",
    "decode_json",
    "encode_json",
    "stored_request",
]
