"""The README's ``nox`` beside four CPU-bound processes: each session's result, and the load seen.

``python -m bench.loaded_nox [--runs N] [--burners 4] [-- NOX ARGS]`` runs
``nox`` (the README's test command, after its install) *N* times in a row
(1 by default), each beside *burners* processes that spin on the CPU
(:mod:`bench.loaded`), and prints for each run every session's result as
nox reports it (``success``, ``failed``, ``skipped``), the run's wall
clock, and the 1-minute load average seen meanwhile (least, mean,
greatest). Each run's output goes to ``bench/results/loaded_nox-K.log``,
and the records to ``bench/results/loaded_nox.json``. The exit status is 0
when every run passed.

The issue this answers asked for the README's ``nox`` green three times in
a row with four CPU-bound processes beside it on the 2-core machine;
``docs/performance.md`` records the runs made. Since the slow tier left the
default set, a run takes about twenty minutes at that load, each burner in
a session of its own (it took over an hour with the slow tier); ``nox -s
loaded`` (the fast tier, two burners a core) is the shorter check to run
before landing, and this the whole of CI's set.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict

from bench.loaded import RESULTS, run_loaded, write_json

#: A session's line in nox's closing summary: ``nox > * lint: success``.
_SESSION = re.compile(r"^nox > \* (?P<name>\S+): (?P<result>\w+)", re.MULTILINE)
#: Seconds a run may take before it is stopped (a red run must end): about three
#: times the slowest loaded run seen (69 minutes).
PATIENCE = 4 * 3600.0


def sessions(output: str) -> dict[str, str]:
    """Each session's result, from nox's closing summary in *output*.

    >>> sessions("nox > Ran multiple sessions:\\nnox > * lint: success\\nnox > * slow-3.11: failed")
    {'lint': 'success', 'slow-3.11': 'failed'}
    """
    return {match["name"]: match["result"] for match in _SESSION.finditer(output)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loaded_nox", description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--burners", type=int, default=4)
    parser.add_argument("nox_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    extra: list[str] = args.nox_args
    extra = extra[1:] if extra[:1] == ["--"] else extra
    records: list[dict[str, object]] = []
    green = 0
    for number in range(1, args.runs + 1):
        command = [sys.executable, "-m", "nox", *extra]
        run = run_loaded(command, args.burners, capture=True, timeout=PATIENCE)
        log = RESULTS / f"loaded_nox-{number}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(run.output, encoding="utf-8")
        results = sessions(run.output)
        passed = run.status == 0 and bool(results)
        green += passed
        print(f"run {number}: {'green' if passed else 'red'}; {run.line()}")
        for name, result in results.items():
            print(f"  {name:24} {result}")
        if not results:
            print(f"  (no session summary; the output is in {log})")
        record = asdict(run)
        record.pop("output")
        records.append({**record, "run": number, "sessions": results, "log": str(log)})
        write_json(RESULTS / "loaded_nox.json", records)
    print(f"{green} of {args.runs} runs green beside {args.burners} CPU-bound processes")
    return 0 if green == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
