"""Run a command beside CPU-bound processes, and report what load it saw.

``python -m bench.loaded [--burners N] [--json FILE] -- COMMAND...`` starts
*N* processes that spin on the CPU (``while True: pass``; two per core by
default), runs *COMMAND* beside them, stops them, and prints the command's
exit status, its wall-clock time and the load seen meanwhile: the 1-minute
load average, sampled every few seconds (:class:`LoadSampler`), and how many
of the burners were still spinning at the end (a burner that died would
make the run look loaded when it was not). The exit status is the
command's.

``nox -s loaded`` runs the fast tier this way, and ``bench/loaded_nox.py``
runs the README's ``nox``; ``tests/test_loaded.py`` runs a part of the fast
tier once, in the slow tier. Nothing here judges speed: the claim is that
the tests pass on a busy machine, so what is reported is the load they
passed (or failed) under.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: Where the records go.
RESULTS = Path(__file__).resolve().parent / "results"
#: What each burner runs: pure Python that never waits.
SPIN = "while True: pass"
#: Seconds between two samples of the load average.
SAMPLE_EVERY = 5.0


def default_burners() -> int:
    """Two CPU-bound processes per core."""
    return 2 * (os.cpu_count() or 1)


@contextlib.contextmanager
def burners(count: int) -> Generator[list[subprocess.Popen[bytes]]]:
    """*count* CPU-bound processes, spinning while the block runs; each stopped by its id after."""
    spinning: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            spinning.append(
                subprocess.Popen(
                    [sys.executable, "-c", SPIN],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    # A session of its own, as a program a user started elsewhere: where
                    # the kernel groups CPU time by session (autogroup), burners sharing
                    # this one would together get only one group's share, as much as the
                    # command's whole session, however many they were.
                    start_new_session=True,
                )
            )
        yield spinning
    finally:
        for process in spinning:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
        for process in spinning:
            process.wait()


@dataclass
class LoadSampler:
    """The 1-minute load average, sampled in a thread every :data:`SAMPLE_EVERY` seconds."""

    every: float = SAMPLE_EVERY
    samples: list[float] = field(default_factory=list[float])
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.every):
                return

    @contextlib.contextmanager
    def sampling(self) -> Generator[LoadSampler]:
        thread = threading.Thread(target=self._run, name="load sampler", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()
            self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float]:
        """The least, mean and greatest load average seen (zeros before any sample)."""
        if not self.samples:
            return {"min": 0.0, "mean": 0.0, "max": 0.0}
        return {
            "min": round(min(self.samples), 2),
            "mean": round(statistics.fmean(self.samples), 2),
            "max": round(max(self.samples), 2),
        }


@dataclass
class LoadedRun:
    """One command's run beside burners."""

    command: list[str]
    burners: int
    cores: int
    status: int = 0
    seconds: float = 0.0
    load: dict[str, float] = field(default_factory=dict[str, float])
    #: Burners still spinning when the command ended.
    burners_at_end: int = 0
    output: str = ""

    def line(self) -> str:
        load = self.load
        return (
            f"exit status {self.status} after {self.seconds:.0f} s beside {self.burners} "
            f"CPU-bound processes on {self.cores} cores ({self.burners_at_end} still spinning at "
            f"the end); load average min {load.get('min', 0):.1f}, mean "
            f"{load.get('mean', 0):.1f}, max {load.get('max', 0):.1f}"
        )


def run_loaded(
    command: Sequence[str],
    count: int,
    *,
    capture: bool = False,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> LoadedRun:
    """Run *command* beside *count* burners; with *capture*, keep its output (else it streams).

    *timeout* seconds (none by default) stops it, and its process group: a red
    run must end. Its status is then -9.
    """
    run = LoadedRun(list(command), count, os.cpu_count() or 1)
    sampler = LoadSampler()
    with burners(count) as spinning, sampler.sampling():
        started = time.monotonic()
        process = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, _ = process.communicate()
        run.seconds = round(time.monotonic() - started, 1)
        run.status = process.returncode
        run.output = out or ""
        run.burners_at_end = sum(p.poll() is None for p in spinning)
    run.load = sampler.summary()
    return run


def write_json(path: Path, record: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loaded", description=__doc__)
    parser.add_argument("--burners", type=int, default=default_burners())
    parser.add_argument("--json", type=Path, help="write the run's record here")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    given: list[str] = args.command
    command = given[1:] if given[:1] == ["--"] else given
    if not command:
        parser.error("give the command to run after --")
    run = run_loaded(command, args.burners)
    print(f"bench.loaded: {' '.join(command)}: {run.line()}", flush=True)
    if args.json is not None:
        record = asdict(run)
        record.pop("output")
        write_json(args.json, record)
    return run.status


if __name__ == "__main__":
    sys.exit(main())
