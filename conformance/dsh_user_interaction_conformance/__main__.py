"""``python -m dsh_user_interaction_conformance``: run the suite from the command line.

Exit status: 0 when every MUST requirement passed or is baselined, 1 on
failures, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

from ._engine import CHECKS, PROFILES
from ._runner import Report, run_suite

__all__ = ["main"]

PROG = "python -m dsh_user_interaction_conformance"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, description="Check a user-interaction provider or service against the spec."
    )
    parser.add_argument(
        "--provider", metavar="MODULE:ATTR", help="zero-argument factory returning a Subject"
    )
    parser.add_argument(
        "--service", metavar="MODULE:ATTR", help="zero-argument factory returning a service"
    )
    parser.add_argument(
        "--profile", choices=sorted(PROFILES), default="default", help="how many examples"
    )
    parser.add_argument("--seed", type=int, help="the seed; a failure prints the one to reuse")
    parser.add_argument(
        "--bound", type=float, default=1.0, help="seconds a subject may take to settle"
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="CHECK", help="run only this check"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument(
        "--baseline", type=Path, metavar="FILE", help="JSON file of expected failures"
    )
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    return parser


def _load(spec: str, option: str) -> Callable[[], Any]:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise _UsageError(f"{option} must look like MODULE:ATTR, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise _UsageError(f"{option}: cannot import {module_name!r}: {error}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise _UsageError(f"{option}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise _UsageError(f"{option}: {spec!r} is not callable")
    factory: Callable[[], Any] = target
    return factory


def _baseline(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise _UsageError(f"--baseline: cannot read {str(path)!r}: {error}") from None
    shape = '--baseline: expected {"expected-failures": {"REQ-ID": "reason", ...}}'
    if not isinstance(data, dict):
        raise _UsageError(shape)
    failures: object = cast("dict[str, object]", data).get("expected-failures")
    if not isinstance(failures, dict):
        raise _UsageError(shape)
    result: dict[str, str] = {}
    for key, value in cast("dict[object, object]", failures).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise _UsageError(shape)
        result[key] = value
    return result


def _reproducer(report: Report, argv: Sequence[str], check: str) -> str:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in {"--seed", "--only", "--json"}:
            skip = True
            continue
        if arg.startswith(("--seed=", "--only=", "--json=")):
            continue
        kept.append(arg)
    return shlex.join([*PROG.split(), *kept, "--seed", str(report.seed), "--only", check])


def _print(report: Report, argv: Sequence[str], elapsed: float) -> None:
    out = sys.stdout
    width = max((len(r.requirement.id) for r in report.results), default=10)
    for result in report.results:
        out.write(f"{result.status:>16}  {result.requirement.id:<{width}}  {result.message}\n")
    for result in report.results:
        if result.status not in {"failed", "warning"}:
            continue
        out.write(
            f"\n=== {result.status.upper()}: {result.requirement.id} ({result.requirement.level})\n"
        )
        out.write(f"spec: {result.requirement.sentence}\n")
        out.write(f"what: {result.message}\n")
        if result.example:
            out.write("minimal example:\n")
            for line in result.example:
                out.write(f"    {line}\n")
        failing = [o.check.name for o in report.outcomes if o.requirement == result.requirement.id]
        if failing:
            out.write(f"reproduce: {_reproducer(report, argv, failing[0])}\n")
    counts = report.as_dict()["summary"]
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    out.write(
        f"\n{len(report.results)} requirements: {summary}; seed {report.seed}, "
        f"profile {report.profile}, {elapsed:.1f} s\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(args_list)
        if args.list:
            for item in CHECKS:
                sys.stdout.write(f"{item.name:<26} {item.kind:<9} {' '.join(item.requirements)}\n")
            return 0
        unknown = set(args.only) - {c.name for c in CHECKS}
        if unknown:
            raise _UsageError(f"--only: unknown check {sorted(unknown)[0]!r}; see --list")
        subject = _load(args.provider, "--provider") if args.provider else None
        service = _load(args.service, "--service") if args.service else None
        baseline = _baseline(args.baseline) if args.baseline else None
        if args.bound <= 0:
            raise _UsageError(f"--bound must be positive, got {args.bound}")
    except _UsageError as error:
        sys.stderr.write(f"{PROG}: error: {error}\n")
        return 2
    kinds = ["binding"]
    if subject is not None or service is None:
        kinds.append("provider")
    if service is not None or subject is None:
        kinds.append("service")
    started = time.perf_counter()
    report = run_suite(
        subject_factory=subject,
        service_factory=service,
        profile=args.profile,
        seed=args.seed,
        bound=args.bound,
        only=args.only,
        kinds=kinds,
        baseline=baseline,
    )
    elapsed = time.perf_counter() - started
    _print(report, args_list, elapsed)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
