"""The store suite: an ask store's own rules, and the durable path built on it (``DUR-*``).

A state machine of agents and UIs judges the store (:mod:`._machine`, one
mixin per concern over :mod:`._example`), then the durable path's scenarios
(:mod:`._durable`, :mod:`._faults`) run the reference's provider, relays and
expiry on it (:mod:`._scenarios`); :mod:`._runner` runs both and reports.

Each name loads its module on first use, as the package's front module does:
the command line imports :mod:`._loop` on every run, and the checks only
when it runs the store suite.
"""

import importlib
import typing

if typing.TYPE_CHECKING:
    from ._durable import DURABLE_CHECKS as DURABLE_CHECKS
    from ._durable_subject import DurableDriver as DurableDriver
    from ._durable_subject import durable_subject as durable_subject
    from ._durable_subject import make_durable_subject as make_durable_subject
    from ._machine import STORE_CHECK as STORE_CHECK
    from ._machine import store_requirements as store_requirements
    from ._runner import STORE_CHECKS as STORE_CHECKS
    from ._runner import STORE_PROFILES as STORE_PROFILES
    from ._runner import StoreReport as StoreReport
    from ._runner import StoreRun as StoreRun
    from ._runner import run_store_suite as run_store_suite
    from ._runner import store_suite_requirements as store_suite_requirements
    from ._subject import StoreFactory as StoreFactory
    from ._subject import StoreSubject as StoreSubject
    from ._subject import sqlite_store_subject as sqlite_store_subject

__all__ = [
    "DURABLE_CHECKS",
    "STORE_CHECK",
    "STORE_CHECKS",
    "STORE_PROFILES",
    "DurableDriver",
    "StoreFactory",
    "StoreReport",
    "StoreRun",
    "StoreSubject",
    "durable_subject",
    "make_durable_subject",
    "run_store_suite",
    "sqlite_store_subject",
    "store_requirements",
    "store_suite_requirements",
]

#: The module of each name: the imports above, for the interpreter.
_MODULES = {
    "DURABLE_CHECKS": "_durable",
    "DurableDriver": "_durable_subject",
    "durable_subject": "_durable_subject",
    "make_durable_subject": "_durable_subject",
    "STORE_CHECK": "_machine",
    "store_requirements": "_machine",
    "STORE_CHECKS": "_runner",
    "STORE_PROFILES": "_runner",
    "StoreReport": "_runner",
    "StoreRun": "_runner",
    "run_store_suite": "_runner",
    "store_suite_requirements": "_runner",
    "StoreFactory": "_subject",
    "StoreSubject": "_subject",
    "sqlite_store_subject": "_subject",
}


if not typing.TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above.
    def __getattr__(name: str) -> object:
        module = _MODULES.get(name)
        if module is None:
            msg = f"module {__name__!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # the next lookup finds it without this function
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
