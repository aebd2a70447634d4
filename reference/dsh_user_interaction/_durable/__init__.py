"""The durable path: asks kept in a store that outlives the process.

Private; the public names are re-exported by :mod:`dsh_user_interaction.durable`.
One concept a module:

* ``_store``: the store contract (:class:`AskStore`), the record and the JSON
  encoding every store shares;
* ``_sqlite_store``: the embedded SQLite store;
* ``_agent``: the agent's side, :class:`DurableProvider`;
* ``_relay``: the UI's side, :func:`serve`;
* ``_fan_out``: one ask on several UIs of one process;
* ``_withdrawn``: how an ask ended, as told to the surfaces that lost it;
* ``_verdict``: the store's verdict on a UI's outcome, for a provider that asks;
* ``_upkeep``: expiry, export and maintenance;
* ``_serve_command``: ``python -m dsh_user_interaction serve``.

The store contract, which every module here relies on (spec section 7):

1. ``put`` is put-if-absent: an ask id names one ask forever.
2. ``settle`` is compare-and-set from ``pending``: of every outcome offered
   for an ask, exactly one is written, and every caller learns which.
3. A settled record never changes again; only ``purge`` removes it.
4. Every change is visible to every process on the store, through ``changes``
   or a fresh ``get``.
"""
