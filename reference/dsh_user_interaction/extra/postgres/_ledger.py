"""The MCP bridge's ledger of used request states in PostgreSQL, for workers on many machines.

``run_tool`` (``dsh_user_interaction.extra.mcp``) marks each request state's
nonce used in a ledger, so that a state is accepted once. Every worker, on
every machine, that opens :class:`PostgresLedger` on one database shares
it: marking a nonce is one ``INSERT ... ON CONFLICT DO NOTHING``, so of two
workers that get the same state at once exactly one wins. Its table,
``used_request_states``, lives in the store's schema.

* The table is made on first use, unless it is there: a worker whose role
  may only read and write it (no ``CREATE`` on the database) opens it. It
  is made under the store's own advisory lock, so a store and a ledger
  starting together on a new schema do not race to create it.
* A nonce is forgotten ``FORGET_AFTER`` (600) seconds after its state has
  expired, not at once: the expiry is read on the clock of the worker that
  issued the state, and the forgetting done on the clock of whichever worker
  marks the next nonce. A worker whose clock runs ahead would otherwise
  forget a state another still accepts, and let it be used again. Clocks
  that differ by less than this are safe.
"""

from __future__ import annotations

import time
from typing import Final

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from ._store import DEFAULT_SCHEMA, SCHEMA_LOCK_CLASS, open_connection

__all__ = ["FORGET_AFTER", "PostgresLedger"]

#: Seconds after its state expired that a nonce is forgotten: the clock skew tolerated.
FORGET_AFTER: Final = 600.0

_CREATE: Final = (
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    "CREATE TABLE IF NOT EXISTS {schema}.used_request_states"
    " (nonce text PRIMARY KEY, expires double precision NOT NULL)",
)
_EXISTS: Final = (
    "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = 'used_request_states'"
)


async def _create_table(db: psycopg.AsyncConnection[TupleRow], schema: str) -> None:
    """Make the ledger's table unless it is there, under the store's lock for *schema*."""
    if await (await db.execute(_EXISTS, (schema,))).fetchone() is not None:
        return
    async with db.transaction():
        # The lock the store takes to make its tables: one schema maker at a time.
        await db.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (SCHEMA_LOCK_CLASS, schema)
        )
        for statement in _CREATE:
            await db.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))


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
                await _create_table(db, self._schema)
                self._ready = True
            await db.execute(
                sql.SQL("DELETE FROM {schema}.used_request_states WHERE expires < %s").format(
                    schema=schema
                ),
                (time.time() - FORGET_AFTER,),
            )
            added = await db.execute(
                sql.SQL(
                    "INSERT INTO {schema}.used_request_states (nonce, expires) VALUES (%s, %s)"
                    " ON CONFLICT (nonce) DO NOTHING RETURNING nonce"
                ).format(schema=schema),
                (nonce, expires),
            )
            return await added.fetchone() is not None
