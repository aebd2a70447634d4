"""Detection rate of the gallery: how many of N seeds catch each broken implementation.

``nox -s detection -- 20`` runs every gallery entry at the default profile
with seeds 1 to N and prints, per entry, in how many seeds the suite failed
it with the requirement the entry breaks. Not part of CI: it takes minutes.
"""

from __future__ import annotations

import sys
import time

from dsh_user_interaction_conformance import run_suite
from tests.gallery.providers import BROKEN_PROVIDERS
from tests.gallery.services import BROKEN_SERVICES


def main() -> int:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    wanted = set(sys.argv[2:])
    entries = [("provider", n, f, r) for n, (f, r) in BROKEN_PROVIDERS.items()]
    entries += [("service", n, f, r) for n, (f, r) in BROKEN_SERVICES.items()]
    missed = 0
    for kind, name, factory, requirement in entries:
        if wanted and name not in wanted:
            continue
        caught = 0
        started = time.monotonic()
        for seed in range(1, seeds + 1):
            factories = (
                {"subject_factory": factory} if kind == "provider" else {"service_factory": factory}
            )
            report = run_suite(
                kinds=[kind], profile="default", seed=seed, bound=0.2, shrink=False, **factories
            )
            failed = {r.requirement.id for r in report.results if r.status == "failed"}
            caught += bool(failed & set(requirement.split("|")))
        missed += caught < seeds - 1
        seconds = time.monotonic() - started
        print(f"{kind:8} {name:32} {requirement:28} {caught:>3}/{seeds}  {seconds:6.1f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
