"""The surfaces check: one outcome per ask, every surface told, nothing lost (``SURF-*``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, cast

from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
)

from .._behaviour import Behaviour, Dismiss, Nothing, expected_answer
from .._engine import Draws, Example, Scenario, Setup, check
from .._stand_ins import code_of
from ..strategies import requests
from ._driver import SurfaceDriver, Told, surface_driver
from ._program import Act, CloseWhile, Race, Reload, Step, Withdraw, programs

__all__: list[str] = []

T = TypeVar("T")

_REQUESTS: Final = requests(max_questions=2)
_ASKS: Final = st.integers(3, 4)
ONE, TELL, RELOAD, CLOSE = "SURF-ONE-1", "SURF-TELL-1", "SURF-RELOAD-1", "SURF-CLOSE-1"


@dataclass
class _Run:
    """One example's asks, as the check follows them."""

    example: Example
    driver: SurfaceDriver
    surfaces: int
    asks: list[AskUserQuestionRequest]
    controllers: list[AbortController]
    tasks: Sequence[asyncio.Future[AskUserQuestionAnswer]]
    #: How each ended ask ended, by its index.
    ended: dict[int, str] = field(default_factory=dict[int, str])

    def pending(self) -> list[int]:
        return [index for index in range(len(self.asks)) if index not in self.ended]

    def name(self, index: int) -> str:
        return f"ask {index + 1}"

    async def bounded(self, requirement: str, what: str, call: Awaitable[T]) -> T:
        """Await the driver's *call*, staged under *requirement*: a hang is reported there."""
        self.example.stage(requirement, what)
        return await call

    async def shown(self, requirement: str, surface: int, index: int, why: str) -> None:
        """Wait until *surface* shows ask *index* (the driver fails when it never does).

        An ask that ends meanwhile, which no step ended, fails *requirement*.
        """
        self.example.stage(requirement, f"surface {surface} showing {self.name(index)}, {why}")
        task = self.tasks[index]
        showing = asyncio.ensure_future(self.driver.perform_on(surface, self.asks[index], _NOTHING))
        watched: set[asyncio.Future[Any]] = {showing, task}
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        if showing.done():
            showing.result()  # a driver that raises is reported under this stage
            return
        showing.cancel()
        await asyncio.wait({showing}, timeout=self.example.bound)
        ended = asyncio.CancelledError() if task.cancelled() else task.exception() or task.result()
        self.example.fail(
            requirement,
            f"{self.name(index)} ended with {_shown_outcome(ended)} before any step ended it, "
            f"while surface {surface} was to show it ({why})",
        )
        self.ended[index] = "ended by mistake"

    async def not_shown(self, requirement: str, surface: int, index: int, why: str) -> None:
        still = await self.bounded(
            requirement,
            f"surface {surface}'s is_shown_on({self.name(index)})",
            self.driver.is_shown_on(surface, self.asks[index]),
        )
        self.example.verify(
            requirement,
            not still,
            lambda: f"surface {surface} still offers {self.name(index)}, {why}",
        )

    async def outcome(self, index: int, requirement: str) -> object | None:
        """The ask's outcome (its answer, or the error it raised); ``None`` when it hung."""
        task = self.tasks[index]
        self.example.stage(requirement, f"the provider's ask() of {self.name(index)}")
        done, _ = await asyncio.wait({task}, timeout=self.example.bound)
        if not done:
            self.example.fail(
                requirement,
                f"{self.name(index)} was still pending {self.example.bound:g} s after "
                "the step that should have ended it",
            )
            return None
        if task.cancelled():
            return asyncio.CancelledError()
        return task.exception() or task.result()

    def others_pending(self, index: int, requirement: str) -> None:
        """No ask but *index* ended in its step (``SURF-ONE-1``)."""
        for other in self.pending():
            if other != index and self.tasks[other].done():
                self.example.fail(
                    requirement,
                    f"{self.name(other)} ended in the step that ended {self.name(index)}",
                )
                self.ended[other] = "ended by mistake"


_NOTHING: Final = Nothing()


def _ending_of(outcome: object) -> str:
    """The spec's word for how an ask ended with *outcome*."""
    if isinstance(outcome, BaseException):
        code = code_of(outcome)
        if code == ErrorCode.ASK_CANCELLED:
            return "dismissed"
        if code == ErrorCode.ASK_ABORTED:
            return "withdrawn"
        return f"failed with {outcome!r}"
    return "answered"


def _did(request: AskUserQuestionRequest, behaviour: Behaviour, outcome: object) -> bool:
    """Whether *outcome* is what *behaviour* on *request* must give."""
    if isinstance(behaviour, Dismiss):
        return isinstance(outcome, BaseException) and code_of(outcome) == ErrorCode.ASK_CANCELLED
    if isinstance(outcome, BaseException):
        return False
    return outcome == expected_answer(request, cast("Sequence[Any]", behaviour))


def _shown_outcome(outcome: object) -> str:
    return repr(outcome) if isinstance(outcome, BaseException) else f"the answer {outcome!r}"


async def _ended(run: _Run, index: int, requirement: str) -> tuple[object, str] | None:
    """The outcome of the ask a step ended, and how it ended; ``None`` when it hung.

    No other ask may end in the same step (``SURF-ONE-1``).
    """
    outcome = await run.outcome(index, requirement)
    if outcome is None:
        return None
    run.ended[index] = how = _ending_of(outcome)
    run.others_pending(index, ONE)
    return outcome, how


async def _told(run: _Run, surface: int, index: int, requirement: str) -> Told | None:
    return await run.bounded(
        requirement,
        f"what surface {surface} says of how {run.name(index)} ended",
        run.driver.told_on(surface, run.asks[index]),
    )


async def _judge_told(
    run: _Run, index: int, how: str, open_surfaces: Sequence[int], winner: int | None
) -> None:
    """Every open surface stops offering the ended ask and says how it ended (``SURF-TELL-1``)."""
    for surface in open_surfaces:
        told = await _told(run, surface, index, TELL)
        name = run.name(index)
        if told is None:
            run.example.fail(TELL, f"surface {surface} never says how {name} ended ({how})")
            continue
        if not run.example.verify(
            TELL,
            told.how == how,
            f"surface {surface} says {name} was {told.how}; it was {how}",
        ):
            continue
        if surface == winner:
            run.example.verify(
                TELL,
                told.here is True,
                f"surface {surface}, whose action ended {name}, does not say so",
            )
        else:
            whose = "the agent's withdrawal" if winner is None else f"surface {winner}'s action"
            run.example.verify(
                TELL,
                told.here is not True,
                f"surface {surface} says its own action ended {name}; {whose} did",
            )
        await run.not_shown(TELL, surface, index, f"after it ended ({how})")


async def _act(run: _Run, step: Act, open_surfaces: Sequence[int]) -> None:
    request = run.asks[step.ask]
    await run.bounded(
        ONE,
        f"surface {step.surface} doing {step.behaviour!r} on {run.name(step.ask)}",
        run.driver.perform_on(step.surface, request, step.behaviour),
    )
    ended = await _ended(run, step.ask, ONE)
    if ended is None:
        return
    outcome, how = ended
    if not run.example.verify(
        ONE,
        _did(request, step.behaviour, outcome),
        lambda: (
            f"{run.name(step.ask)} ended with {_shown_outcome(outcome)}; surface "
            f"{step.surface} did {step.behaviour!r}"
        ),
    ):
        return
    await _judge_told(run, step.ask, how, open_surfaces, step.surface)


async def _race(run: _Run, step: Race, open_surfaces: Sequence[int]) -> None:
    request = run.asks[step.ask]
    (first, second), (one, other) = step.surfaces, step.behaviours
    run.example.stage(
        ONE, f"surfaces {first} and {second} acting on {run.name(step.ask)} at the same moment"
    )
    acting = await asyncio.gather(
        run.driver.perform_on(first, request, one),
        run.driver.perform_on(second, request, other),
        return_exceptions=True,
    )
    for surface, result in zip(step.surfaces, acting, strict=True):
        if isinstance(result, BaseException):
            run.example.fail(ONE, f"the driver, acting on surface {surface}, raised {result!r}")
            return
    ended = await _ended(run, step.ask, ONE)
    if ended is None:
        return
    outcome, how = ended
    did = [
        s for s, b in zip(step.surfaces, step.behaviours, strict=True) if _did(request, b, outcome)
    ]
    if not run.example.verify(
        ONE,
        bool(did),
        lambda: (
            f"{run.name(step.ask)} ended with {_shown_outcome(outcome)}, which neither "
            f"surface gave: surface {first} did {one!r}, surface {second} did {other!r}"
        ),
    ):
        return
    told = {s: await _told(run, s, step.ask, TELL) for s in step.surfaces}
    winners = [s for s, said in told.items() if said is not None and said.here is True]
    if len(winners) > 1:
        run.example.fail(
            TELL,
            f"surfaces {first} and {second} both say their own action ended "
            f"{run.name(step.ask)}; it has one outcome, {_shown_outcome(outcome)}",
        )
        return
    winner = winners[0] if winners else None
    if winner is not None and winner not in did:
        run.example.fail(
            ONE,
            f"surface {winner} says its action ended {run.name(step.ask)}, but it ended with "
            f"{_shown_outcome(outcome)}, which surface {winner} did not give",
        )
        return
    if winner is None:
        winner = did[0]  # no surface claims it: the one that gave it must (judged below)
    await _judge_told(run, step.ask, how, open_surfaces, winner)


async def _close_while(run: _Run, step: CloseWhile, surfaces: Sequence[int]) -> None:
    request = run.asks[step.ask]
    run.example.stage(
        CLOSE,
        f"surface {step.closing} closing while surface {step.surface} does "
        f"{step.behaviour!r} on {run.name(step.ask)}",
    )
    acting = await asyncio.gather(
        run.driver.close(step.closing),
        run.driver.perform_on(step.surface, request, step.behaviour),
        return_exceptions=True,
    )
    for what, result in zip(("closing", "acting"), acting, strict=True):
        if isinstance(result, BaseException):
            run.example.fail(CLOSE, f"the driver, {what}, raised {result!r}")
            return
    ended = await _ended(run, step.ask, CLOSE)
    if ended is None:
        return
    outcome, how = ended
    if not run.example.verify(
        CLOSE,
        _did(request, step.behaviour, outcome),
        lambda: (
            f"{run.name(step.ask)} ended with {_shown_outcome(outcome)} while surface "
            f"{step.closing} closed; surface {step.surface} did {step.behaviour!r}"
        ),
    ):
        return
    still_open = [s for s in surfaces if s != step.closing]
    await _judge_told(run, step.ask, how, still_open, step.surface)
    for index in run.pending():
        for surface in still_open:
            await run.shown(CLOSE, surface, index, f"while surface {step.closing} is closed")
    await run.bounded(
        CLOSE, f"surface {step.closing} opening again", run.driver.reopen(step.closing)
    )
    await _judge_screen(run, step.closing, CLOSE, "once it opened again")


async def _withdraw(run: _Run, step: Withdraw, open_surfaces: Sequence[int]) -> None:
    reason = TimeoutError("the ask's time ran out") if step.timed_out else None
    run.controllers[step.ask].abort(reason)
    ended = await _ended(run, step.ask, TELL)
    if ended is None:
        return
    outcome, _ = ended
    if not run.example.verify(
        ONE,
        isinstance(outcome, BaseException) and code_of(outcome) == ErrorCode.ASK_ABORTED,
        lambda: (
            f"{run.name(step.ask)}, withdrawn by the agent, ended with "
            f"{_shown_outcome(outcome)}, not ASK_ABORTED"
        ),
    ):
        return
    how = "timed_out" if step.timed_out else "withdrawn"
    await _judge_told(run, step.ask, how, open_surfaces, None)


async def _judge_screen(run: _Run, surface: int, requirement: str, why: str) -> None:
    """*surface* shows every pending ask and no ended one."""
    for index in run.pending():
        await run.shown(requirement, surface, index, why)
    for index in run.ended:
        await run.not_shown(requirement, surface, index, f"{why}, though it ended")


async def _reload(run: _Run, step: Reload) -> None:
    await run.bounded(RELOAD, f"surface {step.surface} reloading", run.driver.reload(step.surface))
    await _judge_screen(run, step.surface, RELOAD, "after it reloaded")


@check(
    "surfaces",
    ONE, TELL, RELOAD, CLOSE,
    kind="provider",
    needs=lambda c: c.surfaces >= 2 and c.concurrent,
    parts=2,
    share=0.5,
)  # fmt: skip
def surfaces(draw: Draws, setup: Setup) -> Scenario:
    """Asks shown on several surfaces end once, by whichever surface acts, and all are told."""
    count = draw(_ASKS, "asks")
    asks = [draw(_REQUESTS, f"ask {index + 1}") for index in range(count)]
    steps: list[Step] = draw(programs(asks, setup.capabilities), "steps")
    every = list(range(setup.capabilities.surfaces))

    async def scenario(example: Example) -> None:
        subject = await example.subject()
        driver = surface_driver(subject.driver)
        if driver is None:
            example.fail(
                ONE,
                f"the subject declares {len(every)} surfaces, but its driver is not a "
                "SurfaceDriver (perform_on, is_shown_on, told_on, reload, close, reopen)",
            )
            return
        controllers = [AbortController() for _ in asks]
        live: list[AskUserQuestionRequest] = [
            {**request, "signal": controller.signal}
            for request, controller in zip(asks, controllers, strict=True)
        ]
        example.stage(ONE, "the provider's ask() of every ask")
        tasks = [asyncio.ensure_future(subject.provider.ask(request)) for request in live]
        run = _Run(example, driver, len(every), live, controllers, tasks)
        try:
            for index in range(len(live)):
                for surface in every:
                    await run.shown(RELOAD, surface, index, "before any surface acts")
            for step in steps:
                if isinstance(step, Act):
                    await _act(run, step, every)
                elif isinstance(step, Race):
                    await _race(run, step, every)
                elif isinstance(step, CloseWhile):
                    await _close_while(run, step, every)
                elif isinstance(step, Withdraw):
                    await _withdraw(run, step, every)
                else:
                    await _reload(run, step)
                if example.done_with(ONE, TELL, RELOAD, CLOSE):
                    return
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=example.bound)

    return scenario
