"""The MCP bridge's ledger of used request states in PostgreSQL, for workers on many machines.

``run_tool`` (``dsh_user_interaction.extra.mcp``) marks each request state's
nonce used in a ledger, so that a state is accepted once. Every worker, on
every machine, that opens :class:`PostgresLedger` on one database shares
it: marking a nonce is one ``INSERT ... ON CONFLICT DO NOTHING``, so of two
workers that get the same state at once exactly one wins. Its table,
``used_request_states``, lives in the store's schema (made on first use),
and a nonce is forgotten once its state has expired.
"""

from __future__ import annotations

import time
from typing import Final

from psycopg import sql

from ._store import DEFAULT_SCHEMA, open_connection

__all__ = ["PostgresLedger"]

_CREATE: Final = (
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    "CREATE TABLE IF NOT EXISTS {schema}.used_request_states"
    " (nonce text PRIMARY KEY, expires double precision NOT NULL)",
)


class PostgresLedger:
    """The nonces of used request states in the database of *conninfo*, schema *schema*.

    A :class:`~dsh_user_interaction.extra.mcp.StateLedger`: pass it as
    ``run_tool(..., ledger=PostgresLedger(conninfo))`` in every worker.
    Each use opens a connection of its own (one per round of a tool call).
    """

    def __init__(self, conninfo: str, *, schema: str = DEFAULT_SCHEMA) -> None:
        self._conninfo = conninfo
        self._schema = schema
        self._ready = False

    async def use(self, nonce: str, expires: float) -> bool:
        """Mark *nonce* used; ``False`` when any worker already had."""
        schema = sql.Identifier(self._schema)
        async with await open_connection(self._conninfo, "dsh-state-ledger") as db:
            if not self._ready:
                # IF NOT EXISTS may still race another worker's CREATE: one at a time.
                async with db.transaction():
                    await db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._schema,))
                    for statement in _CREATE:
                        await db.execute(sql.SQL(statement).format(schema=schema))
                self._ready = True
            await db.execute(
                sql.SQL("DELETE FROM {schema}.used_request_states WHERE expires < %s").format(
                    schema=schema
                ),
                (time.time(),),
            )
            added = await db.execute(
                sql.SQL(
                    "INSERT INTO {schema}.used_request_states (nonce, expires) VALUES (%s, %s)"
                    " ON CONFLICT (nonce) DO NOTHING RETURNING nonce"
                ).format(schema=schema),
                (nonce, expires),
            )
            return await added.fetchone() is not None
