"""Time-stamp nox's output, and split a stamped log by session and step.

``nox 2>&1 | python3 -u .ci/stamp.py LOG`` passes the output through and
writes each line to LOG after the seconds since the start;
``python3 .ci/stamp.py --split LOG`` prints how long each session took, and
each step within it (the install, each command, or each session a session
ran side by side), to the tenth of a second.
"""

from __future__ import annotations

import re
import sys
import time

_STEP = re.compile(r"^nox > (?!Session |Ran multiple)(.*)$")
#: A part of a session that ran others side by side (``checks``), with its own time.
_PART = re.compile(r"^nox > side by side: (\S+) took ([0-9.]+) s$")
_START = re.compile(r"^nox > Running session (\S+)")
_END = re.compile(r"^nox > Session (\S+) (was successful|failed|was skipped|aborted)")


def stamp(path: str) -> None:
    """Copy standard input to standard output, and to *path* with each line's time."""
    started = time.monotonic()
    with open(path, "w", encoding="utf-8") as log:
        for line in sys.stdin:
            sys.stdout.write(line)
            log.write(f"{time.monotonic() - started:9.1f} {line}")
            log.flush()


def split(path: str) -> None:
    """Print the sessions of the stamped log at *path*, each with its steps."""
    session, began, step, step_began = "", 0.0, "", 0.0
    steps: list[tuple[str, float]] = []
    with open(path, encoding="utf-8", newline="\n") as log:  # a "\r" inside a line stays
        for raw in log:
            at_text, _, line = raw.rstrip("\n").lstrip(" ").partition(" ")
            try:
                at = float(at_text)
            except ValueError:
                continue  # not a stamped line
            if start := _START.match(line):
                session, began, steps, step = start.group(1), at, [], ""
            elif end := _END.match(line):
                if step:
                    steps.append((step, at - step_began))
                print(f"  {at - began:6.1f} s  {session} ({end.group(2)})")
                for name, seconds in steps:
                    print(f"  {'':8}  {seconds:6.1f} s  {name[:70]}")
                step = ""
            elif session and (part := _PART.match(line)):
                if step:
                    steps.append((step, at - step_began))
                steps.append((f"{part.group(1)}, side by side", float(part.group(2))))
                step = ""
            elif session and (found := _STEP.match(line)):
                if step:
                    steps.append((step, at - step_began))
                step, step_began = found.group(1), at


if __name__ == "__main__":
    if sys.argv[1] == "--split":
        split(sys.argv[2])
    else:
        stamp(sys.argv[1])
