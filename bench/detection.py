"""Detection rate of the gallery: how many of N seeds catch each broken implementation.

``nox -s detection -- 20`` runs every gallery entry at the default profile
with seeds 1 to N and prints, per entry, in how many seeds the suite failed
it with the requirement the entry breaks. Not part of CI: it takes minutes.

``-- 20 NAME ...`` runs only the named entries. With ``--covering``, each
seed first runs only the checks that must catch the entry (``covering()`` in
``tests/test_gallery.py``: those citing its requirement), and the whole suite
of its kind only when they miss it, as the gallery test does; the ``covering``
column counts the seeds the covering checks caught on their own. That is
several times faster, and says the same: the other checks can only add
failures. Either way a run stops as soon as the entry is caught
(``stop_on``): whether it is caught is all a seed is asked.

``--web`` adds the broken web providers (``tests/gallery/web.py``: the
provider checks' and the web profile's; ``tests/gallery/web_tabs.py``: the
surfaces check's, across the page's tabs), each
driven through its page in headless Chromium: their covering check is the one
the gallery names, and they run with the suite's default bound.

``--stores`` adds the broken ask stores (``tests/gallery/stores.py``), each
judged by the store suite at its default profile and bound, its state
machine first (the covering check) and its durable-path scenarios only
when the machine misses it. ``-- 20 --stores $(python -c 'from
tests.gallery.stores import BROKEN_STORES; print(*BROKEN_STORES)')`` judges
the stores alone.

``--round-trips`` adds the broken ``run_tool``s of the MCP bridge
(``BROKEN_RUN_TOOLS`` in ``tests/gallery/mcp.py``), each judged by the
round-trip checks (``check_round_trips``, ``MCP-ROUND-*``) at their default
number of examples; they are their own covering check.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Collection
from typing import Any

from dsh_user_interaction_conformance import run_store_suite, run_suite
from tests.gallery.fan_out import BROKEN_FAN_OUTS
from tests.gallery.policies import BROKEN_POLICY_SERVICES
from tests.gallery.providers import BROKEN_PROVIDERS
from tests.gallery.services import BROKEN_SERVICES


def _failed(
    kind: str,
    factory: Callable[[], Any],
    seed: int,
    only: Collection[str],
    wanted: Collection[str],
) -> set[str]:
    if kind == "run_tool":
        from dsh_user_interaction.extra.mcp.testing import RoundTripFailure, check_round_trips

        try:
            check_round_trips(factory, seed=seed)
        except RoundTripFailure as failure:
            return {failure.requirement}
        return set()
    if kind == "store":
        judged = run_store_suite(factory, seed=seed, shrink=False, stop_on=wanted, only=only)
        return {r.requirement.id for r in judged.results if r.status == "failed"}
    factories = {"service_factory": factory} if kind == "service" else {"subject_factory": factory}
    report = run_suite(
        kinds=["service" if kind == "service" else "provider"],
        only=only,
        profile="default",
        seed=seed,
        # A page in a browser is judged at the suite's default bound, as users run it.
        bound=1.0 if kind == "web" else 0.2,
        shrink=False,
        stop_on=wanted,
        **factories,
    )
    # A SHOULD the entry breaks (the web profile's) is reported as a warning.
    return {r.requirement.id for r in report.results if r.status in {"failed", "warning"}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detection", description=__doc__)
    parser.add_argument("seeds", type=int, nargs="?", default=20, help="seeds 1 to N")
    parser.add_argument("names", nargs="*", help="only these entries")
    parser.add_argument(
        "--covering", action="store_true", help="the covering checks first (see above)"
    )
    parser.add_argument("--web", action="store_true", help="the broken web providers too")
    parser.add_argument("--stores", action="store_true", help="the broken ask stores too")
    parser.add_argument(
        "--round-trips", action="store_true", help="the MCP bridge's broken run_tools too"
    )
    args = parser.parse_intermixed_args(argv)
    covering: Callable[[str, str, str], list[str]] | None = None
    if args.covering:
        from tests.test_gallery import covering as covering_checks  # imports pytest: only here

        covering = covering_checks

    entries = [("provider", n, f, r) for n, (f, r) in BROKEN_PROVIDERS.items()]
    entries += [("service", n, f, r) for n, (f, r) in BROKEN_SERVICES.items()]
    entries += [("service", n, f, r) for n, (f, r) in BROKEN_POLICY_SERVICES.items()]
    entries += [("provider", n, f, r) for n, (f, r) in BROKEN_FAN_OUTS.items()]
    web_checks: dict[str, str] = {}
    if args.web:
        # These need Playwright and Chromium: only here.
        from tests.gallery.web import BROKEN_WEB, BROKEN_WEB_PROFILE
        from tests.gallery.web_tabs import BROKEN_TABS

        for gallery in (BROKEN_WEB, BROKEN_WEB_PROFILE, BROKEN_TABS):
            entries += [("web", n, f, r) for n, (f, r, _) in gallery.items()]
            web_checks |= {n: c for n, (_, _, c) in gallery.items()}
    if args.stores:
        from tests.gallery.stores import BROKEN_STORES

        entries += [("store", n, f, r) for n, (f, r) in BROKEN_STORES.items()]
    if args.round_trips:
        from tests.gallery.mcp import BROKEN_RUN_TOOLS  # needs the mcp SDK: only here

        entries += [("run_tool", n, f, "|".join(r)) for n, (f, r) in BROKEN_RUN_TOOLS.items()]
    missed = 0
    for kind, name, factory, requirement in entries:
        if args.names and name not in args.names:
            continue
        wanted = set(requirement.split("|"))
        caught = first = 0
        started = time.monotonic()
        for seed in range(1, args.seeds + 1):
            if covering is not None:
                if kind == "run_tool":
                    only = []
                elif kind == "store":
                    only = ["store-machine"]
                elif kind == "web":
                    only = [web_checks[name]]
                else:
                    only = covering(name, kind, requirement)
                hit = bool(_failed(kind, factory, seed, only, wanted) & wanted)
                first += hit
                if hit:
                    caught += 1
                    continue
            caught += bool(_failed(kind, factory, seed, (), wanted) & wanted)
        missed += caught < args.seeds - 1
        seconds = time.monotonic() - started
        by_covering = f"  covering {first:>3}/{args.seeds}" if covering is not None else ""
        print(
            f"{kind:8} {name:32} {requirement:28} {caught:>3}/{args.seeds}{by_covering}"
            f"  {seconds:6.1f} s",
            flush=True,
        )
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
