"""``python -m dsh_user_interaction_conformance``: run the suite from the command line.

Exit status: 0 when every MUST requirement passed (or is baselined, or its
capability is not claimed), 1 on failures, 2 on a usage or set-up error.
With ``--store``, it runs the store suite on an ask store instead, with the
same exit statuses.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import math
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TextIO, cast

import dsh_user_interaction

#: What the ``conformance`` extra installs, which the suite imports.
_EXTRA = frozenset({"hypothesis", "pytest", "jsonschema"})
#: How to install it, as the error of a command line run without it says.
_INSTALL = "pip install 'dsh-user-interaction[conformance]'"

try:
    from . import _engine, _loop
    from ._baseline import BaselineEntry, parse_baseline, recorded_baseline
    from ._engine import CHECKS, PROFILES, CheckOutcome, SetupError
    from ._matrix import MatrixColumn, ReportError, build_matrix, read_report
    from ._registry import requirements
    from ._runner import Report, RequirementResult, factory_name, run_suite
    from ._store import _loop as _store_loop
    from ._subject import UsageError as _UsageError
    from ._subject import declared_capabilities
    from ._subject import load_factory as _load
except ModuleNotFoundError as _missing:
    # Run as a command without the extra: one line saying what to install, exit
    # status 2 (a set-up error), and no traceback. Imported, the error stands.
    if __name__ != "__main__" or _missing.name not in _EXTRA:
        raise
    print(
        f"error: the conformance suite needs {_missing.name}, which is not installed: {_INSTALL}",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

if TYPE_CHECKING:
    # Loaded when a run needs them: importing the store suite, and the harness's
    # pipes to a child, cost a run on a subject in this process a thirtieth of it.
    from . import _harness
    from ._store import StoreReport

__all__ = ["main", "run"]

PROG = "python -m dsh_user_interaction_conformance"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _bound(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {text!r}")
    return value


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
        "--provider-cmd",
        metavar="CMD",
        help="a command whose process serves a provider over the harness protocol",
    )
    parser.add_argument(
        "--service-cmd",
        metavar="CMD",
        help="a command whose process serves a service over the harness protocol",
    )
    parser.add_argument(
        "--store",
        nargs="?",
        const="sqlite",
        metavar="MODULE:ATTR",
        help="run the store suite instead, on the ask stores of a zero-argument factory "
        "returning a StoreSubject; alone, or 'sqlite', the embedded SQLite store. It takes "
        "--profile, --seed, --bound, --only, --stop-on DUR-..., --json and --list",
    )
    parser.add_argument(
        "-V",
        "--validate-protocol",
        action="store_true",
        help="check every harness message against the protocol's JSON Schema",
    )
    parser.add_argument(
        "--profile", choices=sorted(PROFILES), default="default", help="how many examples"
    )
    parser.add_argument("--seed", type=int, help="the seed; a failure prints the one to reuse")
    parser.add_argument(
        "--bound",
        type=_bound,
        default=None,
        help="seconds a subject may take to settle after an abort or an answer (default 1); "
        "with --store, seconds any call on a store may take, and a watcher to show a change "
        "(default 5)",
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="CHECK", help="run only this check"
    )
    parser.add_argument(
        "--stop-on",
        action="append",
        default=[],
        metavar="REQ-ID",
        help="stop as soon as a check fails this requirement (a gallery's way to judge)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument(
        "--baseline", type=Path, metavar="FILE", help="JSON file of expected failures"
    )
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write the run's failures to FILE as a recorded baseline (how each fails)",
    )
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    return parser


def _baseline(path: Path) -> dict[str, BaselineEntry]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise _UsageError(f"--baseline: cannot read {str(path)!r}: {error}") from None
    try:
        return parse_baseline(data)
    except ValueError as error:
        raise _UsageError(f"--baseline: {error}") from None


def store_reproducer(argv: Sequence[str], check: str, seed: int | None) -> str:
    """The command that re-runs the store suite's *check* as this run ran it.

    ``--store`` comes last, as ``--store=VALUE`` when it has one: alone, it takes none.
    """
    kept: list[str] = []
    store = "--store"
    skip = False
    for index, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--store":
            following = argv[index + 1] if index + 1 < len(argv) else "-"
            if not following.startswith("-"):
                store, skip = f"--store={following}", True
            continue
        if arg.startswith("--store="):
            store = arg
            continue
        kept.append(arg)
    return f"{reproducer(kept, check, seed)} {shlex.quote(store)}"


def reproducer(argv: Sequence[str], check: str, seed: int | None) -> str:
    """The command that re-runs *check* as this run ran it."""
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
    pinned = ["--seed", str(seed)] if seed is not None else []
    command = shlex.join([*PROG.split(), *kept, *pinned, "--only", check])
    return command if seed is not None else f"CI=true {command}"


class _Printer:
    """Writes the header, one line per check as it finishes, and the summary."""

    def __init__(
        self,
        out: TextIO,
        argv: Sequence[str],
        expected: Mapping[str, BaselineEntry] | None = None,
    ) -> None:
        self.out = out
        self.argv = argv
        #: The baseline: a check whose every failure it expects says "expected".
        self.baseline: Mapping[str, BaselineEntry] = expected or {}

    def _expected(self, outcome: CheckOutcome, requirement: str) -> bool:
        entry = self.baseline.get(requirement)
        if entry is None:
            return False
        found = [f for f in outcome.every_failure if f.requirement == requirement]
        return not entry.unexpected(found)

    def header(self, args: argparse.Namespace, subject: object, service: object) -> None:
        write = self.out.write
        write(
            f"dsh-user-interaction conformance {dsh_user_interaction.__version__} "
            f"(spec {dsh_user_interaction.SPEC_VERSION})\n"
        )
        if subject is not None or service is None:
            caps = declared_capabilities(subject) if subject is not None else None
            name = (
                factory_name(subject) if subject is not None else "the reference ScriptedProvider"
            )
            write(f"  provider:     {name}\n")
            shown = caps.as_dict() if caps is not None else None
            if shown is None:
                write("  capabilities: all (none declared)\n")
            else:
                names = [k for k, v in shown.items() if v]
                write(f"  capabilities: {', '.join(names) or 'none'}\n")
                if caps is not None and caps.ways:
                    ways = "; ".join(f"{a}: {', '.join(n)}" for a, n in caps.ways.items())
                    write(f"  ways:         {ways}\n")
        if service is not None or subject is None:
            name = factory_name(service) if service is not None else "the reference service"
            write(f"  service:      {name}\n")
        write(
            f"  profile:      {args.profile} ({PROFILES[args.profile]} examples per check), "
            f"bound {args.bound:g} s\n"
        )
        self._seed_line(args.seed)

    def pinned_seed(self, seed: int | None) -> int | None:
        """The run's seed: *seed*, else a random one, which the reproducer then names.

        ``None`` under ``CI``, where Hypothesis derandomises a run without a seed.
        """
        if seed is None and not _engine.under_ci():
            seed = int.from_bytes(os.urandom(4), "big")
            self.argv = [*self.argv, "--seed", str(seed)]
        return seed

    def _seed_line(self, seed: int | None) -> None:
        """A header's last line: the run's seed, or why it has none."""
        if seed is not None:
            self.out.write(f"  seed:         {seed}\n")
        else:
            self.out.write("  seed:         none: CI is set, so Hypothesis derandomises the run\n")
        self.out.flush()

    def check(self, outcome: CheckOutcome) -> None:
        if outcome.status == "skipped":
            line = f"  skipped   {outcome.check.name:<24} {outcome.message}"
        else:
            failed = sorted(outcome.failures)
            expected = {r for r in failed if self._expected(outcome, r)}
            if not failed:
                verdict = "ok      "
            elif expected.issuperset(failed):
                verdict = "expected"  # every failure is baselined
            else:
                verdict = "FAILED  "
            detail = (
                " ".join(f"{r} (expected)" if r in expected else r for r in failed)
                if failed
                else f"{len(outcome.check.requirements)} reqs"
            )
            line = (
                f"  {verdict}  {outcome.check.name:<24} {outcome.examples:>5} examples "
                f"{outcome.seconds:>6.1f} s  {detail}"
            )
        self.out.write(line + "\n")
        self.out.flush()

    def _details(
        self, result: RequirementResult, seed: int | None, reproduce: str | None = None
    ) -> None:
        write = self.out.write
        requirement = result.requirement
        write(f"\n=== {result.status.upper()}: {requirement.id} ({requirement.level})")
        write(f", found by {result.failed_in}\n" if result.failed_in else "\n")
        write(f"spec: {requirement.sentence}\n")
        write(f"what: {result.message}\n")
        if result.knock_on_of:
            write(
                f"knock-on: the fault that fails {', '.join(result.knock_on_of)} "
                "breaks this too, in the same examples; fix that first\n"
            )
        causes = result.causes()
        if len(result.failures) > 1:
            listed = "; ".join(
                f"{check} ({cause or 'no error'}): {count}" for check, cause, count in causes
            )
            write(f"failing examples: {len(result.failures)}, by check and cause: {listed}\n")
        if result.example:
            kind = "minimal example"
            if not result.shrunk:
                why = result.not_shrunk_because
                kind = f"example (not shrunk: {why})" if why else "example (not shrunk)"
            write(f"{kind}:\n")
            for block in result.example:
                for line in block.splitlines():
                    write(f"    {line}\n")
        if result.failed_in:
            check = result.failed_in.partition("[")[0]
            write(f"reproduce: {reproduce or reproducer(self.argv, check, seed)}\n")

    def summary(self, report: Report, elapsed: float) -> None:
        """The counts, then each failure and warning in full, then the verdict."""
        write = self.out.write
        counts = report.as_dict()["summary"]
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        binding = sum(r.status == "passed" for r in report.binding)
        seed = "derandomised" if report.seed is None else f"seed {report.seed}"
        write("\n")
        for role, name in report.subjects.items():
            write(f"{role}: {name}\n")
        checked = f"binding checks: {binding} of {len(report.binding)} passed; "
        write(
            f"{len(report.results)} requirements of the subject: {summary or 'none'}; "
            f"{checked if report.binding else ''}"
            f"{seed}, profile {report.profile}, {elapsed:.1f} s\n"
        )
        stalls = [stall for outcome in report.outcomes for stall in outcome.stalls]
        starved = [stall for stall in stalls if stall.judged == "starved"]
        if starved:
            longest = max(stall.stall.seconds for stall in starved)
            write(
                f"stalls: {len(starved)} of {len(stalls)} judged starved (the loop's thread "
                f"waited for a CPU; up to {longest:.2f} s), which fails nothing\n"
            )
        others = [r for r in report.results if r.status in {"untested", "skipped"}]
        others += [r for r in report.results if r.status == "expected-failure"]
        for result in others:
            write(f"{result.status:>16}  {result.requirement.id:<16} {result.message}\n")
        for result in [*report.results, *report.binding]:
            if result.status in {"failed", "warning"}:
                self._details(result, report.seed)
        write("\nPASSED\n" if report.ok else "\nFAILED\n")

    def store_header(self, args: argparse.Namespace, factory: object) -> None:
        """What the store suite is about to run."""
        write = self.out.write
        write(
            f"dsh-user-interaction conformance {dsh_user_interaction.__version__} "
            f"(spec {dsh_user_interaction.SPEC_VERSION}): the store suite\n"
        )
        write(f"  store:        {factory_name(factory)}\n")
        from ._store import STORE_PROFILES  # noqa: PLC0415 - the store suite only

        sizes = STORE_PROFILES[args.profile]
        write(
            f"  profile:      {args.profile} ({sizes.examples} examples of up to {sizes.steps} "
            f"steps, {sizes.scenarios} per scenario), bound {args.bound:g} s\n"
        )
        self._seed_line(args.seed)

    def store_summary(self, report: StoreReport) -> None:
        """One line per run of the state machine, the counts, each failure in full, the verdict."""
        from ._store import STORE_CHECK, STORE_CHECKS  # noqa: PLC0415 - the store suite only

        write = self.out.write
        count = len(report.results)
        covers = {check: [r for r in report.results if check in r.checks] for check in STORE_CHECKS}
        for run in report.runs:
            failed = " ".join(run.failed)
            verdict = "FAILED  " if run.failed else "ok      "
            detail = failed or f"{len(covers[run.check]) - len(run.masked)} reqs"
            if run.masked:
                detail += f" (not looking for {' '.join(run.masked)} again)"
            if run.hung:
                detail += f"; stopped: a call hung ({run.hung})"
            steps = f"{run.steps:>6} steps" if run.check == STORE_CHECK else " " * 12
            write(
                f"  {verdict}  {run.check:<24} {run.examples:>5} examples {steps} "
                f"{run.seconds:>6.1f} s  {detail}\n"
            )
        counts = report.as_dict()["summary"]
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        seed = "derandomised" if report.seed is None else f"seed {report.seed}"
        write(f"\nstore: {report.store}\n")
        write(
            f"{count} requirements of the store: {summary}; {seed}, profile {report.profile}, "
            f"{report.seconds:.1f} s\n"
        )
        for result in report.results:
            if result.status in {"untested", "skipped"}:
                write(f"{result.status:>16}  {result.requirement.id:<16} {result.message}\n")
        for result in report.results:
            if result.status in {"failed", "warning"}:
                reproduce = store_reproducer(self.argv, result.failed_in, report.seed)
                self._details(result, report.seed, reproduce)
        write("\nPASSED\n" if report.ok else "\nFAILED\n")


def _matrix(argv: Sequence[str]) -> int:
    """``matrix REPORT ...``: the conformance matrix of JSON reports, as Markdown or HTML."""
    parser = _Parser(
        prog=f"{PROG} matrix",
        description="Show several implementations' JSON reports (--json) side by side: "
        "implementations as columns, requirements as rows.",
    )
    parser.add_argument(
        "reports",
        nargs="+",
        metavar="[NAME=]REPORT",
        help="a JSON report, its column named NAME (by default after its subject)",
    )
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="write Markdown here")
    parser.add_argument("--html", type=Path, metavar="PATH", help="write a standalone HTML page")
    parser.add_argument("--title", default="Conformance matrix", help="the HTML page's title")
    try:
        args = parser.parse_args(list(argv))
        columns: list[MatrixColumn] = []
        for given in args.reports:
            name, sep, path = given.partition("=")
            columns.append(read_report(path, name) if sep and name else read_report(given))
    except (_UsageError, ReportError) as error:
        sys.stderr.write(f"{PROG} matrix: error: {error}\n")
        return 2
    matrix = build_matrix(columns)
    if args.markdown is None and args.html is None:
        sys.stdout.write(matrix.markdown())
    if args.markdown is not None:
        args.markdown.write_text(matrix.markdown(), encoding="utf-8")
    if args.html is not None:
        args.html.write_text(matrix.html(args.title), encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["matrix"]:
        return _matrix(args_list[1:])
    try:
        args = _parser().parse_args(args_list)
        if args.store is not None:
            return _store(args, args_list)
        if args.bound is None:
            args.bound = 1.0
        if args.list:
            for item in CHECKS:
                sys.stdout.write(f"{item.name:<26} {item.kind:<9} {' '.join(item.requirements)}\n")
            return 0
        unknown = set(args.only) - {c.name for c in CHECKS}
        if unknown:
            raise _UsageError(f"--only: unknown check {sorted(unknown)[0]!r}; see --list")
        unknown = set(args.stop_on) - set(requirements())
        if unknown:
            raise _UsageError(f"--stop-on: unknown requirement {sorted(unknown)[0]!r}")
        for given, command in (("--provider", "--provider-cmd"), ("--service", "--service-cmd")):
            if getattr(args, given[2:]) and getattr(args, command[2:].replace("-", "_")):
                raise _UsageError(f"{given} and {command} name the same subject: give one")
        if args.validate_protocol and not (args.provider_cmd or args.service_cmd):
            raise _UsageError("-V checks harness messages: give --provider-cmd or --service-cmd")
        subject = _load(args.provider, "--provider") if args.provider else None
        service = _load(args.service, "--service") if args.service else None
        baseline = _baseline(args.baseline) if args.baseline else None
    except _UsageError as error:
        sys.stderr.write(f"{PROG}: error: {error}\n")
        return 2
    children: list[_harness.HarnessSubjects | _harness.HarnessServices] = []
    try:
        if args.provider_cmd:
            subject = _child("HarnessSubjects", args.provider_cmd, args, "--provider-cmd")
            children.append(subject)
        if args.service_cmd:
            service = _child("HarnessServices", args.service_cmd, args, "--service-cmd")
            children.append(service)
    except _UsageError as error:
        for child in children:
            child.close()
        sys.stderr.write(f"{PROG}: error: {error}\n")
        return 2
    try:
        return _run(args, args_list, subject, service, baseline, children)
    finally:
        for child in children:
            child.close()


def _store(args: argparse.Namespace, args_list: list[str]) -> int:
    """Run the store suite (``--store``); usage errors raise :class:`_UsageError`."""
    others = [
        option
        for option, given in (
            ("--provider", args.provider),
            ("--service", args.service),
            ("--provider-cmd", args.provider_cmd),
            ("--service-cmd", args.service_cmd),
            ("-V", args.validate_protocol),
            ("--baseline", args.baseline),
            ("--write-baseline", args.write_baseline),
        )
        if given
    ]
    if others:
        raise _UsageError(f"--store runs the store suite alone: drop {', '.join(others)}")
    from ._store import (  # noqa: PLC0415 - the store suite only
        DURABLE_CHECKS,
        STORE_CHECK,
        STORE_CHECKS,
        run_store_suite,
        sqlite_store_subject,
        store_requirements,
        store_suite_requirements,
    )

    known = store_suite_requirements()
    if args.list:
        sys.stdout.write(f"{STORE_CHECK:<26} {'store':<9} {' '.join(store_requirements())}\n")
        for check in DURABLE_CHECKS:
            sys.stdout.write(f"{check.name:<26} {'durable':<9} {' '.join(check.requirements)}\n")
        return 0
    unknown = set(args.stop_on) - set(known)
    if unknown:
        raise _UsageError(f"--stop-on: {sorted(unknown)[0]!r} is no requirement of the store suite")
    unknown = set(args.only) - set(STORE_CHECKS)
    if unknown:
        raise _UsageError(f"--only: unknown check {sorted(unknown)[0]!r}; see --store --list")
    factory: Callable[[], Any] = (
        sqlite_store_subject if args.store == "sqlite" else _load(args.store, "--store")
    )
    if args.bound is None:
        args.bound = 5.0
    printer = _Printer(sys.stdout, args_list)
    seed = printer.pinned_seed(args.seed)
    printer.store_header(argparse.Namespace(**{**vars(args), "seed": seed}), factory)
    try:
        report = run_store_suite(
            factory,
            seed=seed,
            profile=args.profile,
            bound=args.bound,
            stop_on=args.stop_on,
            only=args.only,
        )
    except SetupError as error:
        sys.stderr.write(f"{PROG}: error: --store: {error}\n")
        return 2
    except ValueError as error:
        sys.stderr.write(f"{PROG}: error: {error}\n")
        return 2
    printer.store_summary(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0 if report.ok else 1


def _child(
    kind: Literal["HarnessSubjects", "HarnessServices"],
    command: str,
    args: argparse.Namespace,
    option: str,
) -> _harness.HarnessSubjects | _harness.HarnessServices:
    """The harness's *kind* of factory, serving from a child that runs *command*."""
    from dsh_user_interaction.extra.stdio import ChildFailed  # noqa: PLC0415 - a child's only

    from . import _harness  # noqa: PLC0415 - a child's only

    harness = _harness.HarnessSubjects if kind == "HarnessSubjects" else _harness.HarnessServices
    try:
        return harness(command, bound=args.bound, validate=args.validate_protocol)
    except ValueError as error:
        raise _UsageError(f"{option}: {error}") from None
    except ChildFailed as error:
        raise _UsageError(f"{option}: {error}") from None


def _run(  # noqa: PLR0917 - one private call, in one place
    args: argparse.Namespace,
    args_list: list[str],
    subject: Callable[[], Any] | None,
    service: Callable[[], Any] | None,
    baseline: dict[str, BaselineEntry] | None,
    children: Sequence[_harness.HarnessSubjects | _harness.HarnessServices],
) -> int:
    kinds = ["binding"]
    if subject is not None or service is None:
        kinds.insert(0, "provider")
    if service is not None or subject is None:
        kinds.insert(-1, "service")
    printer = _Printer(sys.stdout, args_list, baseline)
    seed = printer.pinned_seed(args.seed)
    printer.header(argparse.Namespace(**{**vars(args), "seed": seed}), subject, service)
    started = time.perf_counter()
    _engine.on_example.append(_watchdog)
    try:
        report = run_suite(
            subject_factory=subject,
            service_factory=service,
            profile=args.profile,
            seed=seed,
            bound=args.bound,
            only=args.only,
            kinds=kinds,
            baseline=cast("dict[str, str | BaselineEntry] | None", baseline),
            on_check=printer.check,
            stop_on=args.stop_on,
            every_case=args.write_baseline is not None,
        )
    except SetupError as error:
        option = "--service" if error.role == "service" else "--provider"
        sys.stderr.write(f"{PROG}: error: {option}: {error}\n")
        return 2
    except ValueError as error:
        sys.stderr.write(f"{PROG}: error: {error}\n")
        return 2
    finally:
        _disarm_watchdog()
        _engine.on_example.remove(_watchdog)
    printer.summary(report, time.perf_counter() - started)
    protocol = [problem for child in children for problem in child.protocol_errors]
    if protocol:
        sys.stdout.write(f"\nharness protocol: {len(protocol)} problem(s); the first ones:\n")
        for problem in protocol[:10]:
            sys.stdout.write(f"  {problem}\n")
        sys.stdout.write("FAILED (protocol)\n")
    if args.write_baseline is not None:
        failed = {
            r.requirement.id: r.failures
            for r in report.results
            if r.status in {"failed", "warning", "expected-failure"} and r.failures
        }
        recorded = recorded_baseline(failed, baseline)
        args.write_baseline.write_text(json.dumps(recorded, indent=2) + "\n", encoding="utf-8")
        sys.stdout.write(
            f"baseline: {len(failed)} requirement(s) recorded in {str(args.write_baseline)!r}\n"
        )
    if args.json is not None:
        found = report.as_dict()
        if children:
            found["protocol"] = {"ok": not protocol, "problems": protocol[:100]}
        args.json.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return 0 if report.ok and not protocol else 1


#: Seconds the watchdog is set beyond what the next example needs, so that it is
#: re-armed about once in that time instead of before every example.
_WATCHDOG_SLACK = 30.0
#: When the watchdog armed last goes off (``time.monotonic()``); 0.0 when none is armed.
_watchdog_due = [0.0]


def _watchdog(patience: float) -> None:
    """The last resort: if one example outlasts every bound, dump the stacks and exit 1.

    The bounds hold against any subject that lets the interpreter run; this
    covers one that does not (a C call that never releases the GIL). It goes
    off between ``patience + 30`` and ``patience + 60`` seconds after the
    example starts, and is re-armed only when the one armed last would go off
    sooner than that: each arming stops the watchdog's thread and starts another.
    """
    stream = sys.__stderr__
    if stream is None:
        return
    now = time.monotonic()
    needed = patience + 30.0
    if now + needed <= _watchdog_due[0]:
        return  # the watchdog armed last already waits long enough for this example
    try:
        faulthandler.dump_traceback_later(needed + _WATCHDOG_SLACK, exit=True, file=stream)
    except (ValueError, OSError, RuntimeError):
        return  # no real stderr to write the stacks to: no watchdog
    _watchdog_due[0] = now + needed + _WATCHDOG_SLACK


def _disarm_watchdog() -> None:
    """Cancel the watchdog: the run is over."""
    faulthandler.cancel_dump_traceback_later()
    _watchdog_due[0] = 0.0


def _exit(status: int) -> NoReturn:
    """Exit with *status*; at once only when something of a subject is still running.

    A plain exit runs the interpreter's exit handlers (so ``python -m
    cProfile -o OUT -m dsh_user_interaction_conformance`` writes its
    profile); a thread a subject left behind, or a loop the suite gave up
    on, would hang or crash that exit, so then the process ends at once.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    main = threading.main_thread()
    gave_up = _loop.abandoned() or _store_loop.abandoned()
    if any(t is not main and t.is_alive() for t in threading.enumerate()) or gave_up:
        os._exit(status)
    sys.exit(status)


def run() -> NoReturn:
    """The console script: :func:`main`, then an immediate exit.

    The process is the suite's alone, so what its imports built (Hypothesis,
    the strategies and their pools of text) is set aside from garbage
    collection: it lives until the exit, and every full collection walked all
    of it again, a thirtieth of a default run.
    """
    gc.freeze()
    _exit(main())


if __name__ == "__main__":
    run()
