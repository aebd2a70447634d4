"""The requirements of section 7 that no suite can judge on a store under test.

A store suite only opens a store: it cannot fill its disk, mount it
read-only, corrupt its file or hand it tables of another layout, and a
command-line program or a switch of the reference's own service is not a
store. These requirements are judged by the reference's own tests instead,
named here, so that the docs' requirement table says where each one is
judged and the registry tests know that nothing else is missing.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REFERENCE_ONLY"]

#: Each requirement judged only by the reference's own tests, and where.
REFERENCE_ONLY: Final[dict[str, str]] = {
    "DUR-FAIL-1": "tests/test_store_failures.py, tests/test_postgres_failures.py",
    "DUR-LAYOUT-1": "tests/test_store_failures.py, tests/test_postgres_failures.py",
    "DUR-SERVE-1": "tests/test_store_failures.py",
    "DUR-AGREE-2": "tests/test_durable_agreement.py",
}
