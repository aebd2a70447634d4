"""The conformance driver of the terminal provider: a human at a keyboard, reading a screen.

It is black box: keys go in through a prompt_toolkit pipe input, exactly as a
terminal sends them (typed characters, arrow and function keys, bracketed
pastes), and what it knows of the screen it reads from a terminal emulator
(``pyte``) fed with the VT100 output. The one thing it asks the provider is
:meth:`~dsh_user_interaction.extra.terminal.TerminalProvider.number_of`:
which ``ask #N`` to look for when batches with the same questions wait.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections.abc import Callable
from contextlib import ExitStack
from typing import Final, TextIO, cast

import pyte
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from dsh_user_interaction import AskUserQuestionItem, AskUserQuestionRequest
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
    with_capabilities,
)

from .._polling import Handles, poll_until
from ._provider import ESCAPE_DELAY, TerminalProvider

__all__ = ["CAPABILITIES", "TerminalDriver", "VirtualTerminal", "terminal_subject"]

#: The names of the two ways to dismiss a batch at the terminal, as the capabilities declare them.
DISMISS_BY_ESC: Final = "esc"
DISMISS_BY_CTRL_C: Final = "ctrl-c"
#: What the terminal provider can do: everything the suite knows of.
CAPABILITIES: Final = Capabilities(
    can_skip=True,
    can_dismiss=True,
    custom_on_single=True,
    custom_on_multi=True,
    concurrent=True,
    observes_screen=True,
    # A pick on a single-select question submits it at once, so the human cannot
    # type after picking or pick again there: the terminal does not revise.
    revises=False,
    # Esc and Ctrl-C both dismiss the batch: the suite draws each in every run.
    ways={"dismiss": (DISMISS_BY_ESC, DISMISS_BY_CTRL_C)},
)

UP: Final = "\x1b[A"
DOWN: Final = "\x1b[B"
PAGE_DOWN: Final = "\x1b[6~"
ENTER: Final = "\r"
TAB: Final = "\t"
ESCAPE: Final = "\x1b"
CTRL_C: Final = "\x03"
PASTE_START: Final = "\x1b[200~"
PASTE_END: Final = "\x1b[201~"
#: At most this many characters are written to the keyboard pipe at once.
_CHUNK: Final = 4096
#: Text at least this long is pasted, as a human would, even when it could be typed.
PASTE_FROM: Final = 40

#: Loop iterations without drawing after which the screen is taken as current.
QUIET: Final = 4

_STATUS: Final = re.compile(r"^ask #(\d+) \| question (\d+)/(\d+)")


class VirtualTerminal:
    """A screen of *columns* by *rows* cells, emulated by ``pyte``, that an output writes to."""

    def __init__(self, columns: int = 100, rows: int = 40) -> None:
        self.size = Size(rows=rows, columns=columns)
        self.screen = pyte.Screen(columns, rows)
        self._stream = pyte.Stream(self.screen)
        #: Everything written, for debugging.
        self.written = 0

    # The file-like side, for Vt100_Output.
    encoding: Final = "utf-8"

    def write(self, data: str) -> int:
        """Feed *data* to the emulator."""
        self._stream.feed(data)
        self.written += len(data)
        return len(data)

    def flush(self) -> None:
        """Nothing to flush: every write is on screen at once."""

    def isatty(self) -> bool:
        """Not a real terminal: prompt_toolkit must not wait for cursor reports."""
        return False

    def output(self) -> Vt100_Output:
        """A prompt_toolkit output that renders onto this screen, at its fixed size."""
        # Vt100_Output wants a TextIO; it only calls write, flush, isatty and encoding.
        stdout = cast("TextIO", self)
        return Vt100_Output(stdout, lambda: self.size, term="xterm", enable_cpr=False)

    @property
    def lines(self) -> list[str]:
        """The screen, one string per row."""
        return list(self.screen.display)

    def text(self) -> str:
        """The screen as text, trailing blanks removed."""
        return "\n".join(line.rstrip() for line in self.lines).rstrip("\n")


def _needs_paste(text: str) -> bool:
    """Whether *text* holds what a keyboard cannot type as text (a control character)."""
    return len(text) >= PASTE_FROM or any(unicodedata.category(c) == "Cc" for c in text)


def paste(text: str) -> str:
    """The bytes a terminal sends when *text* is pasted in bracketed-paste mode.

    Text holding the end marker itself is sent as consecutive pastes, split
    inside the marker, so the field receives it whole.
    """
    pieces: list[str] = []
    rest = text
    while PASTE_END in rest:
        cut = rest.index(PASTE_END) + len(PASTE_END) - 1
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return "".join(PASTE_START + piece + PASTE_END for piece in pieces)


class TerminalDriver:
    """Plays the human in front of a terminal provider, through keys and the screen.

    The provider is a :class:`~dsh_user_interaction.extra.terminal.TerminalProvider`
    reading *keyboard* and drawing on *terminal*.
    """

    def __init__(
        self,
        provider: TerminalProvider,
        keyboard: PipeInput,
        terminal: VirtualTerminal,
        *,
        settle: float = 0.1,
        patience: float = 10.0,
    ) -> None:
        self.provider = provider
        self.keyboard = keyboard
        self.terminal = terminal
        self.capabilities = CAPABILITIES
        #: How long a batch may stay drawn after its ask settled (one redraw).
        self.settle = settle
        #: How long to wait for the screen before giving up with an error.
        self.patience = patience
        self._lock = asyncio.Lock()
        self._numbers = Handles(provider.number_of)

    # -- the screen ---------------------------------------------------------------

    def status(self) -> tuple[int, int, int] | None:
        """``(ask number, question position, question count)`` from the status line."""
        match = _STATUS.match(self.terminal.lines[0])
        if match is None:
            return None
        number, position, count = match.groups()
        return int(number), int(position), int(count)

    async def _until(self, what: str, check: Callable[[], bool]) -> None:
        """Poll until *check()* holds; every poll yields to the loop."""

        def message() -> str:
            return f"the screen never showed {what}; it shows:\n{self.terminal.text()}"

        await poll_until(check, self.patience, message, eager=20)

    async def _bring_up(self, request: AskUserQuestionRequest) -> int:
        """Wait until *request* is queued, then page to it until its status line shows."""

        def message() -> str:
            return f"the screen never showed the request queued; it shows:\n{self.terminal.text()}"

        number = await self._numbers.wait(request, self.patience, message, eager=20)
        while True:
            await self._until(f"ask #{number} or another ask", lambda: self.status() is not None)
            await self.settled()
            shown = self.status()
            if shown is not None and shown[0] == number:
                return number
            self.keyboard.send_text(PAGE_DOWN)

    async def settled(self) -> None:
        """Wait until nothing has been drawn for a few loop iterations.

        Keys sent are read, handled and redrawn within two or three
        iterations, so after this the screen is what the UI holds now, not a
        frame from before the last key or the last settled ask.
        """
        quiet, last = 0, self.terminal.written
        for _ in range(10_000):
            await asyncio.sleep(0)
            quiet = quiet + 1 if self.terminal.written == last else 0
            last = self.terminal.written
            if quiet >= QUIET:
                return

    # -- the human ----------------------------------------------------------------

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Page to *request*, then press the keys *behaviour* takes, question by question."""
        async with self._lock:
            number = await self._bring_up(request)
            if isinstance(behaviour, Nothing):
                return
            if isinstance(behaviour, Dismiss):
                keys = {None: ESCAPE, DISMISS_BY_ESC: ESCAPE, DISMISS_BY_CTRL_C: CTRL_C}
                if behaviour.way not in keys:
                    msg = f"no way to dismiss called {behaviour.way!r} at the terminal"
                    raise ValueError(msg)
                key = keys[behaviour.way]
                self.keyboard.send_text(key)
                if key == ESCAPE:
                    # A lone Esc acts only after two waits of ESCAPE_DELAY with no key
                    # after it: the input's parser holds it as the start of a sequence,
                    # then the key bindings as the prefix of Alt-key. A key sent sooner
                    # (paging to another pending ask) would join it, and the dismissal
                    # would be lost. Both waits are timed on this loop's clock.
                    for _ in range(2):
                        await self.settled()
                        await asyncio.sleep(ESCAPE_DELAY)
                await self.settled()
                return
            count = len(request["questions"])
            for position, (question, action) in enumerate(
                zip(request["questions"], behaviour, strict=True), 1
            ):
                where = (number, position, count)

                def there(where: tuple[int, int, int] = where) -> bool:
                    return self.status() == where

                await self._until(f"question {position}/{count}", there)
                await self.settled()
                await self._send(self._keys(question, action, position))

    async def _send(self, keys: str) -> None:
        """Send *keys* in chunks, letting the loop read each before the next.

        The pipe holds about 64 KB; one write of more, from the loop's own
        thread, would block it with nobody reading.
        """
        for start in range(0, len(keys), _CHUNK):
            self.keyboard.send_text(keys[start : start + _CHUNK])
            await asyncio.sleep(0)

    def _keys(self, question: AskUserQuestionItem, action: Action, position: int) -> str:
        """The keys for *action* on a question shown fresh (highlight on the first option)."""
        labels = [option["label"] for option in question.get("options", ())]
        if isinstance(action, Revise):
            msg = "the terminal declares revises=False: it cannot change its mind on a question"
            raise TypeError(msg)
        if isinstance(action, Skip):
            return "s" if labels else TAB + "s"
        if not labels:
            assert isinstance(action, TypeText)
            return self._typed(action.text) + ENTER
        multi = question.get("multiSelect") is True
        keys = ""
        cursor = 0
        picks = action.labels
        for nth, label in enumerate(picks):
            index = labels.index(label)
            last = not multi
            if index < 9 and (nth + position) % 2 == 0:
                keys += str(index + 1)  # its number: chooses, or toggles on a multi-select
                cursor = index
                if last:
                    return keys
                continue
            keys += (
                DOWN * ((index - cursor) % len(labels))
                if index >= cursor
                else UP * (cursor - index)
            )
            cursor = index
            keys += " " if multi else ENTER
        if isinstance(action, TypeText):
            return keys + "t" + self._typed(action.text) + ENTER
        return keys + (ENTER if multi else "")

    @staticmethod
    def _typed(text: str) -> str:
        return paste(text) if _needs_paste(text) else text

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether the status line shows this request's ask, after one redraw's grace."""
        number = self._numbers.of(request)
        if number is None:
            return False  # never queued, so never drawn
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle
        while True:
            shown = self.status()
            if shown is None or shown[0] != number:
                return False
            if loop.time() >= deadline:
                return True
            await asyncio.sleep(0.002)


@with_capabilities(CAPABILITIES)
def terminal_subject() -> Subject:
    """A fresh terminal provider on a pipe input and a 100 x 40 emulated screen, with its driver."""
    return make_subject()


def make_subject(
    provider_type: type[TerminalProvider] = TerminalProvider,
    *,
    columns: int = 100,
    rows: int = 40,
    name: str = "terminal",
) -> Subject:
    """A fresh provider of *provider_type* on a pipe input and an emulated screen, with its driver.

    *provider_type* is :class:`~dsh_user_interaction.extra.terminal.TerminalProvider`
    or a variant of it (the test gallery's broken ones).
    """
    stack = ExitStack()
    keyboard = stack.enter_context(create_pipe_input())
    terminal = VirtualTerminal(columns, rows)
    provider = provider_type(input=keyboard, output=terminal.output())
    driver = TerminalDriver(provider, keyboard, terminal)

    async def aclose() -> None:
        try:
            await provider.aclose()
        finally:
            stack.close()

    return Subject(provider=provider, driver=driver, name=name, aclose=aclose)
