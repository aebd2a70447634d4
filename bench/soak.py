"""Soak the service: 100,000 concurrent asks under random interrupts, every outcome checked.

``nox -s soak`` (or ``python -m bench.soak`` with the repository root on
``PYTHONPATH``) runs 10 rounds of 10,000 concurrent asks with random aborts,
shared signals, caller cancellations, outer timeouts and disposals, and
providers that answer, ignore the signal, swallow the cancellation, raise or
answer at once. Each ask's outcome is judged against the spec, and after each
round nothing may be left behind; see ``tests/soak_engine.py`` for the rules.
It prints the seed (``--seed`` replays a run), the outcomes, the rate and the
traced memory. Not part of CI; the tests run a small soak.

    python -m bench.soak [ASKS] [--rounds N] [--seed S] [--any-timeouts] [--no-memory]

``--any-timeouts`` also gives some asks a signal made with
``AbortSignal.any([AbortSignal.timeout(t), shared])``; each round fails, rather
than hangs, if those signals never abort.
"""

from __future__ import annotations

import argparse
import random
import sys

from tests.soak_engine import Options, SoakFailure, soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("asks", nargs="?", type=int, default=100_000, help="asks in all")
    parser.add_argument("--rounds", type=int, default=None, help="default: one per 10,000 asks")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one, printed")
    parser.add_argument(
        "--any-timeouts",
        action="store_true",
        help="also combine AbortSignal.timeout with shared signals through AbortSignal.any",
    )
    parser.add_argument("--no-memory", action="store_true", help="do not trace memory")
    parser.add_argument(
        "--bound", type=float, default=120.0, help="seconds a round may take to settle"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rounds = args.rounds if args.rounds is not None else max(1, round(args.asks / 10_000))
    options = Options(
        asks=args.asks,
        rounds=rounds,
        seed=seed,
        any_timeouts=args.any_timeouts,
        trace_memory=not args.no_memory,
        bound=args.bound,
    )
    print(f"soak: {options.asks:,} asks in {options.rounds} rounds, seed {seed}", flush=True)
    print(f"replay: {options.replay()}", flush=True)
    try:
        report = soak(options)
    except SoakFailure as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
