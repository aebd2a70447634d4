"""One example of the store machine: its stores, loop and subject, its verdicts, its calls.

:class:`StoreExample` is the machine's base: the state every concern
shares (the stores, the model of the truth, the example's lines), how a
verdict is recorded (Rule 2 of :mod:`._machine`), how a call is bounded
(Rule 3) and how an example cleans up after itself (Rule 4).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, cast

from hypothesis.stateful import RuleBasedStateMachine

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.durable import AskStore

from .._engine import Failure, SetupAbort, SetupError, require_methods
from ._loop import Late, StoreLoop, Stuck
from ._model import Truth
from ._subject import StoreSubject
from ._values import awkward_text, is_record

__all__ = ["Attempt", "SkipStep", "StopExample", "StoreExample", "make_subject"]

#: The methods a store must have (the ``AskStore`` protocol).
_METHODS: Final = (
    "put",
    "get",
    "pending",
    "settle",
    "changes",
    "watch",
    "records",
    "purge",
    "close",
)


async def make_subject(factory: Callable[[], object], name: str) -> StoreSubject:
    """What the store factory *name* makes (awaited, when it is awaitable): a subject.

    Raises :class:`SetupError` when it has no ``open`` or no ``cleanup``
    method; what the factory raises goes through, for the caller to report.
    """
    made = factory()
    if inspect.isawaitable(made):
        made = await cast("Awaitable[object]", made)
    require_methods(made, ("open", "cleanup"), f"store factory {name}", "store")
    return cast("StoreSubject", made)


class StopExample(BaseException):
    """Ends the Hypothesis run now: a call hung (not shrunk), or the shrink budget is spent."""


class SkipStep(Exception):
    """A masked failure left the step nothing to judge: it ends quietly."""


@dataclass
class Attempt:
    """One Hypothesis run of the state machine: what it needs, and what it found."""

    factory: Callable[[], object]
    #: How reports name the factory.
    factory_name: str
    bound: float
    #: Requirements that already failed in this check (the engine's Rule 2).
    masked: frozenset[str]
    #: Requirement ID -> (message, the example's steps), the latest failing example's.
    failures: dict[str, tuple[str, list[str]]] = field(
        default_factory=dict[str, tuple[str, list[str]]]
    )
    #: How many examples judged each requirement.
    judged: dict[str, int] = field(default_factory=dict[str, int])
    examples: int = 0
    steps: int = 0
    #: The requirement whose call hung, when one did (the run was stopped).
    hung: str | None = None
    #: The subject's name, once one was made.
    subject_name: str = ""
    #: When the first failure was found (the shrink budget counts from it).
    first_failure: float | None = None


class StoreExample(RuleBasedStateMachine):
    """One example's state and verdicts, shared by each concern of the machine."""

    def __init__(self, attempt: Attempt) -> None:
        super().__init__()
        self.attempt = attempt
        self.bound = attempt.bound
        self.truth = Truth()
        self.handles: list[AskStore] = []
        self.lines: list[str] = []
        self.judged: set[str] = set()
        #: The requests as drawn, for drawing answers to them.
        self.originals: dict[str, AskUserQuestionRequest] = {}
        #: The clock of the example (its steps draw how far it moves).
        self.now: float = 0.0
        #: A store could not be opened (a masked failure): the example has nothing to run on.
        self.dead = False
        #: A failure is ending the example (the final restart is left out).
        self.failing = False
        self.loop = StoreLoop()
        self.subject: StoreSubject | None = None
        attempt.examples += 1
        try:
            made = self.loop.call(self._make_subject, self.bound)
        except (Late, Stuck) as error:
            self.loop.close(self.bound)
            raise SetupAbort(
                SetupError(f"the store factory {attempt.factory_name} {error}", "store")
            ) from None
        except SetupError as error:
            self.loop.close(self.bound)
            raise SetupAbort(error) from None
        self.subject = made
        attempt.subject_name = attempt.subject_name or str(getattr(made, "name", ""))

    async def _make_subject(self) -> StoreSubject:
        name = self.attempt.factory_name
        try:
            return await make_subject(self.attempt.factory, name)
        except SetupError:
            raise
        except Exception as error:  # noqa: BLE001 - reported as a set-up error
            raise SetupError(f"the store factory {name} raised {error!r}", "store") from None

    def _line(self, text: str) -> None:
        self.lines.append(text)

    def _judge(self, *covered: str) -> None:
        self.judged.update(covered)

    def _fail(self, requirement: str, message: str, *, slow: bool = False) -> None:
        """Record that this example breaks *requirement*; end it unless that is masked."""
        self.judged.add(requirement)
        attempt = self.attempt
        if slow:
            attempt.hung = attempt.hung or requirement
        if requirement not in attempt.masked or slow:
            self.failing = True
        if requirement not in attempt.masked:
            attempt.failures[requirement] = (message, list(self.lines))
            if attempt.first_failure is None:
                attempt.first_failure = time.monotonic()
            if slow:
                raise StopExample
            raise Failure(requirement, message)
        if slow:
            raise StopExample

    def _verify(self, requirement: str, ok: bool, message: Callable[[], str]) -> bool:
        self._judge(requirement)
        if not ok:
            self._fail(requirement, message())
        return ok

    def _call(
        self,
        requirement: str,
        what: str,
        make: Callable[[], Awaitable[object]],
        *,
        values: object = None,
        bound: float | None = None,
        resync: tuple[int, str] | None = None,
    ) -> object:
        """Await ``make()`` on the example's loop; a hang or an error fails *requirement*.

        An error for *values* holding NUL or a lone surrogate fails ``DUR-STORE-3``.
        When the failure is masked, the model takes what store *resync[0]* holds
        of the ask *resync[1]* (the call may have changed it before it raised).
        """
        patience = self.bound if bound is None else bound
        try:
            return self.loop.call(make, patience)
        except (Late, Stuck) as hang:
            self._fail(requirement, f"{what} {hang}", slow=True)
        except Exception as error:  # noqa: BLE001 - a store's error is a verdict
            if awkward_text(values):
                self._fail(
                    "DUR-STORE-3",
                    f"{what} raised {error!r}: a store keeps any text, NUL and lone "
                    "surrogates included",
                )
            else:
                self._fail(requirement, f"{what} raised {error!r}")
            if resync is not None:
                self._resync(*resync)
        raise SkipStep

    def _step(self, body: Callable[[], None]) -> None:
        if self.dead:
            return
        self.attempt.steps += 1
        try:
            body()
        except SkipStep:
            return

    def _resync(self, index: int, ask_id: str) -> None:
        """Take the store's record of *ask_id* as the truth (after a masked failure)."""
        what = f"store {index}: get({ask_id!r})"
        store = self.handles[index]
        try:
            got = self.loop.call(lambda: store.get(ask_id), self.bound)
        except (Late, Stuck):
            raise StopExample from None
        except Exception:  # noqa: BLE001 - judged elsewhere; nothing to take
            raise SkipStep from None
        self._line(f"{what} (to go on from what the store holds)")
        if got is None or is_record(got):
            self.truth.adopt(ask_id, got)

    def _open(self, requirement: str, what: str) -> AskStore:
        subject = self.subject
        assert subject is not None
        store = self._call(requirement, what, subject.open)
        lacking = [m for m in _METHODS if not callable(getattr(store, m, None))]
        if lacking:
            name = self.attempt.factory_name
            raise SetupAbort(
                SetupError(
                    f"the store subject of {name} opened a {type(store).__name__}, "
                    f"which has no {', '.join(lacking)} method",
                    "store",
                )
            )
        return cast("AskStore", store)

    def _going(self) -> bool:
        """Whether the example is still running: no failure is ending it, no store is dead."""
        return not (self.failing or self.dead or self.loop.stuck)

    def _clean_up(self) -> None:
        attempt = self.attempt
        for requirement in self.judged:
            attempt.judged[requirement] = attempt.judged.get(requirement, 0) + 1
        loop = self.loop
        failed: list[str] = []
        if not loop.stuck:
            for store in self.handles:
                try:
                    loop.call(store.close, self.bound)
                except Exception as error:  # noqa: BLE001 - the verdict is in already
                    failed.append(repr(error))
            subject = self.subject
            if subject is not None:
                try:
                    loop.call(subject.cleanup, self.bound)
                except Exception as error:  # noqa: BLE001 - a set-up error, below
                    failed.append(f"the subject's cleanup raised {error!r}")
        loop.close(self.bound)
        if loop.stuck and self.subject is not None:
            _cleanup_elsewhere(self.subject, self.bound)
        cleanup = [f for f in failed if f.startswith("the subject's cleanup")]
        if cleanup:
            raise SetupAbort(SetupError(f"{attempt.factory_name}: {cleanup[0]}", "store"))


def _cleanup_elsewhere(subject: StoreSubject, bound: float) -> None:
    """Clean a subject's data away on a loop of its own: its example's loop is stuck."""
    spare = StoreLoop()
    try:
        spare.call(subject.cleanup, bound)
    except Exception:  # noqa: BLE001, S110 - the example failed already; nothing to add
        pass
    finally:
        spare.close(bound)
