"""The durable path's scenarios (:mod:`._durable`), run on the store under test.

Each scenario builds the reference's provider, relays and expiry on stores
the subject opens, with a request and an answer Hypothesis draws (hostile
text included), and returns what it found wrong. A scenario is not shrunk:
it is the store that is judged, and each scenario asks one question.

Every example gets fresh data from the factory, and cleans it away; the
whole scenario is bounded (:mod:`._loop`), so a store that hangs
fails the scenario's first requirement instead of hanging the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.reporting import with_reporter

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest

from .._engine import Failure, FailureRecord, SetupError, replayable, seeded, suite_settings
from ..strategies import requests, valid_answers
from ._durable import PATIENCE, DurableCheck
from ._example import make_subject
from ._loop import Late, StoreLoop, Stuck
from ._values import brief

__all__ = ["ScenarioOutcome", "run_scenario"]

#: Seconds a whole scenario may take: each of its waits gets PATIENCE, and a few follow.
LIMIT: Final = 6 * PATIENCE


@dataclass
class ScenarioOutcome:
    """How one scenario went over its examples."""

    check: DurableCheck
    examples: int = 0
    #: Examples that judged each requirement (those that found nothing).
    judged: dict[str, int] = field(default_factory=dict[str, int])
    failures: dict[str, FailureRecord] = field(default_factory=dict[str, FailureRecord])
    seconds: float = 0.0
    #: A scenario did not end within its limit: the run of it stopped.
    hung: bool = False


class _Stop(BaseException):
    """Ends the Hypothesis run: a finding, a hang, or a set-up error (kept on the outcome)."""


def run_scenario(
    check: DurableCheck,
    factory: Callable[[], object],
    name: str,
    examples: int,
    *,
    run_seed: int | None,
    bound: float,
) -> ScenarioOutcome:
    """Run *check* on *examples* drawn requests, each on fresh data; stop at its first finding.

    Raises :class:`SetupError` when the factory or its subject fails.
    """
    outcome = ScenarioOutcome(check)
    started = time.monotonic()
    setup: list[SetupError] = []

    async def scenario(
        request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
    ) -> list[tuple[str, str]]:
        subject = await make_subject(factory, name)
        try:
            return await check.findings(subject.open, request, answer)
        finally:
            try:
                await subject.cleanup()
            except Exception as error:  # noqa: BLE001 - a set-up error, reported as one
                setup.append(SetupError(f"{name}: the subject's cleanup raised {error!r}", "store"))

    def example(data: st.DataObject) -> None:
        request = data.draw(requests(max_questions=2), label="request")
        answer = data.draw(valid_answers(request), label="answer")
        lines = [f"request = {brief(request, 400)}", f"answer = {brief(answer, 400)}"]
        outcome.examples += 1
        loop = StoreLoop()
        found: list[tuple[str, str]]
        try:
            found = loop.call(lambda: scenario(request, answer), LIMIT)
        except SetupError as error:
            setup.append(error)
            raise _Stop from None
        except (Late, Stuck) as hang:
            outcome.hung = True
            found = [(check.requirements[0], f"the scenario {check.name} {hang}")]
        except Exception as error:  # noqa: BLE001 - the store's error, met in the scenario
            found = [(check.requirements[0], f"the scenario {check.name} raised {error!r}")]
        finally:
            loop.close(bound)
        if setup:
            raise _Stop
        if not found:
            for requirement in check.requirements:
                outcome.judged[requirement] = outcome.judged.get(requirement, 0) + 1
            return
        for requirement, message in found:
            outcome.failures.setdefault(
                requirement,
                FailureRecord(
                    requirement,
                    message,
                    check.name,
                    lines,
                    False,
                    "a durable-path scenario is not shrunk",
                ),
            )
        raise _Stop

    test = given(st.data())(example)
    test = suite_settings(examples, run_seed, shrink=False, reuse=False)(test)
    test = seeded(test, run_seed)
    try:
        with with_reporter(lambda _value: None), replayable():
            test()
    except (_Stop, Failure, HypothesisException):
        pass
    outcome.seconds = time.monotonic() - started
    if setup:
        raise setup[0]
    return outcome
