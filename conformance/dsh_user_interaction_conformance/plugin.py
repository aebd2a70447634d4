"""The pytest plugin: run the conformance checks inside your own test suite.

Installed with the package (entry point ``pytest11``). Define the factory of
what you want checked as a fixture in your ``conftest.py``, and one test that
asks for ``dsh_conformance_check``:

.. code-block:: python

    import pytest
    from dsh_user_interaction_conformance import Subject

    @pytest.fixture
    def dsh_user_interaction_subject():
        return my_subject_factory  # a zero-argument callable returning a Subject

    @pytest.fixture
    def dsh_user_interaction_service():
        return MyService  # a zero-argument callable returning a service

    def test_conformance(dsh_conformance_check):
        dsh_conformance_check()

The test is parametrized with one case per check. Provider checks need the
``dsh_user_interaction_subject`` fixture, service checks the
``dsh_user_interaction_service`` fixture; a check whose fixture you did not
define is skipped with a message saying so. The binding's own checks always
run. A case fails exactly when the command line would exit 1 for that check:
a MUST requirement failed, or no example judged it.

Options: ``--dsh-profile`` (example counts), ``--dsh-seed`` (the seed; each
failure prints the command line that reproduces it) and ``--dsh-bound``.

The store suite runs the same way, one case per store check, from a test
that asks for ``dsh_store_check``. The factory of subjects comes from a
``dsh_user_interaction_store`` fixture, or else from ``--dsh-store
MODULE:ATTR`` (``--dsh-store sqlite`` for the embedded SQLite store); with
neither, the cases are skipped. ``--dsh-store-bound`` is the seconds any
call on a store may take (5 by default):

.. code-block:: python

    @pytest.fixture
    def dsh_user_interaction_store():
        return my_store_subject  # a zero-argument callable returning a StoreSubject

    def test_store_conformance(dsh_store_check):
        dsh_store_check()
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any, cast

import pytest

from ._engine import CHECKS, PROFILES, SetupError
from ._runner import RequirementResult, run_suite
from ._store import STORE_CHECKS, StoreFactory, run_store_suite, sqlite_store_subject
from ._subject import UsageError, load_factory

__all__ = [
    "dsh_conformance_check",
    "dsh_store_check",
    "pytest_addoption",
    "pytest_generate_tests",
]

_FIXTURES = {"provider": "dsh_user_interaction_subject", "service": "dsh_user_interaction_service"}


def _bound(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--dsh-profile``, ``--dsh-seed``, ``--dsh-bound``, ``--dsh-store`` and its bound."""
    group = parser.getgroup("dsh-user-interaction", "dsh-user-interaction conformance")
    group.addoption(
        "--dsh-profile",
        choices=sorted(PROFILES),
        default="default",
        help="conformance profile (example counts)",
    )
    group.addoption("--dsh-seed", type=int, default=None, help="conformance seed")
    group.addoption(
        "--dsh-bound",
        type=_bound,
        default=1.0,
        help="seconds a subject may take to settle after an abort or an answer",
    )
    group.addoption(
        "--dsh-store",
        default=None,
        metavar="MODULE:ATTR",
        help="the store suite's factory of subjects, when no dsh_user_interaction_store "
        "fixture gives one ('sqlite': the embedded SQLite store)",
    )
    group.addoption(
        "--dsh-store-bound",
        type=_bound,
        default=5.0,
        help="seconds any call on a store may take in the store suite",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Give every test that asks for ``dsh_conformance_check`` one case per check."""
    if "dsh_conformance_check" in metafunc.fixturenames:
        names = [check.name for check in CHECKS]
        metafunc.parametrize("dsh_conformance_check_name", names, ids=names)
    if "dsh_store_check" in metafunc.fixturenames:
        stores = list(STORE_CHECKS)
        metafunc.parametrize("dsh_store_check_name", stores, ids=stores)


@pytest.fixture
def dsh_conformance_check(
    request: pytest.FixtureRequest, dsh_conformance_check_name: str
) -> Callable[[], None]:
    """A callable that runs one check against your fixtures and fails with its report."""
    (check,) = [c for c in CHECKS if c.name == dsh_conformance_check_name]
    factories: dict[str, Any] = {}
    if check.kind in _FIXTURES:
        fixture = _FIXTURES[check.kind]
        try:
            factories[check.kind] = request.getfixturevalue(fixture)
        except pytest.FixtureLookupError:
            pytest.skip(f"define the {fixture} fixture to run the {check.kind} check {check.name}")
    config = request.config
    profile = str(config.getoption("--dsh-profile"))
    seed: int | None = config.getoption("--dsh-seed")
    bound = float(str(config.getoption("--dsh-bound")))
    if seed is None and not os.environ.get("CI"):
        seed = int.from_bytes(os.urandom(4), "big")

    def run() -> None:
        try:
            report = run_suite(
                subject_factory=factories.get("provider"),
                service_factory=factories.get("service"),
                only=[check.name],
                kinds=[check.kind],
                profile=profile,
                seed=seed,
                bound=bound,
            )
        except SetupError as error:
            pytest.fail(f"set-up error: {error}", pytrace=False)
        _fail_on([*report.results, *report.binding], request, seed, profile)

    return run


def _fail_on(
    results: list[RequirementResult],
    request: pytest.FixtureRequest,
    seed: int | None,
    profile: str,
    extra: str = "",
) -> None:
    """Fail the test with each result that fails the run, and how to reproduce it."""
    bad = [r for r in results if r.fails_run]
    if not bad:
        return
    lines: list[str] = []
    for result in bad:
        lines.append(
            f"{result.status.upper()}: {result.requirement.id} "
            f"({result.requirement.level}): {result.message}"
        )
        lines.append(f"    spec: {result.requirement.sentence}")
        lines.extend(f"    {line}" for block in result.example for line in block.splitlines())
    pinned = f" --dsh-seed {seed}" if seed is not None else " (with CI set: derandomised)"
    # Some pytest versions type FixtureRequest.node loosely.
    node = str(cast("Any", request).node.nodeid)
    lines.append(f"reproduce: pytest '{node}'{pinned} --dsh-profile {profile}{extra}")
    pytest.fail("\n".join(lines), pytrace=False)


def _store_factory(request: pytest.FixtureRequest) -> Callable[[], object] | None:
    """The store suite's factory: the fixture's, else ``--dsh-store``'s, else ``None``."""
    try:
        made: object = request.getfixturevalue("dsh_user_interaction_store")
    except pytest.FixtureLookupError:
        named = request.config.getoption("--dsh-store")
        if named is None:
            return None
        if named == "sqlite":
            return sqlite_store_subject
        try:
            return load_factory(str(named), "--dsh-store")
        except UsageError as error:
            pytest.fail(str(error), pytrace=False)
    if not callable(made):
        pytest.fail(
            f"the dsh_user_interaction_store fixture gave {type(made).__name__}, not a "
            "factory of store subjects",
            pytrace=False,
        )
    return cast("Callable[[], object]", made)


@pytest.fixture
def dsh_store_check(
    request: pytest.FixtureRequest, dsh_store_check_name: str
) -> Callable[[], None]:
    """A callable that runs one check of the store suite and fails with its report."""
    factory = _store_factory(request)
    if factory is None:
        pytest.skip(
            f"define the dsh_user_interaction_store fixture, or pass --dsh-store, to run "
            f"the store check {dsh_store_check_name}"
        )
    config = request.config
    profile = str(config.getoption("--dsh-profile"))
    seed: int | None = config.getoption("--dsh-seed")
    bound = float(str(config.getoption("--dsh-store-bound")))
    if seed is None and not os.environ.get("CI"):
        seed = int.from_bytes(os.urandom(4), "big")
    named = config.getoption("--dsh-store")
    extra = f" --dsh-store {named}" if named is not None else ""

    def run() -> None:
        try:
            report = run_store_suite(
                cast("StoreFactory", factory),
                only=[dsh_store_check_name],
                profile=profile,
                seed=seed,
                bound=bound,
            )
        except SetupError as error:
            pytest.fail(f"set-up error: {error}", pytrace=False)
        _fail_on(report.results, request, seed, profile, extra)

    return run
