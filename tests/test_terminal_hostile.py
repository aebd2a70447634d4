"""Hostile values never break the terminal's screen: an agent of any kind, model text of any str.

The agent is any object (``REQ-AGENT-2``); the screen shows who is asking
without running an override of a str subclass, and falls back to the agent's
type name when reading it raises. Model text that is a str subclass (the
request rules let many through, and a direct ask checks nothing) is drawn as
its characters, never through its own methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any, NoReturn

import pytest

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.extra.terminal import TerminalProvider
from dsh_user_interaction.extra.terminal.testing import TerminalDriver, make_subject

from .helpers import patience, run


def _raise(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("a hostile method ran")


class Hostile(str):
    """A str whose every method a reader might call raises: hash, eq, str, len, iter, format..."""

    __slots__ = ()

    __hash__ = _raise
    __eq__ = _raise
    __ne__ = _raise
    __lt__ = _raise
    __str__ = _raise
    __repr__ = _raise
    __len__ = _raise
    __iter__ = _raise
    __format__ = _raise
    __getitem__ = _raise
    __contains__ = _raise
    __bool__ = _raise
    __add__ = _raise
    __radd__ = _raise
    isprintable = _raise


class Unhashable(str):
    """A str that cannot be hashed or compared, but is otherwise an ordinary str."""

    __slots__ = ()

    __hash__ = _raise
    __eq__ = _raise


class _NamedByUnhashableStr:
    name = Unhashable("builder")


class _NamedByHostileStr:
    name = Hostile("planner")


class _NameRaises:
    @property
    def name(self) -> str:
        raise RuntimeError("name")

    def __str__(self) -> str:
        return "agent seven"


class _Unprintable:
    __str__ = _raise
    __repr__ = _raise


class _Unreadable:
    """A descriptor whose every read raises."""

    def __get__(self, instance: object, owner: type | None = None) -> NoReturn:
        raise RuntimeError("read")


class _RaisingMeta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]  # a metaclass that lies about names
        raise RuntimeError("__name__")


class _EverythingRaises:
    __getattribute__ = _raise
    __getattr__ = _raise
    __str__ = _raise
    __repr__ = _raise
    __format__ = _raise
    __hash__ = _raise
    __eq__ = _raise


# Its name, its str() and its type's __name__ raise. Note: no docstring, as the
# doctest collector reads a documented class's __name__; and the default repr(),
# so that a failing test can still be reported.
class _TypeNameRaises(metaclass=_RaisingMeta):
    name = _Unreadable()
    __str__ = _raise


class _StrGivesHostile:
    def __str__(self) -> str:
        return Hostile("from str()")


class _FakeStr:
    """Passes ``isinstance(x, str)`` by lying about its class; it is no str."""

    __hash__ = _raise
    __eq__ = _raise
    __str__ = _raise
    __len__ = _raise

    @property
    def __class__(self) -> type:
        return str  # the lie under test

    @__class__.setter
    def __class__(self, value: type) -> None:
        raise RuntimeError("__class__")


class _NamedByFakeStr:
    name = _FakeStr()

    def __str__(self) -> str:
        return "agent eight"


#: Each hostile agent, and the line the screen shows for it.
HOSTILE_AGENTS: dict[str, tuple[object, str]] = {
    "name-is-an-unhashable-str": (_NamedByUnhashableStr(), "asked by builder"),
    "name-is-a-hostile-str": (_NamedByHostileStr(), "asked by planner"),
    "agent-is-a-hostile-str": (Hostile("reviewer"), "asked by reviewer"),
    "name-property-raises": (_NameRaises(), "asked by agent seven"),
    "str-and-repr-raise": (_Unprintable(), "asked by _Unprintable"),
    "everything-raises": (_EverythingRaises(), "asked by _EverythingRaises"),
    "type-name-raises": (_TypeNameRaises(), "asked by _TypeNameRaises"),
    "str-returns-a-hostile-str": (_StrGivesHostile(), "asked by from str()"),
    "name-fakes-being-a-str": (_NamedByFakeStr(), "asked by agent eight"),
    "name-is-huge": (SimpleNamespace(name="n" * 1_000_000), "asked by " + "n" * 80 + "..."),
}

_REQUEST: AskUserQuestionRequest = {
    "questions": [
        {"id": "mode", "question": "Which mode?", "options": [{"label": "Fast"}, {"label": "Safe"}]}
    ]
}


@asynccontextmanager
async def _driver() -> AsyncGenerator[TerminalDriver]:
    subject = make_subject()
    driver = subject.driver
    assert isinstance(driver, TerminalDriver)
    try:
        yield driver
    finally:
        assert subject.aclose is not None
        await subject.aclose()


async def _answer_of(task: asyncio.Future[Any]) -> Any:
    """The ask's answer; its error fails the test without a traceback.

    Note: the traceback would run through the hostile agent's own methods, and
    pytest cannot describe a frame whose argument's type name raises.
    """
    try:
        return await asyncio.wait_for(task, patience(2))
    except Exception as error:  # noqa: BLE001 - any error of the ask is the failure
        pytest.fail(f"the ask failed: {error!r}", pytrace=False)


async def _screen_of(driver: TerminalDriver, task: asyncio.Future[Any]) -> str:
    """The screen once the ask's status line is drawn; the ask's own error if it fails first.

    Polled every 5 ms, with a patient bound that only ends a red run.
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + patience(2.5)
    while driver.status() is None:
        if task.done():
            await _answer_of(task)
            pytest.fail("the ask ended before it was shown", pytrace=False)
        if loop.time() > end:
            pytest.fail("the ask was never shown", pytrace=False)
        await asyncio.sleep(0.005)
    await driver.settled()
    return driver.terminal.text()


async def _ask_and_pick(request: AskUserQuestionRequest, key: str) -> tuple[str, Any]:
    """Ask *request*, press *key* once it shows, and return the screen and the answer."""
    async with _driver() as driver:
        assert isinstance(driver.provider, TerminalProvider)
        task = asyncio.ensure_future(driver.provider.ask(request))
        try:
            screen = await _screen_of(driver, task)
            driver.keyboard.send_text(key)
            answer = await _answer_of(task)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return screen, answer


async def _ask_and_pick_first(agent: object) -> tuple[str, Any]:
    """Ask the one-question request with *agent*, press 1, and return the screen and answer."""
    return await _ask_and_pick({**_REQUEST, "agent": agent}, "1")


@pytest.mark.parametrize("kind", list(HOSTILE_AGENTS))
def test_a_hostile_agent_is_shown_safely_and_the_ask_proceeds(kind: str) -> None:
    """REQ-AGENT-2: whatever the agent's methods do, the screen names it and the answer returns.

    A str subclass (the agent or its name) is shown as its characters, without
    any override running; an agent whose name and ``str()`` raise is shown by
    its type's name; a name is cut to one short line.
    """
    agent, shown = HOSTILE_AGENTS[kind]
    screen, answer = run(_ask_and_pick_first(agent))
    assert screen.splitlines()[1] == shown
    assert answer == {"answers": [{"id": "mode", "selected": ["Fast"]}]}


@pytest.mark.parametrize(
    ("agent", "shown"),
    [
        (SimpleNamespace(name="planner"), "asked by planner"),
        ("alice", "asked by alice"),
        (None, None),
    ],
    ids=["object-with-a-name", "plain-str", "no-agent"],
)
def test_a_plain_agent_is_shown_as_before(agent: object, shown: str | None) -> None:
    """REQ-AGENT-2: a plain name, or a plain str agent, is shown as is; no agent, no line."""
    screen, answer = run(_ask_and_pick_first(agent))
    lines = screen.splitlines()
    if shown is None:
        assert not any(line.startswith("asked by") for line in lines)
        assert lines[1] == "Which mode?"
    else:
        assert lines[1:3] == [shown, "Which mode?"]
    assert answer == {"answers": [{"id": "mode", "selected": ["Fast"]}]}


def test_an_agent_without_a_name_is_shown_by_its_str() -> None:
    """REQ-AGENT-2: an agent without a ``name`` is shown by ``str()``, escaped like model text."""

    class Agent:
        def __str__(self) -> str:
            return "bot\x1b[2J"

    screen, _ = run(_ask_and_pick_first(Agent()))
    assert screen.splitlines()[1] == "asked by bot\\x1b[2J"


def test_model_text_that_is_a_hostile_str_is_drawn_as_its_characters() -> None:
    """Header, question, detail, labels, descriptions and intent kind may be str subclasses.

    Asked directly, nothing checks them; the screen draws their characters
    without calling their methods, the plan card still shows, and the picked
    label comes back as the very object offered.
    """
    label = Hostile("Keep planning")
    request: Any = {
        "questions": [
            {
                "id": "plan-review",
                "header": Hostile("Review"),
                "question": Hostile("Approve this plan?"),
                "detail": Hostile("# Plan\n\n1. Do it."),
                "intent": {"kind": Hostile("plan-review"), "approve": Hostile("Approve")},
                "options": [
                    {"label": Hostile("Approve"), "description": Hostile("Leave plan mode.")},
                    {"label": label},
                ],
            }
        ]
    }

    screen, answer = run(_ask_and_pick(request, "2"))
    assert screen.splitlines()[1:3] == ["Review", "Approve this plan?"]
    assert "--- plan ---\n# Plan\n\n1. Do it.\n------------" in screen
    assert "> 1. Approve\n      Leave plan mode.\n  2. Keep planning" in screen
    assert answer["answers"][0]["selected"][0] is label
