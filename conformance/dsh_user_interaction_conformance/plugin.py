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
define is skipped with a message saying so. ``--dsh-profile`` sets the profile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ._engine import CHECKS, PROFILES
from ._runner import run_suite

__all__ = ["dsh_conformance_check", "pytest_addoption", "pytest_generate_tests"]

_FIXTURES = {"provider": "dsh_user_interaction_subject", "service": "dsh_user_interaction_service"}


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--dsh-profile``."""
    parser.addoption(
        "--dsh-profile",
        choices=sorted(PROFILES),
        default="default",
        help="dsh-user-interaction conformance profile (example counts)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Give every test that asks for ``dsh_conformance_check`` one case per check."""
    if "dsh_conformance_check" in metafunc.fixturenames:
        names = [check.name for check in CHECKS]
        metafunc.parametrize("dsh_conformance_check_name", names, ids=names)


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
    profile = str(request.config.getoption("--dsh-profile"))

    def run() -> None:
        report = run_suite(
            subject_factory=factories.get("provider"),
            service_factory=factories.get("service"),
            only=[check.name],
            kinds=[check.kind],
            profile=profile,
        )
        lines = [
            f"{r.requirement.id} ({r.requirement.level}): {r.message}"
            + f"\n    spec: {r.requirement.sentence}"
            + "".join(f"\n    {line}" for line in r.example)
            for r in report.results
            if r.status == "failed"
        ]
        if lines:
            pytest.fail(f"seed {report.seed}\n" + "\n".join(lines), pytrace=False)

    return run
