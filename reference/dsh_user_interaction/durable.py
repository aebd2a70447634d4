"""Durable asks: a store that outlives the process, several UIs, and the audit record.

This module only re-exports; the code lives in private modules, one concept
each. An agent registers a :class:`DurableProvider` on an :class:`AskStore`
(:class:`SQLiteStore` here; ``dsh_user_interaction.extra.postgres`` for
several machines); UIs in any process show the store's asks through
:func:`serve` (a :class:`VerdictAware` provider learns the store's
:class:`Verdict` on each answer it gives); :class:`FanOutProvider` shows one
ask on several UIs of one process. See the docs' "Durable asks" page and the spec's section 7.
"""

from ._durable._agent import DurableProvider as DurableProvider
from ._durable._agent import ask_id_of as ask_id_of
from ._durable._agent import with_ask_id as with_ask_id
from ._durable._fan_out import FanOutProvider as FanOutProvider
from ._durable._relay import RETRY_FIRST as RETRY_FIRST
from ._durable._relay import RETRY_MAX as RETRY_MAX
from ._durable._relay import ErrorHandler as ErrorHandler
from ._durable._relay import Principal as Principal
from ._durable._relay import serve as serve
from ._durable._sqlite_store import SQLiteStore as SQLiteStore
from ._durable._store import ASK_ID_KEY as ASK_ID_KEY
from ._durable._store import SETTLED_STATES as SETTLED_STATES
from ._durable._store import AskRecord as AskRecord
from ._durable._store import AskState as AskState
from ._durable._store import AskStore as AskStore
from ._durable._store import Outcome as Outcome
from ._durable._store import Settlement as Settlement
from ._durable._store import StoredRequest as StoredRequest
from ._durable._store import decode_json as decode_json
from ._durable._store import encode_json as encode_json
from ._durable._store import stored_request as stored_request
from ._durable._upkeep import expire as expire
from ._durable._upkeep import export_jsonl as export_jsonl
from ._durable._upkeep import maintain as maintain
from ._durable._verdict import Verdict as Verdict
from ._durable._verdict import VerdictAware as VerdictAware
from ._durable._verdict import VerdictState as VerdictState
from ._durable._withdrawn import EndedHow as EndedHow
from ._durable._withdrawn import LostAnswer as LostAnswer
from ._durable._withdrawn import UnsavedAnswer as UnsavedAnswer
from ._durable._withdrawn import Withdrawn as Withdrawn
from ._durable._withdrawn import describe_outcome as describe_outcome
from ._durable._withdrawn import ended_how as ended_how

__all__ = [
    "ASK_ID_KEY",
    "RETRY_FIRST",
    "RETRY_MAX",
    "SETTLED_STATES",
    "AskRecord",
    "AskState",
    "AskStore",
    "DurableProvider",
    "EndedHow",
    "ErrorHandler",
    "FanOutProvider",
    "LostAnswer",
    "Outcome",
    "Principal",
    "SQLiteStore",
    "Settlement",
    "StoredRequest",
    "UnsavedAnswer",
    "Verdict",
    "VerdictAware",
    "VerdictState",
    "Withdrawn",
    "ask_id_of",
    "decode_json",
    "describe_outcome",
    "encode_json",
    "ended_how",
    "expire",
    "export_jsonl",
    "maintain",
    "serve",
    "stored_request",
    "with_ask_id",
]
