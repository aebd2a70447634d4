"""An ask store in PostgreSQL: ``pip install 'dsh-user-interaction[postgres]'``.

This module only re-exports. :class:`PostgresStore` keeps durable asks in
a PostgreSQL database, shared by every process and machine that opens it:
the first settlement of an ask wins everywhere, and a watcher hears of each
change through ``LISTEN``/``NOTIFY`` within milliseconds.
:class:`PostgresLedger` is the MCP bridge's ledger of used request states,
shared the same way.
"""

try:
    import psycopg as _psycopg
except ImportError as _missing:  # the extra is not installed
    _msg = (
        f"dsh_user_interaction.extra.postgres needs {_missing.name}: "
        "pip install 'dsh-user-interaction[postgres]'"
    )
    raise ImportError(_msg, name=_missing.name) from _missing

from ._ledger import PostgresLedger as PostgresLedger
from ._store import DEFAULT_SCHEMA as DEFAULT_SCHEMA
from ._store import PostgresStore as PostgresStore

__all__ = ["DEFAULT_SCHEMA", "PostgresLedger", "PostgresStore"]

del _psycopg
