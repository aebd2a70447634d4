"""The LangGraph interrupt provider as a conformance-suite subject: each ask a paused graph run.

Design notes:

* :class:`GraphAsks` is the provider the suite asks. Each ``ask()`` runs a
  small real graph (one node, a ``StateGraph`` compiled with an
  ``InMemorySaver``) on a thread of its own, ``ask-<n>``. The node asks the
  request through the provider under test (an
  :class:`~dsh_user_interaction.extra.langgraph.InterruptProvider` by
  default), so the run pauses on its interrupt, its state in the
  checkpointer.
* The request object reaches the node by a token in the graph's state (in
  process), so the node asks with its signal. The node writes how the ask
  ended into the state, as JSON: the answer, or the error's code and
  message. The final state is read back and returned or raised.
* :class:`GraphHuman` is the answering side: it reads the paused run's
  interrupt from the graph's state, turns the human's behaviour into a
  resume value (:func:`~dsh_user_interaction.extra.langgraph.resume_value`
  of the answer, or of ``ASK_CANCELLED`` for a dismissal), checks it with
  :func:`~dsh_user_interaction.extra.langgraph.checked_resume` and hands the
  ``Command`` to the paused ask, whose run goes on with it.
* Nobody waits inside the graph while it is paused. When the request's
  signal aborts, the ask resumes its run with the ``aborted`` resume value,
  so the node ends with ``ASK_ABORTED`` as a resumed run does, and raises
  it. When the ask is cancelled, its thread is deleted from the
  checkpointer and the cancellation propagates. Either way nothing is left
  running and nothing is kept.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, NotRequired, Protocol, TypedDict, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import END, START
from langgraph.types import Command, Interrupt

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
)
from dsh_user_interaction_conformance import (
    Action,
    Behaviour,
    Capabilities,
    Dismiss,
    Nothing,
    Revise,
    Skip,
    Subject,
    TypeText,
    revised,
    with_capabilities,
)

from .._polling import Handles
from ._interrupt import InterruptProvider, resume_value
from ._resume import PausedGraph, checked_resume

__all__ = [
    "CAPABILITIES",
    "GraphAsks",
    "GraphHuman",
    "PausedAsk",
    "human_answer",
    "langgraph_subject",
    "make_langgraph_subject",
]

#: What the answering side of a paused run can say: any answer of ours, or a dismissal.
CAPABILITIES: Final = Capabilities(
    can_skip=True,
    can_dismiss=True,
    custom_on_single=True,
    custom_on_multi=True,
    revises=True,
    keeps_carriage_returns=True,
    concurrent=True,
    observes_screen=True,
)

#: LangGraph's graph builder, used through its documented methods only; pyright finds no
#: types for ``langgraph.graph``.
_StateGraph: Callable[[type[Any]], Any] = importlib.import_module("langgraph.graph").StateGraph


class _Ended(TypedDict):
    """How the node's ask ended, as the graph's state keeps it (JSON only)."""

    answer: NotRequired[AskUserQuestionAnswer]
    code: NotRequired[str]
    message: NotRequired[str]
    timed_out: NotRequired[bool]
    deadline_passed: NotRequired[bool]


class _State(TypedDict):
    token: str
    ended: NotRequired[_Ended]


class _Graph(PausedGraph, Protocol):
    async def ainvoke(self, input: object, config: RunnableConfig) -> dict[str, Any]: ...


@dataclass(eq=False)
class PausedAsk:
    """An ask whose graph run is paused on its interrupt, waiting for the resume."""

    #: The request as the suite asked it.
    request: AskUserQuestionRequest[Any]
    #: The run's thread id, ``ask-<n>``.
    thread_id: str
    #: The run's config (its thread).
    config: RunnableConfig
    #: Set with the ``Command`` the run goes on with.
    resumed: asyncio.Future[Command[Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def _error_of(ended: _Ended) -> UserInteractionError:
    if ended.get("timed_out", False):
        return UserInteractionError.timed_out_error(
            deadline_passed=ended.get("deadline_passed", False)
        )
    return UserInteractionError(ended.get("message", ""), ErrorCode(ended.get("code", "")))


class GraphAsks:
    """A provider whose every ``ask()`` runs a one-node LangGraph graph that asks through *inner*.

    *inner* is the provider under test (a fresh
    :class:`~dsh_user_interaction.extra.langgraph.InterruptProvider` by
    default). ``ask()`` returns the answer the run's final state holds, or
    raises its error; it raises ``ASK_ABORTED`` when the signal aborts
    (before or while the run is paused) and lets ``CancelledError``
    propagate, the paused run's thread deleted.
    """

    def __init__(self, inner: UserInteractionProvider | None = None) -> None:
        self.inner: UserInteractionProvider = inner if inner is not None else InterruptProvider()
        self.saver = InMemorySaver()
        builder: Any = _StateGraph(_State)
        builder.add_node("ask", self._node)
        builder.add_edge(START, "ask")
        builder.add_edge("ask", END)
        #: The compiled graph every ask runs, each on its own thread.
        self.graph = cast("_Graph", builder.compile(checkpointer=self.saver))
        self._threads = itertools.count(1)
        self._requests: dict[str, AskUserQuestionRequest[Any]] = {}
        self._paused: list[PausedAsk] = []

    async def _node(self, state: _State) -> _State:
        """The graph's one node: ask the state's request through *inner*; keep how it ended."""
        request = self._requests[state["token"]]
        try:
            answer = await self.inner.ask(request)
        except UserInteractionError as error:
            ended: _Ended = {"code": str(error.code), "message": str(error)}
            if error.timed_out:
                ended["timed_out"] = True
                ended["deadline_passed"] = error.deadline_passed
            return {"token": state["token"], "ended": ended}
        return {"token": state["token"], "ended": {"answer": answer}}

    def paused_of(self, request: AskUserQuestionRequest[Any]) -> PausedAsk | None:
        """*request*'s paused ask, while its run waits for a resume; else ``None``."""
        return next(
            (p for p in self._paused if p.request is request and not p.resumed.done()), None
        )

    def go_on(self, paused: PausedAsk, command: Command[Any]) -> bool:
        """Hand *command* to the paused ask's run; false when that ask ended already."""
        if paused not in self._paused or paused.resumed.done():
            return False
        paused.resumed.set_result(command)
        return True

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Run the graph for *request* until its node's ask ends; return or raise that end."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        thread_id = f"ask-{next(self._threads)}"
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        self._requests[thread_id] = request
        paused: PausedAsk | None = None
        remove: Callable[[], None] | None = None
        try:
            state = await self.graph.ainvoke({"token": thread_id}, config)
            if "__interrupt__" in state:
                paused = PausedAsk(request, thread_id, config)
                resumed = paused.resumed

                def on_abort(_signal: object) -> None:
                    if not resumed.done():
                        aborted: Command[Any] = Command(
                            resume={i.id: {"outcome": "aborted"} for i in _interrupts(state)}
                        )
                        resumed.set_result(aborted)

                if signal is not None:
                    remove = signal.add_listener(on_abort)
                    if signal.aborted:
                        on_abort(signal)
                self._paused.append(paused)
                command = await resumed
                state = await self.graph.ainvoke(command, config)
        finally:
            if remove is not None:
                remove()
            if paused is not None:
                self._paused.remove(paused)
                paused.resumed.cancel()
            del self._requests[thread_id]
            self.saver.delete_thread(thread_id)
        ended = cast("_State", state).get("ended")
        if ended is None:
            msg = f"the graph's run of {thread_id} ended without its ask's outcome"
            raise RuntimeError(msg)
        if "answer" in ended:
            return ended["answer"]
        raise _error_of(ended)


def _interrupts(state: dict[str, Any]) -> list[Interrupt]:
    return cast("list[Interrupt]", state.get("__interrupt__", []))


def human_answer(
    request: AskUserQuestionRequest[Any], behaviour: tuple[Action, ...]
) -> AskUserQuestionAnswer:
    """The answer the human gives by *behaviour*: picked labels in option order, as a form holds."""
    items: list[AskUserQuestionAnswerItem] = []
    for question, action in zip(request["questions"], behaviour, strict=True):
        if isinstance(action, Revise):
            items.append(revised(question, action.steps))
            continue
        if isinstance(action, Skip):
            items.append({"id": question["id"], "selected": []})
            continue
        offered = [option["label"] for option in question.get("options", ())]
        item: AskUserQuestionAnswerItem = {
            "id": question["id"],
            "selected": [label for label in offered if label in action.labels],
        }
        if isinstance(action, TypeText):
            item["custom"] = action.text
        items.append(item)
    return {"answers": items}


class GraphHuman:
    """Plays the human on the answering side of :class:`GraphAsks`'s paused runs.

    *patience* bounds each wait for a run to pause on the request's interrupt.
    """

    def __init__(
        self,
        asks: GraphAsks,
        *,
        capabilities: Capabilities = CAPABILITIES,
        patience: float = 10.0,
    ) -> None:
        self.asks = asks
        self.capabilities = capabilities
        self.patience = patience
        self._paused: Handles[PausedAsk] = Handles(asks.paused_of)

    async def perform(self, request: AskUserQuestionRequest[Any], behaviour: Behaviour) -> None:
        """Wait until *request*'s run pauses, then resume it with the human's outcome.

        ``Nothing`` only waits; a dismissal resumes with ``dismissed``, any
        other behaviour with ``answered`` and the answer. Raises
        :class:`TimeoutError` when the run never pauses, and what
        :func:`~dsh_user_interaction.extra.langgraph.checked_resume` raises
        for a resume the run refuses.
        """

        def never() -> str:
            return f"no graph run paused on the request within {self.patience:g} s"

        paused = await self._paused.wait(request, self.patience, never, eager=50)
        if isinstance(behaviour, Nothing) or paused.resumed.done():
            return
        outcome: AskUserQuestionAnswer | UserInteractionError = (
            UserInteractionError.of(ErrorCode.ASK_CANCELLED)
            if isinstance(behaviour, Dismiss)
            else human_answer(request, behaviour)
        )
        state = await self.asks.graph.aget_state(paused.config)
        value = resume_value(outcome)
        command = await checked_resume(
            self.asks.graph, paused.config, {pending.id: value for pending in state.interrupts}
        )
        self.asks.go_on(paused, command)

    async def is_shown(self, request: AskUserQuestionRequest[Any]) -> bool:
        """Whether *request*'s run is still paused, waiting for its resume."""
        return self.asks.paused_of(request) is not None


async def make_langgraph_subject(
    inner: UserInteractionProvider | None = None, *, name: str = "langgraph"
) -> Subject:
    """A subject whose every ask runs a real graph asking through *inner*.

    *inner* is a fresh ``InterruptProvider`` by default; the test gallery
    passes a broken variant.
    """
    asks = GraphAsks(inner)
    return Subject(provider=asks, driver=GraphHuman(asks), name=name)


@with_capabilities(CAPABILITIES)
async def langgraph_subject() -> Subject:
    """A fresh ``InterruptProvider`` inside a real graph; the driver resumes its runs."""
    return await make_langgraph_subject()
