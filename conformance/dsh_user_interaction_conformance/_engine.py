"""How checks are declared, run with Hypothesis, and judged requirement by requirement.

Design notes (the rules the engine keeps, so that a green run is earned and a
red run ends):

Rule 1: a check is two halves. Its *build* half runs on the calling thread:
it draws the example's inputs through :class:`Draws` (which records them for
the report) and returns the *scenario*, a coroutine function that runs in a
fresh event loop on a worker thread (:mod:`._loop`). The scenario builds the
subject or service through :class:`Example`, drives it, and judges it with
:meth:`Example.verify` and :meth:`Example.fail`.

Rule 2: every requirement is judged on its own. A failure is recorded
against the requirement it names, whichever check found it. A run of a check
is repeated with the requirements that already failed *masked*: a masked
failure is recorded nowhere and does not stop the example, so the check goes
on judging its other requirements. The run that finds nothing new is the
clean run; its counts say how many examples judged each requirement.

Rule 3: every example ends within a fixed time (:func:`._loop.run_bounded`).
An example that does not settle is a failure of the requirement the scenario
was waiting on (:meth:`Example.stage`), a blocked loop is a failure of the
kind's loop requirement, and a task that outlives the example and ignores
its cancellation is a failure of the kind's leak requirement. Such slow
failures are not shrunk, and shrinking of any failure stops after a budget.

Rule 3a: a stall is a blocked loop, never a busy machine. A stall longer
than :attr:`Runtime.stall_limit` fails the loop requirement only when it is
judged ``blocked``: more than the limit of it was spent on a CPU (outside
garbage collections) or in a blocking call, by the loop's thread (or,
through the harness, the child's).
Where the time spent waiting for a CPU cannot be read (not Linux), a stall
that is not plainly CPU-bound is confirmed by running the example a second
time. A stall judged ``starved`` fails nothing and stops nothing; every
judgement is kept for the report (:class:`StallRecord`).

Rule 3b: never a green the machine did not earn. A stall the numbers
cannot call blocked or starved (``unsure``: the loop's thread waited for a
CPU, and was preempted too often to say the waits were the machine's
alone) is looked at again by running the example again, up to three
times: blocked in one of those runs, it fails; gone, or starved in one, it
passes; unsure in every one, the machine gave the loop's thread too
little CPU to tell, and the loop
requirement is ``untested`` with that reason (a ``MUST``: the run fails).
A correct subject is never failed for the machine's load, and a blocking
one is never passed for it.

Rule 3c: a hang on a busy machine is confirmed with more time. The limit
counts only the time the loop's thread could run, but a UI's other
processes (a browser, a child) are slowed by the machine's load as well.
An example that does not settle within its limit while the machine was
busy (some task waited for a CPU at least a tenth of the time, by the
kernel's pressure figures; by the load average where those are missing) is
built again from the inputs it drew and run with ``HANG_RERUN`` times the
limit, and judged by that run alone (never the first run's scenario again:
its state is what the first run left, such as an observer the check
released once the limit cancelled the ask): settled, its verdicts stand;
not settled, it fails as a hang, and the message says it was given the
time twice.

Rule 4: a set-up error is not a verdict. A factory that raises, or returns
the wrong kind of object, stops the whole run with :class:`SetupError`.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import copy
import functools
import gc
import inspect
import os
import pprint
import re
import threading
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar, cast

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.internal.constants_ast import Constants
from hypothesis.reporting import with_reporter

from ._capabilities import Capabilities
from ._loop import Hung, Judged, LoopResult, Stall, run_bounded
from ._registry import requirements
from ._subject import Remote, Service, Subject

__all__ = [
    "CHECKS",
    "PROFILES",
    "Check",
    "CheckOutcome",
    "Draws",
    "Example",
    "Failure",
    "FailureRecord",
    "SetupError",
    "StallRecord",
    "check",
    "preflight",
]

T = TypeVar("T")
#: A Hypothesis test, or a state machine's factory: what a seed is given to.
Test = TypeVar("Test", bound=Callable[..., object])
Kind = Literal["provider", "service", "binding"]

#: Examples per generated check, by profile.
PROFILES: dict[str, int] = {"quick": 8, "default": 40, "thorough": 250}

#: The requirement a blocked event loop breaks, and the one a task left behind breaks, by kind.
LOOP_REQUIREMENT: dict[str, str] = {"provider": "PRV-LOOP-1", "service": "SVC-LOOP-1"}
LEAK_REQUIREMENT: dict[str, str] = {"provider": "PRV-LEAK-1", "service": "SVC-LEAK-1"}


class Failure(AssertionError):
    """An example broke *requirement*; *message* says how."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.message = message


class SetupError(Exception):
    """The suite could not be set up: a factory raised or returned the wrong kind of object.

    *role* is ``"provider"`` or ``"service"``: whose factory it was.
    """

    def __init__(self, message: str, role: str = "provider") -> None:
        super().__init__(message)
        self.role = role


class _StopRun(BaseException):
    """Ends a Hypothesis run early: a slow failure, or the shrink budget is spent."""


class SetupAbort(BaseException):
    """Ends a Hypothesis run: a set-up error (Rule 4), carried out past Hypothesis."""

    def __init__(self, error: SetupError) -> None:
        super().__init__(str(error))
        self.error = error


class Scenario(Protocol):
    """The asynchronous half of an example."""

    def __call__(self, example: Example, /) -> Coroutine[Any, Any, None]: ...


#: The synchronous half of a check: draws the inputs, returns the scenario.
Build = Callable[["Draws", "Setup"], Scenario]


@dataclass(frozen=True)
class Check:
    """One check of the suite and the requirements it covers."""

    name: str
    kind: Kind
    requirements: tuple[str, ...]
    build: Build
    #: The capabilities it needs; ``None`` means none.
    needs: Callable[[Capabilities], bool] | None = None
    doc: str = ""
    #: When set, the check runs as one property per case (``Setup.case`` names it).
    cases: tuple[str, ...] = ()
    #: The share of the profile's examples each case runs (at least 2).
    case_share: float = 0.25
    #: The share of the profile's examples a check without cases runs (at least 2).
    share: float = 1.0
    #: How many sub-scenarios one example runs, each allowed the whole per-part limit.
    parts: int = 1
    #: Requirements judged only for subjects with these capabilities.
    gates: Mapping[str, Callable[[Capabilities], bool]] = field(
        default_factory=dict[str, Callable[[Capabilities], bool]]
    )
    #: The policy of section 8 the service must declare (:func:`with_policies`)
    #: for the check to run; ``None`` for a check of every service.
    policy: str | None = None


#: Every check, in the order they run.
CHECKS: list[Check] = []


def check(
    name: str,
    *covered: str,
    kind: Kind,
    needs: Callable[[Capabilities], bool] | None = None,
    cases: Sequence[str] = (),
    gates: Mapping[str, Callable[[Capabilities], bool]] | None = None,
    parts: int = 1,
    case_share: float = 0.25,
    share: float = 1.0,
    policy: str | None = None,
) -> Callable[[Build], Build]:
    """Register the decorated build function as the check *name* covering *covered*."""
    # The engine judges the loop and leak requirements on every example it runs.
    implicit = [LOOP_REQUIREMENT[kind], LEAK_REQUIREMENT[kind]] if kind != "binding" else []
    every = (*covered, *(r for r in implicit if r not in covered))

    def register(function: Build) -> Build:
        doc = (function.__doc__ or "").strip().splitlines()[0] if function.__doc__ else ""
        CHECKS.append(
            Check(
                name,
                kind,
                every,
                function,
                needs,
                doc,
                cases=tuple(cases),
                case_share=case_share,
                share=share,
                parts=parts,
                gates=dict(gates or {}),
                policy=policy,
            )
        )
        return function

    return register


@dataclass(frozen=True)
class Setup:
    """What a build function may read: the claim being checked, and the case."""

    capabilities: Capabilities
    bound: float
    case: str = ""


class Draws:
    """Draws an example's inputs and remembers them, so a failure can show the example.

    It also keeps a copy of each value as it was drawn, so that the example
    can be built again with the same inputs (:meth:`again`): a scenario's
    closure holds state its run changes (a request it mutates, an event it
    sets after the ask, even one the limit cancelled), so a run after the
    first is of a scenario built anew, never of the first one again.
    """

    def __init__(self, data: st.DataObject, replay: Sequence[tuple[str, object]] = ()) -> None:
        self._data = data
        # Each value with its repr as drawn: pretty-printing every value cost a
        # twentieth of a run, and only a failure shows them.
        self._drawn: list[tuple[str, object, str]] = []
        #: Each value as drawn, copied before any run could change it.
        self._kept: list[tuple[str, object]] = []
        self._replay = replay
        self._at = 0

    def __call__(self, strategy: st.SearchStrategy[T], label: str) -> T:
        """Draw from *strategy*; *label* names the value in the report.

        Draws made again (:meth:`again`) give the values of the first
        drawing, in order, while the labels asked for match; from the first
        that does not, they draw afresh.
        """
        if self._at < len(self._replay) and self._replay[self._at][0] == label:
            value = cast("T", _copied(self._replay[self._at][1]))
            self._at += 1
        else:
            self._at = len(self._replay)
            value = self._data.draw(strategy)
        self._drawn.append((label, value, repr(value)))
        self._kept.append((label, _copied(value)))
        return value

    def again(self) -> Draws:
        """Draws that give this example's values again, as they were drawn, for a new build."""
        return Draws(self._data, tuple(self._kept))

    @property
    def lines(self) -> list[str]:
        """One entry per drawn value, ``label = value``, pretty-printed as it was drawn."""
        return [f"{label} = {_as_drawn(value, drawn)}" for label, value, drawn in self._drawn]

    def lines_shown(self, show: Callable[[object], str]) -> list[str]:
        """One entry per drawn value, ``label = value``, each value as *show* writes it.

        A subject in another process shows the JSON that crossed the pipe; a
        value *show* cannot write is shown as drawn.
        """
        shown: list[str] = []
        for label, value, drawn in self._drawn:
            try:
                text = show(value)
            except Exception:  # noqa: BLE001 - a display only: as drawn, then
                text = drawn
            shown.append(f"{label} = {text}")
        return shown


#: Values no run can change, kept as they are.
_ATOMS: Final = frozenset({str, bytes, int, float, bool, type(None), complex, range})


def _copied(value: object) -> object:
    """*value* deep-copied (its types kept); as it is where it cannot be copied."""
    if type(value) in _ATOMS:
        return value
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - a lock, a handle: the very value, then
        return value


def _as_drawn(value: object, drawn: str) -> str:
    """*value* pretty-printed, or as it was drawn (*drawn*, its repr then) if it has changed.

    A scenario may change a drawn value (a subject that mutates its request);
    the report shows what was drawn.
    """
    try:
        if repr(value) != drawn:
            value = ast.literal_eval(drawn)  # plain data: the drawn state, pretty-printed
        return pprint.pformat(value, width=96, sort_dicts=False)
    except Exception:  # noqa: BLE001 - not plain data, or a repr that raised: as drawn
        return drawn


@dataclass
class FailureRecord:
    """One failure of one requirement, with the example that shows it."""

    requirement: str
    message: str
    check: str
    example: list[str]
    #: Whether the example is the one Hypothesis shrank it to; it is not when
    #: the subject hung, the shrink budget ran out, or shrinking was off.
    shrunk: bool = True
    #: Why it was not shrunk, in words; ``""`` when it was.
    not_shrunk_because: str = ""
    #: The requirements the same fault failed in the same example, when this is
    #: a knock-on of theirs (a check reports it with ``knock_ons``); empty for
    #: a fault of its own.
    knock_on_of: tuple[str, ...] = ()

    @property
    def cause(self) -> str:
        """The error code or exception type the message names, if any; ``""`` for none.

        An error code (``'ASK_ABORTED'``) comes first, else the type of an
        exception whose repr the message shows (``TypeError(...)``). A recorded
        baseline keeps it beside the check case.
        """
        return failure_cause(self.message)


#: An error code (``'ASK_ABORTED'``, ``ErrorCode.BAD_REQUEST``) in a failure's message.
_CODE: Final = re.compile(r"(?:ErrorCode\.|')([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")
#: An exception type named in a failure's message, as its repr shows it.
_RAISED: Final = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failed|Cancelled))\(")


def failure_cause(message: str) -> str:
    """How a failure happened, in a word a baseline can record: a code, a type, or ``""``.

    The error code the message names, else the exception type whose repr it
    shows, else nothing (a wrong value, say). A recorded baseline
    (``--write-baseline``) keeps it beside the check case, so that the same
    requirement failing another way is reported as a new failure.

    >>> failure_cause("a request whose agent is a NoneType raised TypeError('boom')")
    'TypeError'
    >>> failure_cause("an abort mid-wait gave UserInteractionError('...', 'PROVIDER_DISPOSED')")
    'PROVIDER_DISPOSED'
    >>> failure_cause("the request is still on screen")
    ''
    """
    code = _CODE.search(message)
    if code is not None:
        return code.group(1)
    raised = _RAISED.search(message)
    return raised.group(1) if raised is not None else ""


@dataclass
class StallRecord:
    """How one example's stall was judged (Rule 3a), for the report."""

    check: str
    #: ``"loop"`` (the example's own event loop) or ``"ping"`` (a child's, through the harness).
    where: str
    stall: Stall
    judged: Judged
    #: What decided it: ``"schedstat"`` (the time the thread waited for a CPU),
    #: ``"cpu-time"``, ``"second-run"`` or ``"abandoned"``. A record judged
    #: ``"unsure"`` is one the second run could not tell either (Rule 3b).
    by: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON form used in reports; times in seconds, ``null`` when unknown."""

        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        return {
            "check": self.check,
            "where": self.where,
            "stall": rounded(self.stall.seconds),
            "on_cpu": rounded(self.stall.on_cpu),
            "waiting": rounded(self.stall.waiting),
            "collecting": rounded(self.stall.collecting),
            "others": rounded(self.stall.others),
            "started": rounded(self.stall.started),
            "preempted": self.stall.preempted,
            "judged": self.judged,
            "by": self.by,
        }


@dataclass
class CheckOutcome:
    """How one check ended: per requirement, failures and the counts of the clean run."""

    check: Check
    status: Literal["ran", "skipped"]
    message: str = ""
    failures: dict[str, FailureRecord] = field(default_factory=dict[str, FailureRecord])
    #: Every failing example's record, over every case and repetition, oldest first.
    every_failure: list[FailureRecord] = field(default_factory=list[FailureRecord])
    #: Examples of the clean run that judged each requirement.
    judged: Counter[str] = field(default_factory=Counter[str])
    #: Hypothesis test cases run, over every repetition.
    examples: int = 0
    #: Requirements left unjudged, with the reason (the subject hung too often).
    unjudged: dict[str, str] = field(default_factory=dict[str, str])
    seconds: float = 0.0
    #: Every stall longer than the stall limit, and how it was judged (Rule 3a).
    stalls: list[StallRecord] = field(default_factory=list[StallRecord])
    #: Requirements an example could not judge for the machine's load (Rule 3b),
    #: with why: reported ``untested`` unless they failed.
    untold: dict[str, str] = field(default_factory=dict[str, str])


@dataclass
class Runtime:
    """What the engine runs against, and how hard it tries."""

    subject_factory: Callable[[], object]
    service_factory: Callable[[], object]
    subject_name: str
    service_name: str
    capabilities: Capabilities
    examples: int
    seed: int | None
    bound: float
    shrink: bool = True
    #: Once one of these fails, the check stops repeating itself to judge the others.
    stop_on: frozenset[str] = frozenset()
    #: The ``Subject.name`` of every subject built, for the report.
    subject_names: set[str] = field(default_factory=set[str])
    #: Requirements a recorded baseline names with how they fail: each case of a
    #: check looks for them again, so a new way of failing is seen too.
    recorded: frozenset[str] = frozenset()
    #: The policies of section 8 the service factory declares (:func:`with_policies`).
    policies: frozenset[str] = frozenset()

    def limit(self, parts: int = 1) -> float:
        """Seconds an example of *parts* sub-scenarios may take before it is called hung."""
        return parts * (3 * self.bound + 2.0)

    @property
    def stall_limit(self) -> float:
        """The most of a stall the subject's own code may hold the loop: 0.28 s, or the bound.

        Time the loop's thread spent waiting for a CPU does not count (Rule 3a).
        The heartbeat beats every 10 ms, so a blocking stretch of 0.3 s or
        more is always over it.
        """
        return min(0.28, self.bound)

    @property
    def shrink_budget(self) -> float:
        """Seconds spent shrinking one run's failures before the smallest so far is kept."""
        return max(3.0, 4 * self.bound)


async def _call_factory(factory: Callable[[], object], what: str, role: str) -> object:
    try:
        made = factory()
        if inspect.isawaitable(made):
            made = await made
    except asyncio.CancelledError:
        raise
    except BaseException as error:
        detail = "".join(traceback.format_exception_only(error)).strip()
        raise SetupError(f"the {what} raised {detail}", role) from error
    return made


def require_methods(made: object, methods: Sequence[str], what: str, role: str) -> None:
    """Raise :class:`SetupError` for *role* unless *made*, from the *what*, has each method."""
    missing = [m for m in methods if not callable(getattr(made, m, None))]
    if missing:
        raise SetupError(
            f"the {what} returned {type(made).__name__}, "
            f"which has no {' or '.join(missing)} method",
            role,
        )


class Example:
    """The scenario's view of one example: the subject, the service, and the verdicts."""

    def __init__(self, check: Check, runtime: Runtime, masked: frozenset[str]) -> None:
        self.check = check
        self.capabilities = runtime.capabilities
        self.bound = runtime.bound
        self._runtime = runtime
        self._masked = masked
        self._lock = threading.Lock()
        self._closed = False
        self.judged: set[str] = set()
        self.failures: list[tuple[str, str]] = []
        #: For a knock-on failure, the requirements whose failure brought it.
        self.knock_on: dict[str, tuple[str, ...]] = {}
        self._closers: list[Callable[[], Awaitable[object]]] = []
        #: The requirement a hang now would break, and what is being waited for.
        self.waiting: tuple[str, str] = (check.requirements[0], "the example")
        self._frozen = False
        #: Subjects in other processes (see :class:`Remote`), read after the example.
        self.remotes: list[Remote] = []

    def stage(self, requirement: str, what: str) -> None:
        """Say what the scenario waits for next; a hang there fails *requirement*."""
        if not self._frozen:
            self.waiting = (requirement, what)

    def freeze_stage(self) -> None:
        """The limit was reached: keep the stage, and record nothing the scenario does now.

        What a scenario judges while it is being cancelled (a cancellation
        taken for an outcome, say) says nothing about the subject.
        """
        self._frozen = True
        self.close()

    def done_with(self, *covered: str) -> bool:
        """Whether every one of *covered* already failed in this check.

        A scenario may skip a slow part that judges nothing else.
        """
        return all(requirement in self._masked for requirement in covered)

    def judge(self, *covered: str) -> None:
        """Count this example as one that judged *covered*."""
        with self._lock:
            if not self._closed:
                self.judged.update(covered)

    def fail(
        self,
        requirement: str,
        message: str,
        *also: str,
        knock_ons: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Record that this example breaks *requirement*, and every one of *also*.

        One fault can break several requirements (a defect that went unnoticed
        breaks the rule it violates and the stage that should have refused
        it); each is failed with the same message. *knock_ons* are further
        (requirement, message) pairs the same fault broke as a consequence (a
        duplicated label is also out of option order): each is recorded as a
        knock-on of the others, so that the report says so. Raises
        :class:`Failure`, which ends the example, unless every one of them
        already failed in this check: then the scenario goes on, so that it
        judges the others.
        """
        fresh: list[tuple[str, str]] = []
        causes = (requirement, *also)
        with self._lock:
            if self._closed:
                return
            named = [(broken, message) for broken in causes] + list(knock_ons)
            for broken, said in named:
                self.judged.add(broken)
                if broken not in self._masked and broken not in {r for r, _ in fresh}:
                    self.failures.append((broken, said))
                    fresh.append((broken, said))
            for broken, _ in knock_ons:
                if broken not in causes:
                    self.knock_on.setdefault(broken, causes)
        if fresh:
            raise Failure(*fresh[0])

    def verify(self, requirement: str, ok: bool, message: str | Callable[[], str]) -> bool:
        """Judge *requirement*: pass if *ok*, else :meth:`fail` it. Returns *ok*."""
        self.judge(requirement)
        if not ok:
            self.fail(requirement, message if isinstance(message, str) else message())
        return ok

    def close(self) -> None:
        """Freeze the verdicts; an abandoned scenario can add nothing later."""
        with self._lock:
            self._closed = True

    async def subject(self) -> Subject:
        """A fresh subject from the factory, torn down after the example."""
        name = self._runtime.subject_name
        made = await _call_factory(
            self._runtime.subject_factory, f"subject factory {name}", "provider"
        )
        if not isinstance(made, Subject):
            raise SetupError(
                f"the subject factory {name} returned {type(made).__name__}, not a Subject"
            )
        lacking = [
            f"{part}.{method}"
            for part, method in (("provider", "ask"), ("driver", "perform"), ("driver", "is_shown"))
            if not callable(getattr(getattr(made, part), method, None))
        ]
        if lacking:
            raise SetupError(
                f"the subject factory {name} returned a Subject without {', '.join(lacking)}"
            )
        # A driver mistake is the driver's, never a failure of the provider's requirements.
        not_async = [
            method
            for method in ("perform", "is_shown")
            if not inspect.iscoroutinefunction(getattr(made.driver, method))
        ]
        if not_async:
            driver = type(made.driver).__qualname__
            raise SetupError(
                f"the driver {driver} of {name}: "
                + ", ".join(f"{driver}.{m}" for m in not_async)
                + f" must be async (`async def`), since the suite awaits "
                f"{'it' if len(not_async) == 1 else 'them'}; see the driver skeleton "
                "in the provider guide"
            )
        declared = getattr(made.driver, "capabilities", None)
        if declared is not None and declared != self.capabilities:
            raise SetupError(
                f"the driver of {name} declares {declared}, but the run claims "
                f"{self.capabilities}; declare them on the factory with with_capabilities()"
            )
        if made.aclose is not None:
            self._closers.append(made.aclose)
        self._watch(made.provider)
        self._runtime.subject_names.add(made.name)
        return made

    def _watch(self, made: object) -> None:
        try:
            remote = isinstance(made, Remote)
        except Exception:  # noqa: BLE001 - a hostile subject is judged by the checks, not here
            remote = False
        if remote:
            self.remotes.append(made)  # type: ignore[arg-type] # checked just above

    async def service(self, **options: object) -> Service:
        """A fresh service from the factory, called with a policy's *options* (``gate``)."""
        name = self._runtime.service_name
        factory = self._runtime.service_factory
        made = await _call_factory(
            functools.partial(factory, **options) if options else factory,
            f"service factory {name}",
            "service",
        )
        require_methods(made, ("register_provider", "ask"), f"service factory {name}", "service")
        service: Service = made  # type: ignore[assignment] # checked structurally above
        closer: object = getattr(made, "aclose", None)
        if callable(closer):
            self._closers.append(cast("Callable[[], Awaitable[object]]", closer))
        self._watch(made)
        return service

    async def teardown(self) -> None:
        """Close every subject the example built, newest first."""
        errors: list[Exception] = []
        for closer in reversed(self._closers):
            try:
                await closer()
            except Exception as error:  # noqa: BLE001 - reported by the engine
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise RuntimeError("; ".join(map(repr, errors)))


@dataclass
class _Attempt:
    masked: frozenset[str]
    failures: dict[str, FailureRecord] = field(default_factory=dict[str, FailureRecord])
    judged: Counter[str] = field(default_factory=Counter[str])
    examples: int = 0
    first_failure: float | None = None
    hung: str | None = None
    stalls: list[StallRecord] = field(default_factory=list[StallRecord])
    #: Requirements an example could not judge for the machine's load (Rule 3b), with why.
    untold: dict[str, str] = field(default_factory=dict[str, str])


@functools.cache
def _suite_constants() -> Constants:
    """The constants in the source of this suite and of the reference, every file.

    Always the same set, in a fixed order, whatever the process imported.
    """
    from hypothesis.internal import floats  # noqa: PLC0415
    from hypothesis.internal.conjecture.providers import GLOBAL_CONSTANTS  # noqa: PLC0415
    from hypothesis.internal.constants_ast import _constants_from_source  # noqa: PLC0415

    # A native function in newer Hypothesis, untyped there: read as Any on every version.
    float_to_int: Any = vars(floats)["float_to_int"]

    import dsh_user_interaction  # noqa: PLC0415 - only to find its files

    # Hypothesis's own sorted set, so that the order of the draws is fixed too.
    sorted_set: Any = type(GLOBAL_CONSTANTS.strings)
    found = Constants(
        integers=sorted_set(),
        floats=sorted_set(key=float_to_int),
        bytes=sorted_set(),
        strings=sorted_set(),
    )
    # Each file's syntax tree is a heap of young objects without a cycle among
    # them, freed as soon as it is read: collecting garbage while the trees are
    # built (a full collection among them) cost a fifth of this.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for root in (Path(dsh_user_interaction.__file__).parent, Path(__file__).parent):
            for path in sorted(root.rglob("*.py")):
                try:
                    found |= _constants_from_source(path.read_bytes(), limit=True)
                except Exception:  # noqa: BLE001, S112 - a file Hypothesis cannot read adds nothing
                    continue
    finally:
        if collecting:
            gc.enable()
    return found


@contextlib.contextmanager
def replayable() -> Generator[None]:
    """Draw from the seed alone while the suite's Hypothesis runs.

    Hypothesis mixes into a few draws the constants it finds in the source of
    every local module loaded so far, so one seed drew other examples
    depending on what the process had imported (a pytest run and the command
    that should reproduce its failure differ there), and a verdict could
    depend on which tests ran before. Here that set is fixed: the constants
    of every source file of this suite and of the reference, whether loaded
    or not, and none of the subject's or the tests'. A seed's examples then
    depend on the seed and the suite's version only, and the suite keeps the
    awkward values its own code names. It reaches into Hypothesis's
    internals; if they change, it does nothing (and a test says so).
    """
    try:
        from hypothesis.internal.conjecture import providers  # noqa: PLC0415 - internal
    except ImportError:  # pragma: no cover - another Hypothesis
        yield
        return
    getter = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if getter is None or cache is None:  # pragma: no cover - another Hypothesis
        yield
        return
    try:
        constants = _suite_constants()
    except ImportError:  # pragma: no cover - another Hypothesis
        yield
        return
    # The cache keeps what each kind of draw may choose from, local constants
    # included: the run gets a fresh one, and the process's is put back after.
    # (One cache shared by the suite's runs made a seed's draws depend on the
    # runs before it in the process.)
    providers._get_local_constants = lambda: constants  # noqa: SLF001 - see above
    providers.CONSTANTS_CACHE = type(cache)(1024)
    try:
        yield
    finally:
        providers._get_local_constants = getter  # noqa: SLF001
        providers.CONSTANTS_CACHE = cache


def under_ci() -> bool:
    """Whether ``CI`` is set: a run without a seed is then derandomised."""
    return bool(os.environ.get("CI"))


def derandomized(run_seed: int | None) -> bool:
    """Whether Hypothesis derandomises a run with *run_seed*: it has none, under ``CI``."""
    return run_seed is None and under_ci()


def seeded(test: Test, run_seed: int | None) -> Test:
    """*test* with the run's seed, unless the run is derandomised."""
    return test if derandomized(run_seed) else seed(run_seed or 0)(test)


def suite_settings(
    examples: int, run_seed: int | None, *, shrink: bool, reuse: bool = True
) -> settings:
    """The settings of one Hypothesis run of a suite: *examples* of them, quietly.

    No deadline (the suites bound each example themselves), no database, and
    none of the health checks a slow or large example trips; derandomised as
    :func:`derandomized` says. The phases are explicit, reuse (unless not
    *reuse*), generate, and shrink with *shrink*.
    """
    phases = [Phase.explicit, Phase.generate]
    if reuse:
        phases.insert(1, Phase.reuse)
    if shrink:
        phases.append(Phase.shrink)
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=phases,
        derandomize=derandomized(run_seed),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )


def _run_attempt(item: Check, runtime: Runtime, case: str, attempt: _Attempt) -> None:
    setup = Setup(runtime.capabilities, runtime.bound, case)
    levels = requirements()

    def record(
        requirement: str,
        message: str,
        lines: list[str],
        *,
        why_not: str,
        knock_on_of: tuple[str, ...] = (),
    ) -> None:
        if requirement in attempt.masked:
            return
        label = f"{item.name}[{case}]" if case else item.name
        if not why_not and not runtime.shrink:
            why_not = "shrinking is off for this run"
        attempt.failures[requirement] = FailureRecord(
            requirement, message, label, list(lines), not why_not, why_not, knock_on_of
        )
        if attempt.first_failure is None:
            attempt.first_failure = time.monotonic()

    def example(data: st.DataObject) -> None:
        if (
            attempt.first_failure is not None
            and time.monotonic() - attempt.first_failure > runtime.shrink_budget
        ):
            for failure in attempt.failures.values():
                if failure.shrunk:
                    failure.shrunk = False
                    failure.not_shrunk_because = (
                        f"shrinking stopped after its budget of {runtime.shrink_budget:g} s; "
                        "this is the smallest example found by then"
                    )
            raise _StopRun

        def run_built(drawn: Draws, limit: float) -> tuple[LoopResult, Example]:
            """The example built from *drawn*, run once within *limit*, with a state of its own."""
            for hook in on_example:
                hook(limit + 5 * runtime.bound)
            built = item.build(drawn, setup)
            example = Example(item, runtime, attempt.masked)

            async def run() -> None:
                await built(example)

            found = run_bounded(
                run,
                teardown=example.teardown,
                limit=limit,
                bound=runtime.bound,
                on_limit=example.freeze_stage,
            )
            example.close()
            return found, example

        draws = Draws(data)
        limit = runtime.limit(item.parts)
        result, state = run_built(draws, limit)
        slower = ""
        if not result.settled and _busy_while(result.hung):
            # Rule 3c: on a busy machine, a hang is confirmed with more time before it
            # fails; the example is judged by the run that had the time, built anew from
            # the same inputs (the first run changed its scenario's state).
            first = result.hung
            limit *= HANG_RERUN
            result, state = run_built(draws.again(), limit)
            slower = (
                f"; run again with {HANG_RERUN}x the time, as it first did not settle within "
                f"{limit / HANG_RERUN:g} s on a busy machine{_contention(first)}"
            )

        def run_again() -> list[tuple[str, Stall, Judged | None]]:
            """The same example once more, built anew, for its stalls only (Rule 3a)."""
            again, second = run_built(draws.again(), limit)
            return _stalls(again, second.remotes, runtime.stall_limit)

        attempt.examples += 1
        if isinstance(result.error, SetupError):
            raise SetupAbort(result.error)
        problems: list[tuple[str, str]] = list(state.failures)
        slow = False
        kind = item.kind if item.kind != "binding" else "service"
        transcripts: list[str] = []
        for remote in state.remotes:
            found = _findings(remote, LEAK_REQUIREMENT[kind])
            problems.extend(found)
            transcripts += ["transcript (both directions, oldest first):", *_transcript(remote)]
        if item.kind != "binding" and result.settled:
            state.judged.update((LOOP_REQUIREMENT[kind], LEAK_REQUIREMENT[kind]))
        label = f"{item.name}[{case}]" if case else item.name
        loop_requirement = LOOP_REQUIREMENT[kind]
        judged = _judge_stalls(
            _stalls(result, state.remotes, runtime.stall_limit),
            run_again,
            label,
            # Already untold or failed in this attempt: another run tells nothing new.
            rerun=loop_requirement not in attempt.untold and loop_requirement not in attempt.masked,
        )
        attempt.stalls.extend(judged)
        blocked = next((record for record in judged if record.judged == "blocked"), None)
        unsure = next((record for record in judged if record.judged == "unsure"), None)
        if blocked is None and unsure is not None:
            attempt.untold.setdefault(LOOP_REQUIREMENT[kind], _untold_message(unsure))
        if blocked is not None:
            problems.insert(0, (LOOP_REQUIREMENT[kind], _blocked_message(blocked)))
            # A blocked loop costs its whole stall again in every further try: not shrunk.
            slow = True
        elif not result.settled:
            requirement, what = state.waiting
            why = ""
            if result.ignored_cancel:
                why = f"; it ignores cancellation (still running {runtime.bound:g} s after it)"
            seen = result.hung.describe() if result.hung is not None else ""
            problems.append(
                (requirement, f"{what} did not settle within {limit:g} s{seen}{why}{slower}")
            )
            slow = True
        elif result.error is not None and not isinstance(result.error, Failure):
            requirement, what = state.waiting
            problems.append(
                (requirement, f"while waiting for {what}, the check got {result.error_text}")
            )
        leak = LEAK_REQUIREMENT[kind]
        if result.leftovers:
            left = ", ".join(result.leftovers)
            problems.append((leak, f"left behind after the example, ignoring cancellation: {left}"))
            # Each further example would wait for its own again: stop, unless masked.
            slow = slow or leak not in attempt.masked
        if result.threads:
            running = ", ".join(result.threads)
            problems.append((leak, f"still running after the example: {running}"))
        if result.teardown_error is not None:
            problems.append((leak, f"Subject.aclose: {result.teardown_error}"))
            # A teardown that hangs would cost the bound in every example: stop, unless masked.
            slow = slow or (
                "did not finish" in result.teardown_error and leak not in attempt.masked
            )
        fresh = [(r, m) for r, m in problems if r not in attempt.masked]
        # The example is written down only for a failure.
        lines: list[str] = []
        if fresh:
            # A subject in another process: its example is the JSON that crossed the pipe.
            # ``show`` is optional on a Remote: read it as any attribute.
            shows: list[Callable[[object], str]] = [
                getattr(r, "show")  # noqa: B009 - not part of the Remote protocol
                for r in state.remotes
                if callable(getattr(r, "show", None))
            ]
            show = shows[0] if shows else None
            drawn = draws.lines if show is None else draws.lines_shown(show)
            lines = [*drawn, *transcripts]
        why_not = ""
        if slow:
            why_not = (
                "the event loop was blocked, and every further try would block it again"
                if blocked is not None
                else f"every further try would wait out its limit ({limit:g} s) again, "
                "as this one did"
            )
        for requirement, message in fresh:
            knock_on_of = state.knock_on.get(requirement, ())
            record(requirement, message, lines, why_not=why_not, knock_on_of=knock_on_of)
        for requirement in state.judged:
            attempt.judged[requirement] += 1
        if slow:
            # Not shrunk: every further try would cost the whole limit again.
            attempt.hung = (fresh or problems)[0][0]
            raise _StopRun
        mandatory = [r for r, _ in fresh if r not in levels or levels[r].mandatory]
        if fresh:
            requirement, message = next(((r, m) for r, m in fresh if r in mandatory), fresh[0])
            raise Failure(requirement, message)

    test = given(st.data())(example)
    examples = runtime.examples
    share = item.case_share if item.cases else item.share
    if share != 1.0:
        examples = max(2, int(examples * share))
    test = suite_settings(examples, runtime.seed, shrink=runtime.shrink)(test)
    test = seeded(test, runtime.seed)
    # Note: a private attribute of Hypothesis, the one its own find() sets. Without a
    # key, each run hashes the source of `example` for a database there is none of
    # (settings(database=None)), which cost a fifteenth of a run. An unknown
    # attribute changes nothing.
    test._hypothesis_internal_database_key = None  # type: ignore[attr-defined]  # noqa: SLF001
    try:
        with with_reporter(lambda _value: None), replayable():
            test()
    except SetupAbort as abort:
        raise abort.error from None
    except (_StopRun, Failure, HypothesisException):
        # The verdicts are in the attempt already; Hypothesis's own report adds nothing.
        pass
    except BaseExceptionGroup as group:
        setup_errors = group.subgroup(SetupAbort)
        if setup_errors is not None:
            first: Any = setup_errors.exceptions[0]
            raise first.error from None


#: How many times its first limit an example that did not settle on a busy machine
#: is given when it is run again (Rule 3c).
HANG_RERUN: Final = 6
#: The share of a hang's time in which some task waited for a CPU from which the
#: machine counts as busy (Rule 3c): at idle, a subject that waits on nothing, or
#: spins on one core, leaves it near zero.
BUSY_CONTENTION: Final = 0.1


def _busy_while(hung: Hung | None) -> bool:
    """Whether the machine was busy while an example ran to its limit (Rule 3c).

    Judged by the share of the time some task waited for a CPU; where the
    kernel does not tell, by the load average against the CPUs; where
    neither is known, the machine counts as busy, so a hang is confirmed.
    """
    if hung is None:
        return False
    if hung.contended is not None:
        return hung.contended >= BUSY_CONTENTION
    try:
        load = os.getloadavg()[0]
    except OSError:
        return True
    return load >= (os.cpu_count() or 1)


def _contention(hung: Hung | None) -> str:
    if hung is None or hung.contended is None:
        return ""
    return f" (some task waited for a CPU {hung.contended:.0%} of that time)"


def _stalls(
    result: LoopResult, remotes: Sequence[Remote], limit: float
) -> list[tuple[str, Stall, Judged | None]]:
    """The example's stalls over *limit*, each with its judgement (``None``: unsure).

    One per source: the example's loop, and each child's pings. Of a source's
    stalls, a blocked one is taken before the longest.
    """
    found: list[tuple[str, Stall, Judged | None]] = []
    sources: list[tuple[str, list[Stall]]] = [
        ("loop", [s for s in (result.worst, result.longest) if s is not None])
    ]
    for remote in remotes:
        pings: object = getattr(remote, "ping_stalls", None)
        if callable(pings):
            try:
                listed = cast("list[Stall]", pings())
            except Exception:  # noqa: BLE001 - a proxy's own failure is no stall
                listed = []
            sources.append(("ping", listed))
    for where, stalls in sources:
        over = [stall for stall in stalls if stall.seconds > limit]
        if not over:
            continue
        judged: list[tuple[Stall, Judged | None]] = [(s, s.judged(limit)) for s in over]
        blocked = [pair for pair in judged if pair[1] == "blocked"]
        stall, verdict = blocked[0] if blocked else max(judged, key=lambda pair: pair[0].seconds)
        if verdict is None and where == "loop" and result.abandoned:
            # The loop never ran again within every bound of the example.
            found.append((where, stall, "blocked"))
        else:
            found.append((where, stall, verdict))
    return found


#: How many times more an example whose stall is unsure is run, at most (Rule 3b).
UNSURE_RERUNS: Final = 3


def _judge_stalls(
    found: list[tuple[str, Stall, Judged | None]],
    run_again: Callable[[], list[tuple[str, Stall, Judged | None]]],
    label: str,
    *,
    rerun: bool = True,
) -> list[StallRecord]:
    """Judge an example's stalls; the unsure ones by running the example again (Rules 3a, 3b).

    Without the waits (``None``), a stall that recurs in a second run is
    blocked. With them (``unsure``), the example runs again up to
    :data:`UNSURE_RERUNS` times: a stall blocked in one of those runs is
    blocked, one that is gone or starved in one is starved, and one unsure in
    every one stays unsure. Without *rerun* (the loop requirement is already
    untold or failed), an unsure stall stays unsure without another run.
    """
    records: list[StallRecord] = []
    unsure: list[tuple[str, Stall]] = []
    told = True
    for where, stall, verdict in found:
        if verdict is None or verdict == "unsure":
            unsure.append((where, stall))
            told = told and verdict is None
            continue
        if stall.waiting is not None:
            by = "schedstat"
        elif verdict == "blocked" and where == "loop" and stall.on_cpu is None:
            by = "abandoned"
        else:
            by = "cpu-time"
        records.append(StallRecord(label, where, stall, verdict, by))
    if unsure and not any(record.judged == "blocked" for record in records):
        if not rerun and not told:
            records.extend(StallRecord(label, w, s, "unsure", "schedstat") for w, s in unsure)
            return records
        # Starvation passes; a loop blocked by the subject's own code blocks it again.
        decided: Judged = "unsure"
        for _ in range(1 if told else UNSURE_RERUNS):
            again = [seen for _, _, seen in run_again()]
            if "blocked" in again:
                decided = "blocked"
            elif all(seen == "starved" for seen in again):
                decided = "starved"
            else:
                # Without the waits, a stall that recurs is the subject's (Rule 3a);
                # with them, one that recurs unsure is the machine's to tell (Rule 3b).
                decided = "blocked" if told else "unsure"
            if decided != "unsure":
                break
        records.extend(StallRecord(label, w, s, decided, "second-run") for w, s in unsure)
    return records


def _untold_message(record: StallRecord) -> str:
    """Why the loop requirement is untested: the machine gave too little CPU to tell (Rule 3b)."""
    stall = record.stall
    surely = stall.surely_blocked
    numbers = [f"a stall of {stall.seconds:.2f} s in {record.check}"]
    if stall.waiting is not None:
        numbers.append(f"{stall.waiting:.2f} s of it waiting for a CPU")
    if surely is not None:
        numbers.append(f"at least {surely:.2f} s of it the loop's own")
    if stall.preempted is not None:
        numbers.append(f"its thread preempted {stall.preempted} times")
    where = "the child's event loop" if record.where == "ping" else "the event loop"
    return (
        f"not judged: the machine gave {where} too little CPU to tell a blocking subject "
        f"from a busy machine ({', '.join(numbers)}; the same again each time the example "
        f"ran again, up to {UNSURE_RERUNS} times); run it on a less busy machine"
    )


def _blocked_message(record: StallRecord) -> str:
    """Say what a blocked stall was, with the numbers that judged it."""
    stall = record.stall
    blocked = stall.blocked if stall.blocked is not None else stall.seconds
    collecting = stall.collecting or 0.0
    on_cpu = stall.on_cpu
    if on_cpu is not None and on_cpu - collecting >= blocked / 2:
        what = "a CPU-bound stretch that never awaits"
    else:
        what = "a blocking call, such as time.sleep, instead of an await"
    numbers = [f"a stall of {stall.seconds:.2f} s"]
    if on_cpu is not None:
        numbers.append(f"{on_cpu:.2f} s of it on a CPU")
    if collecting >= 0.005:
        numbers.append(f"{collecting:.2f} s collecting garbage (not counted)")
    if stall.waiting is not None:
        numbers.append(f"{stall.waiting:.2f} s waiting for a CPU")
    asleep = stall.asleep
    if stall.others and asleep is not None and min(stall.others, asleep) >= 0.005:
        credited = min(stall.others, asleep)
        numbers.append(
            f"{credited:.2f} s asleep while another of the suite's threads waited for a CPU "
            "(not counted)"
        )
    how = {
        "schedstat": "judged by the scheduler's statistics",
        "cpu-time": "judged by its CPU time",
        "second-run": "seen again when the example ran a second time",
        "abandoned": "the loop never ran again",
    }[record.by]
    detail = f"{', '.join(numbers)}; {how}"
    if record.where == "ping":
        return (
            f"the child answered a ping only after {stall.seconds:.2f} s, {blocked:.2f} s of it "
            f"not waiting for a CPU: its event loop was blocked ({what}; {detail})"
        )
    return f"the event loop was blocked for {blocked:.2f} s ({what}; {detail})"


def _findings(remote: Remote, leak: str) -> list[tuple[str, str]]:
    try:
        return list(remote.findings())
    except Exception as error:  # noqa: BLE001 - reported against the leak requirement
        return [(leak, f"the subject's findings() raised {error!r}")]


def _transcript(remote: Remote) -> list[str]:
    try:
        return [f"  {line}" for line in remote.transcript()]
    except Exception as error:  # noqa: BLE001 - a report line, no verdict
        return [f"  (the subject's transcript() raised {error!r})"]


#: Called before every example; the command line arms a last-resort watchdog here.
on_example: list[Callable[[float], None]] = []


#: A check is repeated at most this many times to judge its requirements after failures.
_MAX_ATTEMPTS = 12
#: After this many slow failures (hangs), a check stops; what it did not judge is unjudged.
_MAX_HANGS = 2


def preflight(runtime: Runtime, checks: Sequence[Check]) -> None:
    """Build a subject and a service as *checks* will, before any of them runs.

    A factory that raises or returns the wrong object, or a driver whose
    methods are not ``async``, is a :class:`SetupError` at once, before the
    binding checks, never after them. What is built is torn down again.
    """
    kinds = [k for k in ("provider", "service") if any(c.kind == k for c in checks)]
    if not kinds:
        return
    first = next(c for c in checks if c.kind == kinds[0])
    example = Example(first, runtime, frozenset())

    async def probe() -> None:
        if "provider" in kinds:
            await example.subject()
        if "service" in kinds:
            await example.service()

    result = run_bounded(
        probe, teardown=example.teardown, limit=runtime.limit(), bound=runtime.bound
    )
    example.close()
    if isinstance(result.error, SetupError):
        raise result.error
    # Anything else (a factory that hangs, say) is the checks' to judge and report.


def run_check(item: Check, runtime: Runtime) -> CheckOutcome:
    """Run one check until every requirement it can judge has been judged."""
    if item.needs is not None and not item.needs(runtime.capabilities):
        return CheckOutcome(item, "skipped", "the subject's capabilities exclude it")
    if item.policy is not None and item.policy not in runtime.policies:
        return CheckOutcome(
            item, "skipped", f"the service does not declare the {item.policy} policy"
        )
    started = time.monotonic()
    outcome = CheckOutcome(item, "ran")
    # Failures and hangs count across the cases: a requirement found broken in one
    # case is not looked for again, and a subject that hangs stops the whole check.
    masked: set[str] = set()
    hangs = 0
    for case in item.cases or ("",):
        if hangs >= _MAX_HANGS or not runtime.stop_on.isdisjoint(masked):
            break
        masked -= runtime.recorded  # each case may fail them in its own way
        why = f"not judged: {item.name} found too many failures to judge it"
        for _ in range(_MAX_ATTEMPTS):
            attempt = _Attempt(frozenset(masked))
            _run_attempt(item, runtime, case, attempt)
            outcome.examples += attempt.examples
            outcome.stalls.extend(attempt.stalls)
            for requirement, why_untold in attempt.untold.items():
                outcome.untold.setdefault(requirement, why_untold)
            for requirement, failure in attempt.failures.items():
                outcome.failures.setdefault(requirement, failure)
                outcome.every_failure.append(failure)
            if attempt.hung is not None:
                hangs += 1
                why = f"not judged: the subject did not settle in {item.name} ({attempt.hung})"
            if attempt.hung is not None and not attempt.failures:
                break  # the same hang again: no clean run is possible
            if not attempt.failures:
                outcome.judged.update(attempt.judged)
                why = ""
                break
            masked.update(attempt.failures)
            if not runtime.stop_on.isdisjoint(masked):
                why = f"not judged: the run stopped once {item.name} failed what it looked for"
                break
            if all(r in masked for r in item.requirements) or hangs >= _MAX_HANGS:
                break
        if why:
            for requirement in item.requirements:
                gate = item.gates.get(requirement)
                if requirement not in masked and (gate is None or gate(runtime.capabilities)):
                    outcome.unjudged.setdefault(requirement, why)
    outcome.seconds = time.monotonic() - started
    return outcome
