"""The store suite's state machine: agents and UIs sharing one store's data.

Design notes (the rules the checks keep):

Rule 1: several stores on the same data, one model of the truth. Each
example opens two or three stores on a fresh subject (as several
processes or machines would), then plays agents that put asks and UIs
that settle them, through stores drawn at random, and judges every call
against :class:`~._model.Truth`. The calls run one at a time, so
"as soon as the call returned" is the order of the steps: right after a
put or a settlement, another store reads it back, and the newest change
number lists it alone. The two races (two settlements, or two puts, of
one ask at once) run on one loop, interleaved one step at a time in an
order the example draws (:func:`~._loop.interleaved`), so that a seed
replays a race as it ran, whatever the threads' timing. Every
example that did not fail ends with a restart (every store closed, the
data opened again), which must lose nothing.

Rule 2: every failure names a requirement of the spec's section 7
(:data:`STORE_REQUIREMENTS`). A call that raises, or returns something
that is not the truth, fails the requirement of what it shows;
:func:`~._model.blame` tells an outcome that was overwritten, text
that did not round-trip, and a change number apart. A call that raises
on text holding NUL or a lone surrogate fails ``DUR-STORE-3``: a store
keeps any text.

Rule 3: every call is bounded (:mod:`._loop`), by the run's bound,
five seconds unless told. A call that takes longer fails its requirement
and ends the example unshrunk, since every further try would wait again.
A watcher gets the same bound to show the last change; the verdict is a
missed, repeated or misordered change, or one not shown within the
bound, never how long the machine took.

Rule 4: every example cleans up after itself, whatever happened: each
store it opened is closed, the subject's data is cleaned away, and its
loop is stopped (or, when the store holds it, abandoned).

The machine is one class made of one mixin per concern, each in a module of
its own over :class:`~._example.StoreExample` (the example's state, verdicts
and bounded calls): the draws (:mod:`._draws`), the reads (:mod:`._reads`),
puts and settlements (:mod:`._writes`), races (:mod:`._races`), watches
(:mod:`._watches`), the audit record (:mod:`._audit`) and restarts
(:mod:`._restarts`). Hypothesis orders a machine's rules by their names and
arguments, whichever class defines them, so a seed draws the same examples
whatever module a rule lives in: keep the rules' names and their draws.
"""

from __future__ import annotations

from typing import Final

from .._registry import Requirement, requirements
from ._audit import Audit
from ._races import Races
from ._restarts import Restarts
from ._watches import Watches

__all__ = ["STORE_CHECK", "STORE_REQUIREMENTS", "StoreMachine", "store_requirements"]

#: The name reports give the store suite's one check.
STORE_CHECK: Final = "store-machine"

#: The requirements the state machine judges, the store's own rules (spec section 7).
STORE_REQUIREMENTS: Final = (
    "DUR-STORE-1",
    "DUR-ONCE-1",
    "DUR-STORE-2",
    "DUR-STORE-3",
    "DUR-STORE-4",
    "DUR-STORE-5",
    "DUR-WATCH-1",
    "DUR-REOPEN-1",
    "DUR-AUDIT-1",
)


def store_requirements() -> dict[str, Requirement]:
    """The state machine's requirements, as the spec words them, in the spec's order."""
    spec = requirements()
    return {rid: spec[rid] for rid in spec if rid in STORE_REQUIREMENTS}


class StoreMachine(Races, Watches, Audit, Restarts):
    """Agents and UIs sharing one store's data, judged against the truth at every step."""

    def teardown(self) -> None:
        """End with a restart (nothing may be lost), then close every store and clean up.

        The restart is left out when a failure is ending the example already.
        """
        try:
            if not (self.failing or self.dead or self.loop.stuck) and self.handles:
                self._line("(the example ends: a restart)")
                self._step(lambda: self._reopen(list(range(len(self.handles))), every=True))
                if len(self.truth.settled()) > 1 and self._going():
                    # The audit record's order shows only with two settlements or more.
                    self._step(lambda: self._records(0, None))
        finally:
            self._clean_up()
