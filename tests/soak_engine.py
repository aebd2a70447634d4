"""The soak engine: many concurrent asks under random interrupts, every outcome judged.

``tests/test_soak.py`` runs it small; ``python -m bench.soak`` (``nox -s soak``)
runs it at full size. A run is a number of rounds. In each round, asks start
over the first loop iterations, each on a fresh request with a unique token,
and a director coroutine fires the round's events at planned loop iterations:

* the providers answer after a random number of loop iterations, answer at
  once, raise an error, ignore the signal, swallow the cancellation and answer
  late, or queue the ask in a ``ScriptedProvider`` for a scripted human who
  answers at a planned iteration (sometimes in the same step as an interrupt);
* each ask's own signal aborts, or a signal it shares with other asks does;
* the caller's task is cancelled;
* an outer ``asyncio.timeout`` around the ask expires;
* the registration is disposed, and a fresh provider registered, mid-round.

Every event is recorded on the ask it reaches while the ask is still pending,
and the outcome is then judged against what the spec allows given those
events: a caller's cancellation always wins (``SVC-CANCEL-1``); then an outer
timeout's ``TimeoutError``; then the first abort or disposal, as
``ASK_ABORTED`` or ``PROVIDER_DISPOSED``, with a late or accepted answer kept on
the error (``SVC-ABORT-3``); with no event, the provider's own answer or error,
the very same object. Answers carry the token of the request they were made
for, so an answer given to the wrong caller fails. After each round nothing
may be left: no task but the main one, no signal listener, no pending record
in the service or the providers, and (at the end) traced memory back within a
margin of the baseline taken before the first round.

Everything is drawn from one seeded :class:`random.Random` and driven by loop
iterations, not by the clock, so a seed replays the same run. The one
exception is ``any_timeouts``, which adds asks whose signal combines
``AbortSignal.timeout`` with a shared signal through ``AbortSignal.any``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import random
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, cast

from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    Registration,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionProvider,
    UserInteractionService,
)

Behaviour = Literal["instant", "delayed", "scripted", "ignores", "swallows", "raises"]
#: How often each provider behaviour is drawn, in percent.
BEHAVIOURS: Final[dict[Behaviour, int]] = {
    "instant": 15,
    "delayed": 25,
    "scripted": 20,
    "ignores": 15,
    "swallows": 10,
    "raises": 15,
}
#: Asks start during the first START loop iterations of a round.
START: Final = 60
#: Delays and event offsets, in loop iterations after an ask starts, stay below this.
SPREAD: Final = 50
#: The director stops firing events after this many iterations; then the round is swept.
HORIZON: Final = START + SPREAD + 10

#: How late (seconds) a signal from ``AbortSignal.timeout`` may still be pending when its ask ends.
SIGNAL_TIMEOUT_SLACK: Final = 0.05

#: An event that reached an ask while it was pending: caller cancel, abort, disposal.
Kind = Literal["cancel", "abort", "dispose"]


class SoakService(Protocol):
    """What the soak needs of a service: the reference one, or one under test."""

    def register_provider(self, provider: UserInteractionProvider) -> Registration: ...

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer: ...


class SoakFailure(AssertionError):
    """An outcome the spec does not allow, a leak, or a hang; the message says how to replay."""


@dataclass(frozen=True)
class Options:
    """One soak run."""

    asks: int = 100_000
    rounds: int = 10
    seed: int = 0
    #: Also combine AbortSignal.timeout with shared signals through AbortSignal.any.
    any_timeouts: bool = False
    #: Seconds a round may take to settle before the run fails instead of hanging.
    bound: float = 120.0
    #: Trace memory with tracemalloc, and check it comes back to the baseline.
    trace_memory: bool = True
    #: How far above the baseline traced memory may end, in bytes. CPython's sets and
    #: dicts keep their largest table when items leave, so rounds of 10,000 asks
    #: leave about 790 KiB of such capacity (512 KiB in asyncio's set of tasks, 128 or
    #: 256 KiB in the service's set of pending calls), the same after every round; a
    #: leak of 11 bytes per ask over 100,000 asks is more than the margin.
    memory_margin: int = 1024 * 1024
    #: Makes the service to soak; the reference ``UserInteractionService`` by default.
    service_factory: Callable[[], SoakService] = UserInteractionService

    def replay(self) -> str:
        """The command that replays this run."""
        flags = " --any-timeouts" if self.any_timeouts else ""
        return f"python -m bench.soak {self.asks} --rounds {self.rounds} --seed {self.seed}{flags}"


@dataclass
class Report:
    """What a soak run did; every count is of asks, except where it says otherwise."""

    options: Options
    outcomes: Counter[str] = field(default_factory=Counter[str])
    behaviours: Counter[str] = field(default_factory=Counter[str])
    #: Scripted answers accepted, then overtaken by an abort or a disposal in the same step.
    accepted_then_interrupted: int = 0
    #: Scripted answers refused with InvalidStateError because an interrupt came first.
    refused_answers: int = 0
    disposals: int = 0
    seconds: float = 0.0
    memory_baseline: int = 0
    memory_peak: int = 0
    memory_final: int = 0
    memory_after_rounds: list[int] = field(default_factory=list[int])

    @property
    def asks(self) -> int:
        return sum(self.outcomes.values())

    def summary(self) -> str:
        """A plain-text summary, for the command line."""
        rate = self.asks / self.seconds if self.seconds else 0.0
        lines = [
            f"seed {self.options.seed}: {self.asks:,} asks in {self.options.rounds} rounds, "
            f"{self.seconds:.1f} s, {rate:,.0f} asks/s",
            "outcomes:",
            *(f"  {kind:38} {count:>8,}" for kind, count in sorted(self.outcomes.items())),
            "providers:",
            *(f"  {kind:38} {count:>8,}" for kind, count in sorted(self.behaviours.items())),
            "scripted answers accepted, then overtaken by an abort or a disposal in the same "
            f"step: {self.accepted_then_interrupted:,} (each kept on error.answer)",
            f"scripted answers refused after an interrupt: {self.refused_answers:,}",
            f"disposals: {self.disposals:,}",
        ]
        if self.options.trace_memory:
            kib = 1024
            after = ", ".join(
                f"{(memory - self.memory_baseline) / kib:+,.0f}"
                for memory in self.memory_after_rounds
            )
            lines += [
                f"traced memory: baseline {self.memory_baseline / kib:,.1f} KiB, "
                f"peak {self.memory_peak / kib:,.0f} KiB "
                f"({(self.memory_peak - self.memory_baseline) / kib:+,.0f}), "
                f"final {self.memory_final / kib:,.1f} KiB "
                f"({(self.memory_final - self.memory_baseline) / kib:+,.1f}; "
                f"margin {self.options.memory_margin / kib:,.0f})",
                f"traced memory after each round, KiB above the baseline: {after}",
            ]
        return "\n".join(lines)


@dataclass(eq=False)
class Ask:
    """One ask: what was planned, and what happened to it."""

    number: int
    token: str
    behaviour: Behaviour
    #: Loop iterations before the provider answers or raises, or answers late after
    #: swallowing its cancellation.
    delay: int
    request: AskUserQuestionRequest
    signal: AbortSignal
    answer: AskUserQuestionAnswer
    #: What a raising provider raises; a fresh object for each ask.
    error: BaseException | None
    outer_timeout: bool
    #: Its signal combines AbortSignal.timeout with a shared one (``any_timeouts``).
    signal_timeout: bool = False
    #: When (loop time) that timeout is due.
    signal_deadline: float = 0.0
    settled_at: float = 0.0
    task: asyncio.Task[AskUserQuestionAnswer] | None = None
    timeout: asyncio.Timeout | None = None
    started: bool = False
    #: The epoch of the provider that was shown the ask, once it was.
    shown_by: int | None = None
    #: The events that reached the ask while it was pending, in order, with a sequence number.
    events: list[tuple[Kind, int]] = field(default_factory=list[tuple[Kind, int]])
    #: Whether the first abort came before the ask started (so nothing was shown).
    aborted_before_start: bool = False
    #: The sequence number at which the scripted human's answer was accepted.
    accepted: int | None = None
    refused: bool = False
    settled: int = 0
    remove_witness: Callable[[], None] = field(default=lambda: None)

    @property
    def pending(self) -> bool:
        return self.task is None or not self.task.done()

    @property
    def timed_out(self) -> bool:
        """Whether the outer timeout expired while the ask was pending."""
        return self.timeout is not None and self.timeout.expired()

    def describe(self) -> str:
        return (
            f"ask {self.number} ({self.token}): provider {self.behaviour}, delay {self.delay}, "
            f"outer timeout {self.timeout if self.outer_timeout else None}, "
            f"signal timeout {self.signal_timeout}, "
            f"started {self.started}, shown by provider {self.shown_by}, "
            f"events {self.events}, accepted at {self.accepted}, refused {self.refused}"
        )


def _token_of(request: AskUserQuestionRequest) -> str:
    token = cast("Mapping[str, object]", request)["x-soak-token"]
    assert isinstance(token, str)
    return token


async def _steps(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


class SoakProvider:
    """One registration's provider: it behaves, per ask, as the ask's plan says.

    It finds the plan by the token of the request it is given, so a request
    routed to the wrong ask would be answered with the wrong ask's answer.
    """

    def __init__(self, soak: Soak, epoch: int) -> None:
        self.soak = soak
        self.epoch = epoch
        self.scripted = ScriptedProvider()
        #: The asks this provider is showing.
        self.showing: set[Ask] = set()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        ask = self.soak.by_token[_token_of(request)]
        if ask.request is not request:
            raise self.soak.problem(
                f"the provider was given a copy of the request of {ask.describe()}"
            )
        if ask.shown_by is not None:
            raise self.soak.problem(f"{ask.describe()} was shown twice")
        ask.shown_by = self.epoch
        self.showing.add(ask)
        try:
            return await self._behave(ask, request)
        finally:
            self.showing.discard(ask)

    async def _behave(self, ask: Ask, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if ask.behaviour == "instant":
            return ask.answer
        if ask.behaviour == "delayed":
            await _steps(ask.delay)
            return ask.answer
        if ask.behaviour == "raises":
            await _steps(ask.delay)
            assert ask.error is not None
            raise ask.error
        if ask.behaviour == "scripted":
            return await self.scripted.ask(request)
        if ask.behaviour == "ignores":
            await asyncio.Event().wait()
            raise AssertionError  # pragma: no cover - the wait never ends
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            # Swallows its cancellation, then answers late; a second one propagates.
            await _steps(ask.delay)
            return ask.answer
        raise AssertionError  # pragma: no cover - the wait never ends


class Soak:
    """One soak run: call :meth:`run` inside an event loop."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        self.report = Report(options)
        self.service = options.service_factory()
        self.epoch = 0
        self.numbers = itertools.count(1)
        self.provider = SoakProvider(self, self.epoch)
        self.providers: list[SoakProvider] = [self.provider]
        self.registration: Registration = self.service.register_provider(self.provider)
        self.by_token: dict[str, Ask] = {}
        self.sequence = 0
        self.round = 0
        self._schedule: dict[int, list[Callable[[], None]]] = {}
        self._iteration = 0
        self._signals: list[AbortSignal] = []
        self.problems: list[SoakFailure] = []
        #: Answers of left-behind provider calls, as the loop's exception handler got them.
        self.reported: list[object] = []

    def fail(self, problem: str) -> SoakFailure:
        return SoakFailure(
            f"{problem}\n(round {self.round} of seed {self.options.seed}; "
            f"replay: {self.options.replay()})"
        )

    def problem(self, problem: str) -> SoakFailure:
        """Record a problem seen inside the seam; it fails the round once the asks settle."""
        failure = self.fail(problem)
        self.problems.append(failure)
        return failure

    def tick(self) -> int:
        self.sequence += 1
        return self.sequence

    async def run(self) -> Report:
        """Run every round and return the report; raise :class:`SoakFailure` on a problem."""
        options = self.options
        tracing = options.trace_memory and not tracemalloc.is_tracing()
        if tracing:
            tracemalloc.start()
        loop = asyncio.get_running_loop()
        handler = loop.get_exception_handler()
        loop.set_exception_handler(self._on_exception)
        try:
            gc.collect()
            if options.trace_memory:
                tracemalloc.reset_peak()
                self.report.memory_baseline = tracemalloc.get_traced_memory()[0]
            started = time.perf_counter()
            per_round, extra = divmod(options.asks, options.rounds)
            for number in range(options.rounds):
                self.round = number + 1
                await self._round(per_round + (number < extra))
                gc.collect()
                if options.trace_memory:
                    self.report.memory_after_rounds.append(tracemalloc.get_traced_memory()[0])
            self.report.seconds = time.perf_counter() - started
            self._check_nothing_left([])
            if options.trace_memory:
                self.report.memory_final, self.report.memory_peak = tracemalloc.get_traced_memory()
                grown = self.report.memory_final - self.report.memory_baseline
                if grown > options.memory_margin:
                    raise self.fail(
                        f"traced memory ended {grown:,} bytes above its baseline, more than "
                        f"the margin of {options.memory_margin:,}: "
                        f"after each round {self.report.memory_after_rounds}"
                    )
        finally:
            loop.set_exception_handler(handler)
            if tracing:
                tracemalloc.stop()
        return self.report

    # -- planning --------------------------------------------------------------------------

    def _plan(self, count: int) -> tuple[list[Ask], dict[int, list[Callable[[], None]]]]:
        rng = self.rng
        schedule: dict[int, list[Callable[[], None]]] = {}

        def at(iteration: int, action: Callable[[], None]) -> None:
            schedule.setdefault(iteration, []).append(action)

        shared: list[AbortController] = []
        group_left = 0
        asks: list[Ask] = []
        behaviours = list(BEHAVIOURS)
        weights = list(BEHAVIOURS.values())
        for index in range(count):
            number = next(self.numbers)
            token = f"soak-{self.round}-{index}-{rng.getrandbits(32):08x}"
            behaviour: Behaviour = rng.choices(behaviours, weights)[0]
            start = rng.randrange(START)
            if group_left == 0 and rng.random() < 0.1:
                shared.append(AbortController())
                group_left = rng.randint(2, 20)
            own: AbortController | None = None
            if group_left:
                group_left -= 1
                signal = shared[-1].signal
            else:
                own = AbortController()
                signal = own.signal
            signal_timeout, deadline = False, 0.0
            if self.options.any_timeouts and rng.random() < 0.1:
                # Note: AbortSignal.any and AbortSignal.timeout only in this mode, for now.
                seconds = rng.uniform(0.001, 0.02)
                base = shared[-1].signal if shared else signal
                signal = AbortSignal.any([AbortSignal.timeout(seconds), base])
                deadline = asyncio.get_running_loop().time() + seconds
                behaviour, signal_timeout = "ignores", True
            question_id = f"ask-{number}"
            answer: AskUserQuestionAnswer = {
                "answers": [{"id": question_id, "selected": [], "custom": token}]
            }
            error: BaseException | None = None
            if behaviour == "raises":
                error = (
                    UserInteractionError.of(ErrorCode.ASK_CANCELLED)
                    if rng.random() < 0.5
                    else RuntimeError(f"the provider failed for {token}")
                )
            request = cast(
                "AskUserQuestionRequest",
                {
                    "questions": [{"id": question_id, "question": f"Token {token}?"}],
                    "signal": signal,
                    "x-soak-token": token,
                },
            )
            ask = Ask(
                number=number,
                token=token,
                behaviour=behaviour,
                delay=rng.randrange(SPREAD),
                request=request,
                signal=signal,
                answer=answer,
                error=error,
                outer_timeout=not signal_timeout and rng.random() < 0.3,
                signal_timeout=signal_timeout,
                signal_deadline=deadline,
            )
            self.by_token[token] = ask
            asks.append(ask)
            self.report.behaviours[behaviour] += 1
            at(start, functools.partial(self._start, ask))
            if signal_timeout:
                continue  # only its signal's timeout may end it
            # A provider that never answers on its own is interrupted more often.
            stubborn = behaviour in {"ignores", "swallows"}
            if own is not None and rng.random() < (0.6 if stubborn else 0.25):
                at(start + rng.randrange(SPREAD), own.abort)
            if rng.random() < (0.25 if stubborn else 0.1):
                at(start + rng.randrange(SPREAD), functools.partial(self._cancel, ask))
            if ask.outer_timeout and rng.random() < 0.5:
                at(start + rng.randrange(SPREAD), functools.partial(self._expire, ask))
            if behaviour == "scripted" and rng.random() < 0.85:
                then: Callable[[], None] | None = None
                if rng.random() < 0.3:
                    # An interrupt in the very step of the human's answer.
                    interrupts: list[Callable[[], None]] = [
                        functools.partial(self._cancel, ask),
                        functools.partial(self._expire, ask),
                    ]
                    if own is not None:
                        interrupts.append(own.abort)
                    then = rng.choice(interrupts)
                at(start + ask.delay, functools.partial(self._human, ask, then))
        for controller in shared:
            if rng.random() < 0.7:
                at(rng.randrange(START // 2, START + SPREAD), controller.abort)
        at(rng.randrange(START // 2, HORIZON), self._dispose)
        for actions in schedule.values():
            rng.shuffle(actions)
        self._signals = [controller.signal for controller in shared]
        return asks, schedule

    # -- events ----------------------------------------------------------------------------

    def _start(self, ask: Ask) -> None:
        if ask.signal.aborted:
            # Already aborted (a shared signal, earlier): nothing may be shown.
            ask.events.append(("abort", self.tick()))
            ask.aborted_before_start = True
        else:

            def witness(_signal: AbortSignal) -> None:
                if ask.pending:
                    ask.events.append(("abort", self.tick()))
                    if not ask.started:
                        ask.aborted_before_start = True

            ask.remove_witness = ask.signal.add_listener(witness)
        ask.task = asyncio.ensure_future(self._asking(ask))
        ask.task.add_done_callback(lambda _task: self._settled(ask))

    async def _asking(self, ask: Ask) -> AskUserQuestionAnswer:
        ask.started = True
        if not ask.outer_timeout:
            return await self.service.ask(ask.request)
        async with asyncio.timeout(None) as timeout:
            ask.timeout = timeout
            return await self.service.ask(ask.request)

    def _settled(self, ask: Ask) -> None:
        ask.settled += 1
        ask.settled_at = asyncio.get_running_loop().time()
        ask.remove_witness()

    def _cancel(self, ask: Ask) -> None:
        if ask.task is None:
            self._later(lambda: self._cancel(ask))  # not created yet
            return
        if not ask.task.done():
            ask.events.append(("cancel", self.tick()))
            ask.task.cancel()

    def _expire(self, ask: Ask) -> None:
        """Make the outer timeout expire: at once, as loop iterations go."""
        if not ask.outer_timeout or not ask.pending or ask.timed_out:
            return
        if ask.timeout is None:
            self._later(lambda: self._expire(ask))  # not entered yet
            return
        ask.timeout.reschedule(asyncio.get_running_loop().time())

    def _human(self, ask: Ask, then: Callable[[], None] | None) -> None:
        if not ask.pending:
            return
        if ask.shown_by is None:
            self._later(lambda: self._human(ask, then))  # not shown yet
            return
        provider = self.providers[ask.shown_by]
        for pending in provider.scripted.pending:
            if pending.request is ask.request:
                try:
                    pending.answer(ask.answer)
                except asyncio.InvalidStateError as refusal:
                    ask.refused = True
                    if not ask.events and not ask.timed_out:
                        problem = f"an answer was refused before any interrupt: {ask.describe()}"
                        raise self.fail(problem) from refusal
                else:
                    ask.accepted = self.tick()
                break
        if then is not None:
            then()

    def _dispose(self) -> None:
        old = self.provider
        showing = [ask for ask in old.showing if ask.pending]
        sequence = self.tick()
        for ask in showing:
            ask.events.append(("dispose", sequence))
        self.registration.dispose()
        self.report.disposals += 1
        self.epoch += 1
        self.provider = SoakProvider(self, self.epoch)
        self.providers.append(self.provider)
        self.registration = self.service.register_provider(self.provider)

    def _later(self, action: Callable[[], None]) -> None:
        self._schedule.setdefault(self._iteration + 1, []).append(action)

    # -- a round ---------------------------------------------------------------------------

    async def _round(self, count: int) -> None:
        asks, self._schedule = self._plan(count)
        try:
            await self._drive(asks)
        except BaseException:
            await self._abandon(asks)
            raise
        shared = self._signals
        # Fresh containers: a dict or list keeps its largest size after its items go.
        self.by_token = {}
        self.reported = []
        self._signals = []
        self._schedule = {}
        self.providers = [self.provider]
        self.provider.epoch = self.epoch = 0
        if self.options.any_timeouts:
            # A combined signal keeps its listener on its sources while it lives.
            del asks
            gc.collect()
            self._check_listeners(shared, "shared signals, once their asks were gone")

    async def _abandon(self, asks: list[Ask]) -> None:
        """After a failure, end every ask and retrieve its outcome, so nothing is logged."""
        tasks = [ask.task for ask in asks if ask.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1)
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()

    async def _drive(self, asks: list[Ask]) -> None:
        self._iteration = 0
        while self._iteration < HORIZON or self._iteration in self._schedule:
            if self._iteration > 2 * HORIZON:
                raise self.fail("the director was still postponing events long after the horizon")
            for action in self._schedule.pop(self._iteration, ()):
                action()
            self._iteration += 1
            await asyncio.sleep(0)
        tasks = [ask.task for ask in asks if ask.task is not None]
        assert len(tasks) == len(asks), "every ask was started"
        if self.options.any_timeouts:
            relying = [task for ask, task in zip(asks, tasks, strict=True) if ask.signal_timeout]
            await self._settle(relying, "asks whose signal combines AbortSignal.timeout")
        self._dispose()  # the sweep: whatever is still pending ends now
        await self._settle(tasks, "asks after the final disposal")
        await asyncio.sleep(0)  # let the done callbacks run
        await self._left_calls_end()
        if self.problems:
            raise self.problems[0]
        for ask in asks:
            self._judge(ask)
        self._check_nothing_left(asks)
        shared = {id(signal) for signal in self._signals}
        if self.options.any_timeouts:
            self._check_listeners(
                [ask.signal for ask in asks if id(ask.signal) not in shared], "signals"
            )
        else:
            self._check_listeners([*self._signals, *(ask.signal for ask in asks)], "signals")

    async def _left_calls_end(self) -> None:
        """Wait, within the bound, for provider calls a settled ask left behind to end."""
        deadline = time.monotonic() + self.options.bound
        while any(p.showing for p in self.providers) and time.monotonic() < deadline:  # noqa: ASYNC110 - the providers' calls end on their own; polled with a bound
            await asyncio.sleep(0.001)

    async def _settle(self, tasks: list[asyncio.Task[AskUserQuestionAnswer]], what: str) -> None:
        if not tasks:
            return
        _, stuck = await asyncio.wait(tasks, timeout=self.options.bound)
        if stuck:
            stuck_asks = [ask for ask in self.by_token.values() if ask.task in stuck]
            examples = "\n".join(ask.describe() for ask in stuck_asks[:5])
            for task in stuck:
                task.cancel()
            await asyncio.wait(stuck, timeout=1)
            raise self.fail(
                f"{len(stuck)} {what} were still pending {self.options.bound:g} s later:\n"
                f"{examples}"
            )

    def _check_listeners(self, signals: list[AbortSignal], what: str) -> None:
        listening = [signal for signal in signals if signal.listener_count]
        if listening:
            raise self.fail(
                f"{len(listening)} {what} still have listeners, "
                f"e.g. {listening[0].listener_count} on {listening[0]!r}"
            )

    def _check_nothing_left(self, asks: list[Ask]) -> None:
        others = asyncio.all_tasks() - {asyncio.current_task()}
        if others:
            raise self.fail(f"{len(others)} tasks left behind, e.g. {next(iter(others))!r}")
        held = getattr(self.service, "pending_count", 0)
        if held:
            raise self.fail(f"the service still holds {held} asks")
        for provider in self.providers:
            if provider.showing or provider.scripted.pending:
                raise self.fail(
                    f"provider {provider.epoch} still shows {len(provider.showing)} asks, "
                    f"{len(provider.scripted.pending)} of them scripted"
                )
        for ask in asks:
            if ask.settled != 1:
                raise self.fail(f"{ask.describe()} settled {ask.settled} times")

    # -- judging ---------------------------------------------------------------------------

    def _reported(self, answer: object) -> bool:
        """Whether a left-behind provider call's *answer* reached the loop's exception handler."""
        return any(found is answer for found in self.reported)

    def _on_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if "answer" in context:
            self.reported.append(context["answer"])
            return
        loop.default_exception_handler(context)

    def _judge(self, ask: Ask) -> None:
        task = ask.task
        assert task is not None
        kinds: list[Kind] = [kind for kind, _ in ask.events]
        outcome: object = (
            asyncio.CancelledError() if task.cancelled() else task.exception() or task.result()
        )
        problem = self._problem(ask, task, kinds, outcome)
        if problem:
            raise self.fail(f"{problem}\n{ask.describe()}\noutcome {outcome!r}")

    def _problem(
        self,
        ask: Ask,
        task: asyncio.Task[AskUserQuestionAnswer],
        kinds: list[Kind],
        outcome: object,
    ) -> str | None:
        outcomes = self.report.outcomes
        late = ask.settled_at - ask.signal_deadline
        if ask.signal_timeout and not ask.signal.aborted and late > SIGNAL_TIMEOUT_SLACK:
            return (
                "a signal from AbortSignal.any([AbortSignal.timeout(...), shared]) had not "
                f"aborted {late * 1000:.1f} ms after its timeout was due"
            )
        if "cancel" in kinds:
            # SVC-CANCEL-1: the caller's cancellation wins over everything else.
            if not task.cancelled():
                return "a caller's cancellation was lost"
            if task.cancelling() != kinds.count("cancel"):
                return (
                    f"the caller's task has {task.cancelling()} cancellation requests, "
                    f"not the caller's {kinds.count('cancel')}"
                )
            outcomes["cancelled by the caller"] += 1
            return None
        if task.cancelling() != 0:
            return f"{task.cancelling()} cancellation requests were left on the caller's task"
        if ask.timed_out:
            if not isinstance(outcome, TimeoutError):
                return "the outer timeout expired, but the ask did not raise TimeoutError"
            outcomes["outer timeout"] += 1
            return None
        first = next(((kind, seq) for kind, seq in ask.events if kind != "cancel"), None)
        if first is not None:
            kind, sequence = first
            code = ErrorCode.ASK_ABORTED if kind == "abort" else ErrorCode.PROVIDER_DISPOSED
            if not isinstance(outcome, UserInteractionError) or outcome.code is not code:
                return f"expected {code} after the first interrupt, a {kind}"
            if ask.aborted_before_start and ask.shown_by is not None:
                return "an ask whose signal had aborted was shown (SVC-ORDER-1)"
            kept: object = None
            if ask.shown_by is not None and (
                ask.behaviour == "swallows"
                or (ask.accepted is not None and ask.accepted < sequence)
            ):
                kept = ask.answer
            reported = kept is not None and outcome.answer is None and self._reported(kept)
            if outcome.answer is not kept and not reported:
                return f"error.answer is {outcome.answer!r}, expected {kept!r} (SVC-ABORT-3)"
            if ask.accepted is not None:
                self.report.accepted_then_interrupted += 1
            self.report.refused_answers += ask.refused
            keeps = ", late answer kept" if kept is not None else ""
            if reported:
                # Still busy when its grace ended, it was left behind (SVC-LEAVE-1), and its
                # answer went to the loop's exception handler: reported, never dropped.
                keeps = ", late answer reported"
            before = " before it started" if ask.aborted_before_start else ""
            outcomes[f"{code}{before}{keeps}"] += 1
            return None
        if ask.refused:
            return "an answer was refused, but no interrupt reached the ask"
        if ask.behaviour == "raises":
            if outcome is not ask.error:
                return "the provider's error did not propagate unchanged (SVC-ERR-1)"
            outcomes["provider error"] += 1
            return None
        if ask.behaviour in {"ignores", "swallows"}:
            return "an ask whose provider never answers settled without an interrupt"
        if outcome is not ask.answer:
            return "no interrupt reached the ask, yet it did not return its provider's answer"
        if ask.behaviour == "scripted" and ask.accepted is None:
            return "a scripted ask returned an answer nobody gave"
        item = ask.answer["answers"][0]
        if item["id"] != ask.request["questions"][0]["id"] or item.get("custom") != ask.token:
            return "the answer carries another ask's token"
        outcomes["answered"] += 1
        return None


def soak(options: Options) -> Report:
    """Run a soak in a fresh event loop."""

    async def main() -> Report:
        return await Soak(options).run()

    return asyncio.run(main())
