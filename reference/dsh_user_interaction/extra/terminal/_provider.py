"""The terminal provider: pending asks in a queue, one batch on screen at a time.

Invariants (the ``ask()`` of one request goes through them in order):

* A request whose signal has already aborted raises ``ASK_ABORTED`` and is
  never queued, so nothing is shown (``PRV-ABORT-1``); after
  :meth:`TerminalProvider.dispose`, every ask raises ``PROVIDER_DISPOSED``.
* Asks queue in arrival order; the oldest is on screen unless the human
  pages to another one (PgUp/PgDn). Each gets a number, shown on its status
  line, that never changes.
* An ask leaves the queue, and so the screen, in the very callback that
  settles it: the answer, a dismissal, the abort listener, the disposal. A
  cancellation removes it when the cancelled call resumes. The screen is
  redrawn on the next loop iteration.
* The prompt_toolkit application runs only while the queue is not empty, in
  one task of this provider's; it leaves the terminal (erasing what it drew)
  when the last ask settles, and :meth:`TerminalProvider.aclose` waits for
  that.
* When the terminal fails (its input closes, or it cannot be drawn on),
  every waiting ask raises that error rather than wait for nobody.
* Cancellation always propagates (``PRV-CANCEL-1``), except when the human's
  answer was accepted in the same loop iteration: the answer is returned, as
  :class:`~dsh_user_interaction.ScriptedProvider` does, so it is never lost.
* An ask that leaves the screen other than by this terminal's answer (it
  ended elsewhere, the agent withdrew it, its time ran out) is worded in a
  line of its own (``DUR-TELL-1``): under the status line while other asks
  are shown, and written to the terminal when the application leaves it.
  Served through a relay (``VerdictAware``), an answer or dismissal given
  here is "saved" only once the store's verdict says so (``DUR-ACK-1``).
* While the shown batch has a ``deadline``, one background task of the
  application's redraws the screen each time the countdown's seconds change
  (at least once a second) and ends when time is up. It is cancelled as soon
  as another batch is shown or none is, and the application cancels it when
  it stops; a batch without a deadline has no such task.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from prompt_toolkit.application import Application
from prompt_toolkit.filters import Condition, Filter
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import Dimension, HSplit, Layout, ScrollOffsets, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import Output, create_output

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    deadline_of,
)
from dsh_user_interaction._durable._verdict import Verdict
from dsh_user_interaction._durable._withdrawn import Withdrawn
from dsh_user_interaction.extra._reading import agent_name

from ._ended import sending_line, verdict_line, withdrawn_line
from ._form import Form, QuestionState
from ._layout import Shares, rows, share
from ._view import STYLE, countdown_line, help_line, question_parts, status_line

__all__ = ["TerminalProvider"]

#: How long a lone Esc waits for the rest of an escape sequence, in seconds.
ESCAPE_DELAY: Final = 0.05
#: How long after the countdown's second changes the screen is redrawn, in seconds:
#: late enough that the new second is drawn, never the one before.
TICK_SLACK: Final = 0.01
#: The name of the task that redraws the countdown, for whoever lists the loop's tasks.
CLOCK_TASK: Final = "dsh-user-interaction terminal countdown"
#: Lines on how asks ended that wait to be written when the terminal is left.
NOTICES_KEPT: Final = 50


@dataclass(eq=False)
class _Batch:
    """One pending ask: its number on screen, its request, its form and its outcome."""

    number: int
    request: AskUserQuestionRequest
    form: Form
    future: asyncio.Future[AskUserQuestionAnswer]
    removers: list[Callable[[], None]] = field(default_factory=list[Callable[[], None]])
    #: Who is asking, as shown: read from the agent once, when the ask arrives.
    asker: str | None = None
    #: The store's verdict on this terminal's outcome, when a relay promised one.
    verdict: asyncio.Future[Verdict] | None = None


@dataclass(frozen=True)
class _Frame:
    """One screen of the shown batch: each area's fragments and rows, at one size."""

    status: StyleAndTextTuples
    above: StyleAndTextTuples
    question: StyleAndTextTuples
    detail: StyleAndTextTuples
    options: StyleAndTextTuples
    help: StyleAndTextTuples
    #: The rows of the status and help lines.
    status_rows: int
    help_rows: int
    shares: Shares
    #: How many rows the whole detail (or plan) takes.
    detail_rows: int


def _joined(lines: list[StyleAndTextTuples]) -> StyleAndTextTuples:
    """Screen rows as fragments, one line each."""
    out: StyleAndTextTuples = []
    for index, line in enumerate(lines):
        if index:
            out.append(("", "\n"))
        out += line
    return out


def _frame(
    state: QuestionState, asker: str | None, status: StyleAndTextTuples, width: int, height: int
) -> _Frame:
    """The screen of *state* at *width* by *height* cells: see :mod:`._layout`."""
    above, asked, detail, rest = question_parts(state, asker)
    above_rows, asked_rows = rows(above, width), rows(asked, width)
    detail_rows = rows(detail, width)
    rest_rows = len(rows(rest, width))
    status_rows = min(height, len(rows(status, width)))
    for cut in (False, True):
        keys = help_line(state, width, detail=cut)
        help_rows = min(height - status_rows, len(rows(keys, width)))
        shares = share(
            height - status_rows - help_rows,
            len(above_rows),
            len(asked_rows),
            len(detail_rows),
            rest_rows,
            reading=state.reading,
        )
        if shares.detail >= len(detail_rows):
            break
    top = max(0, min(state.detail_top, len(detail_rows) - shares.detail))
    return _Frame(
        status=status,
        above=_joined(above_rows[len(above_rows) - shares.above :] if shares.above else []),
        question=_joined(asked_rows[: shares.question]),
        detail=_joined(detail_rows[top : top + shares.detail]),
        options=rest,
        help=keys,
        status_rows=status_rows,
        help_rows=help_rows,
        shares=shares,
        detail_rows=len(detail_rows),
    )


def _choose(number: int) -> Callable[[Form], None]:
    """The action of a number key."""

    def choose(form: Form) -> None:
        form.number(number)

    return choose


class TerminalProvider:
    """A :class:`~dsh_user_interaction.UserInteractionProvider` in a terminal, on prompt_toolkit.

    *input* and *output* default to the process's terminal; pass a pipe input
    and an output of your own to drive it from code, as
    :class:`~dsh_user_interaction.extra.terminal.testing.TerminalDriver` does.
    The keys are listed in the documentation's "Terminal provider" page.
    """

    # What the test gallery's broken variants change; not an extension point.
    _form_type: type[Form] = Form
    #: What Esc and Ctrl-C raise: the human closed the dialog (PRV-DISMISS-1).
    _dismissal: ErrorCode = ErrorCode.ASK_CANCELLED

    def __init__(self, *, input: Input | None = None, output: Output | None = None) -> None:
        self._input = input
        self._output = output
        self._queue: list[_Batch] = []
        #: The batch the human paged to; ``None`` shows the oldest.
        self._front: _Batch | None = None
        self._numbers = 0
        self._disposed = False
        self._app: Application[None] | None = None
        self._runner: asyncio.Task[None] | None = None
        #: The last screen computed, and what it was computed for.
        self._frame_cache: tuple[object, _Frame] | None = None
        #: The shown batch with a deadline, and the task redrawing its countdown.
        self._clock: tuple[_Batch, asyncio.Task[None]] | None = None
        #: Lines on how asks ended, to write when the terminal is left; the last is shown.
        self._notices: collections.deque[str] = collections.deque(maxlen=NOTICES_KEPT)
        self._latest: str | None = None
        #: The verdicts a relay promised, by the request's identity, until it is asked.
        self._verdicts: dict[int, tuple[AskUserQuestionRequest, asyncio.Future[Verdict]]] = {}
        self._printer: Output | None = None

    # -- the provider protocol ----------------------------------------------------

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Queue *request*, show it when its turn comes, and return the human's answer.

        Raises ``ASK_ABORTED`` when the signal aborts (or had aborted),
        ``ASK_CANCELLED`` when the human dismisses the batch, and
        ``PROVIDER_DISPOSED`` when the provider is disposed first.
        """
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        if not request["questions"]:
            # A service never passes this on (SVC-ORDER-2); a direct caller gets its code.
            raise UserInteractionError.of(ErrorCode.EMPTY_QUESTIONS)
        if self._disposed:
            raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)
        self._numbers += 1
        future: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        # The agent is any object (REQ-AGENT-2): read once, defensively, never on a redraw.
        asker = agent_name(request.get("agent"))
        batch = _Batch(self._numbers, request, self._form_type(request), future, asker=asker)
        promised = self._verdicts.pop(id(request), None)
        if promised is not None and promised[0] is request:
            batch.verdict = promised[1]
        if signal is not None:
            batch.removers.append(signal.add_listener(lambda fired: self._withdraw(batch, fired)))
        self._queue.append(batch)
        self._show()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                # Accepted in the loop iteration the cancellation landed in: the answer wins.
                return future.result()
            raise
        finally:
            self._forget(batch)

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        """A relay's promise of the store's verdict on *request*'s outcome (``DUR-ACK-1``)."""
        key = id(request)
        self._verdicts[key] = (request, verdict)

        def forget(_done: asyncio.Future[Verdict]) -> None:
            kept = self._verdicts.get(key)
            if kept is not None and kept[1] is verdict:
                del self._verdicts[key]

        verdict.add_done_callback(forget)

    def number_of(self, request: AskUserQuestionRequest) -> int | None:
        """The number the status line shows for a pending *request* (``ask #N``), or ``None``.

        For drivers and logs: it tells which of several pending batches with
        the same questions is which.
        """
        return next((b.number for b in self._queue if b.request is request), None)

    @property
    def pending(self) -> int:
        """How many asks are queued or on screen."""
        return len(self._queue)

    def dispose(self) -> None:
        """Reject every pending ask with ``PROVIDER_DISPOSED``, and refuse new ones.

        The terminal is left on the next loop iteration; await :meth:`aclose`
        to wait for that.
        """
        self._disposed = True
        for batch in list(self._queue):
            self._settle(batch, ErrorCode.PROVIDER_DISPOSED)

    async def aclose(self) -> None:
        """Dispose of the provider and wait until it has left the terminal."""
        self.dispose()
        runner = self._runner
        if runner is not None and not runner.done():
            done, _ = await asyncio.wait({runner}, timeout=1.0)
            if not done:
                runner.cancel()
                await asyncio.wait({runner})

    # -- settling -----------------------------------------------------------------

    def _settle(self, batch: _Batch, code: ErrorCode) -> None:
        """End *batch* with *code*, and take it off the screen at once."""
        if not batch.future.done():
            batch.future.set_exception(UserInteractionError.of(code))
            if code is self._dismissal:
                self._await_verdict(batch, dismissed=True)
        self._forget(batch)

    def _accept(self, batch: _Batch) -> None:
        """The human answered every question of *batch*: return the answer."""
        if not batch.future.done():
            batch.future.set_result(batch.form.answer())
            self._await_verdict(batch, dismissed=False)
        self._forget(batch)

    def _withdraw(self, batch: _Batch, signal: object) -> None:
        """*batch*'s signal aborted: say how the ask ended (``DUR-TELL-1``), and end it.

        An ask that ended elsewhere (a :class:`~dsh_user_interaction.durable.Withdrawn`
        reason), or one a relay shows, gets a line that outlives the screen;
        the agent's own abort of an ask it asked directly is shown only while
        other asks are on screen.
        """
        if not batch.future.done():
            reason = getattr(signal, "reason", None)
            lasting = isinstance(reason, Withdrawn) or batch.verdict is not None
            self._notify(withdrawn_line(batch.number, reason), lasting=lasting)
        self._settle(batch, ErrorCode.ASK_ABORTED)

    def _await_verdict(self, batch: _Batch, *, dismissed: bool) -> None:
        """Say "sending", then what the store made of it, when a relay gives a verdict."""
        verdict = batch.verdict
        if verdict is None:
            return
        self._notify(sending_line(batch.number, dismissed=dismissed))

        def told(done: asyncio.Future[Verdict]) -> None:
            if not done.cancelled():
                self._notify(verdict_line(batch.number, done.result(), dismissed=dismissed))

        verdict.add_done_callback(told)

    # -- the lines on how asks ended ----------------------------------------------

    def _notify(self, line: str, *, lasting: bool = True) -> None:
        """Show *line* under the status line; write it when the terminal is left if *lasting*."""
        app = self._app
        if app is not None and app.future is not None and not app.future.done():
            if lasting:
                self._notices.append(line)
            self._latest = line
            app.invalidate()
        elif lasting:
            self._write([line])

    def _write(self, lines: list[str]) -> None:
        """Write *lines* to the terminal, below whatever is there (no application runs)."""
        if not lines:
            return
        if self._printer is None:
            self._printer = self._output if self._output is not None else create_output()
        for line in lines:
            self._printer.write(line + "\r\n")  # (write escapes any control character)
        self._printer.flush()

    def _forget(self, batch: _Batch) -> None:
        """Take *batch* off the queue and the screen; leave the terminal if nothing is left."""
        for remove in batch.removers:
            remove()
        batch.removers.clear()
        if batch not in self._queue:
            return
        self._queue.remove(batch)
        if self._front is batch:
            self._front = None
        self._keep_time()
        app = self._app
        if app is None:
            return
        if self._queue:
            app.invalidate()
        elif app.future is not None and not app.future.done():
            app.exit()

    # -- the screen ---------------------------------------------------------------

    @property
    def _shown(self) -> _Batch | None:
        if self._front is not None:
            return self._front
        return self._queue[0] if self._queue else None

    def _show(self) -> None:
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(
                self._run(), name="dsh-user-interaction terminal"
            )
        elif self._app is not None:
            self._app.invalidate()
            self._keep_time()

    async def _run(self) -> None:
        """Run the application while asks are pending; once more if one came as it closed."""
        while self._queue:
            app = self._application()
            self._app = app
            try:
                await app.run_async(
                    pre_run=self._keep_time, set_exception_handler=False, handle_sigint=False
                )
            except Exception as error:  # noqa: BLE001 - handed to every waiting ask instead
                # The terminal failed (its input closed: EOFError, or it cannot
                # be drawn on): no human can answer, so no ask may wait for one.
                for batch in list(self._queue):
                    if not batch.future.done():
                        batch.future.set_exception(error)
                    self._forget(batch)
            finally:
                self._app = None
                self._stop_clock()
                # Written on the terminal the application left, so they stay in sight.
                self._latest = None
                self._write(list(self._notices))
                self._notices.clear()

    # -- the countdown ------------------------------------------------------------

    def _keep_time(self) -> None:
        """Redraw the countdown while the shown batch has a deadline, and only then.

        Called whenever the shown batch may change (an ask queued or gone,
        PgDn, PgUp) and when the application starts.
        """
        shown = self._shown
        timed = shown if shown is not None and deadline_of(shown.request) is not None else None
        if self._clock is not None and self._clock[0] is timed:
            return  # its clock runs, or ran until time was up
        self._stop_clock()
        app = self._app
        if timed is None or app is None or not app.is_running:
            return
        if app.future is None or app.future.done():
            return  # leaving the terminal: the next application starts its own
        task = app.create_background_task(self._tick(app, timed.request))
        task.set_name(CLOCK_TASK)
        self._clock = (timed, task)

    def _stop_clock(self) -> None:
        clock, self._clock = self._clock, None
        if clock is not None:
            clock[1].cancel()

    @staticmethod
    async def _tick(app: Application[None], request: AskUserQuestionRequest) -> None:
        """Redraw *app* just after each change of *request*'s countdown, until time is up."""
        while True:
            deadline = deadline_of(request)
            left = 0.0 if deadline is None else deadline - time.time()
            if left <= 0:
                return
            # The countdown shows whole seconds, rounded up: the next one starts in this long.
            await asyncio.sleep(min(1.0, left - math.ceil(left) + 1 + TICK_SLACK))
            app.invalidate()

    def _frame(self) -> _Frame | None:
        """The shown batch's screen, computed once per render (and kept for the keys)."""
        batch = self._shown
        app = self._app
        if batch is None or app is None:
            return None
        size = app.output.get_size()
        form = batch.form
        key = (app.render_counter, size, id(batch), form.current)
        if self._frame_cache is not None and self._frame_cache[0] == key:
            return self._frame_cache[1]
        # The shown batch is always queued; PgUp reaches those before it, PgDn those after.
        queue = self._queue
        before = queue.index(batch) if batch in queue else 0
        status = status_line(batch.number, form, before, max(0, len(queue) - 1 - before))
        countdown = countdown_line(batch.request)
        if countdown:
            status = [*status, ("", "\n"), *countdown]
        if self._latest is not None:
            status = [*status, ("", "\n"), ("class:notice", self._latest)]
        frame = _frame(form.state, batch.asker, status, size.columns, size.rows)
        self._frame_cache = (key, frame)
        return frame

    def _area(
        self, fragments: Callable[[_Frame], StyleAndTextTuples], rows: Callable[[_Frame], int]
    ) -> tuple[Callable[[], StyleAndTextTuples], Callable[[], Dimension]]:
        """The content and height of one area of the screen, read from the current frame."""

        def content() -> StyleAndTextTuples:
            frame = self._frame()
            return [] if frame is None else fragments(frame)

        def height() -> Dimension:
            frame = self._frame()
            return Dimension.exact(0 if frame is None else rows(frame))

        return content, height

    def _application(self) -> Application[None]:
        editing = Condition(lambda: self._shown is not None and self._shown.form.state.editing)

        def area(
            fragments: Callable[[_Frame], StyleAndTextTuples],
            rows: Callable[[_Frame], int],
            *,
            wrap_lines: bool = False,
        ) -> Window:
            content, height = self._area(fragments, rows)
            return Window(FormattedTextControl(content), height=height, wrap_lines=wrap_lines)

        options_content, options_height = self._area(
            lambda f: f.options, lambda f: f.shares.options
        )
        layout = Layout(
            HSplit(
                [
                    area(lambda f: f.status, lambda f: f.status_rows, wrap_lines=True),
                    area(lambda f: f.above, lambda f: f.shares.above),
                    area(lambda f: f.question, lambda f: f.shares.question),
                    area(lambda f: f.detail, lambda f: f.shares.detail),
                    Window(
                        FormattedTextControl(options_content),
                        wrap_lines=True,
                        height=options_height,
                        # A row of context around the highlight: the option above, its description.
                        scroll_offsets=ScrollOffsets(top=1, bottom=1),
                        always_hide_cursor=~editing,
                    ),
                    area(lambda f: f.help, lambda f: f.help_rows, wrap_lines=True),
                ]
            )
        )
        app: Application[None] = Application(
            layout=layout,
            key_bindings=self._key_bindings(editing),
            style=STYLE,
            full_screen=True,
            erase_when_done=True,
            mouse_support=False,
            input=self._input,
            output=self._output,
            # Redraw on the next loop iteration, never later: the screen follows the queue.
            max_render_postpone_time=None,
        )
        app.ttimeoutlen = ESCAPE_DELAY
        # A lone Esc is a prefix of the Alt bindings; after this long it dismisses.
        app.timeoutlen = ESCAPE_DELAY
        return app

    # -- the keys -----------------------------------------------------------------

    def _key_bindings(self, editing: Condition) -> KeyBindings:
        bindings = KeyBindings()
        options = ~editing

        def on(
            *keys: str | Keys, when: Filter | None = None
        ) -> Callable[[Callable[[Form], None]], None]:
            def register(action: Callable[[Form], None]) -> None:
                def handler(event: KeyPressEvent) -> None:
                    batch = self._shown
                    if batch is None:
                        return
                    batch.form.state.notice = ""
                    batch.form.state.reading = False
                    action(batch.form)
                    if batch.form.complete:
                        self._accept(batch)

                bindings.add(*keys, filter=when if when is not None else True)(handler)

            return register

        @bindings.add("escape", Keys.Any)
        def _meta_key(event: KeyPressEvent) -> None:
            # Alt with a key (Alt-b, say, out of habit in the text field) arrives as
            # Esc and that key: it does nothing, so only a lone Esc dismisses.
            return

        @bindings.add("escape")
        @bindings.add("c-c")
        def _dismiss(event: KeyPressEvent) -> None:
            batch = self._shown
            if batch is not None:
                self._settle(batch, self._dismissal)

        @bindings.add("c-f")
        def _detail_down(event: KeyPressEvent) -> None:
            self._scroll_detail(1)

        @bindings.add("c-b")
        def _detail_up(event: KeyPressEvent) -> None:
            self._scroll_detail(-1)

        @bindings.add("pagedown")
        def _next_ask(event: KeyPressEvent) -> None:
            self._page(1)

        @bindings.add("pageup")
        def _previous_ask(event: KeyPressEvent) -> None:
            self._page(-1)

        on("up", when=options)(lambda form: form.move(-1))
        on("down", when=options)(lambda form: form.move(1))
        on("left", when=options)(lambda form: form.go(-1))
        on("right", when=options)(lambda form: form.go(1))
        on(" ", when=options)(lambda form: form.toggle())
        on("enter", when=options)(lambda form: form.confirm())
        on("t", when=options)(lambda form: form.open_text())
        on("tab", when=options)(lambda form: form.open_text())
        on("s", when=options)(lambda form: form.skip())
        for digit in range(1, 10):
            on(str(digit), when=options)(_choose(digit))

        on("enter", when=editing)(lambda form: form.submit_text())
        on("tab", when=editing)(lambda form: form.leave_text())
        on("backspace", when=editing)(lambda form: form.state.text.backspace())
        on("delete", when=editing)(lambda form: form.state.text.delete())
        on("left", when=editing)(lambda form: form.state.text.move(-1))
        on("right", when=editing)(lambda form: form.state.text.move(1))
        on("home", when=editing)(lambda form: form.state.text.move(-len(form.state.text.text)))
        on("end", when=editing)(lambda form: form.state.text.move(len(form.state.text.text)))
        on("c-u", when=editing)(lambda form: form.state.text.clear())

        @bindings.add(Keys.BracketedPaste, filter=editing)
        @bindings.add(Keys.Any, filter=editing)
        def _insert(event: KeyPressEvent) -> None:
            # Note: prompt_toolkit's own paste binding turns CR into LF; pasted and
            # typed text is inserted exactly as it arrives instead (PRV-TEXT-1).
            batch = self._shown
            if batch is None or not event.data:
                return
            key = event.key_sequence[0].key
            if isinstance(key, Keys) and key is not Keys.BracketedPaste:
                return  # an unbound control or function key, not text
            batch.form.state.notice = ""
            batch.form.state.reading = False
            self._insert(batch.form, event.data)

        return bindings

    def _insert(self, form: Form, text: str) -> None:
        """Typed or pasted *text* goes into the field, exactly as it arrived."""
        form.state.text.insert(text)

    def _scroll_detail(self, delta: int) -> None:
        """Ctrl-F (+1) or Ctrl-B (-1): page the detail down or up, by its area's height less one.

        When the detail has no room on screen, the first press gives it room
        (ahead of the options, until another key) and shows its start.
        """
        batch = self._shown
        frame = self._frame_cache[1] if self._frame_cache is not None else None
        if batch is None or frame is None or frame.shares.detail >= frame.detail_rows:
            return
        state = batch.form.state
        state.notice = ""
        if frame.shares.detail == 0:
            state.reading, state.detail_top = True, 0
        else:
            state.reading = True
            page = max(1, frame.shares.detail - 1)
            last = frame.detail_rows - frame.shares.detail
            state.detail_top = max(0, min(last, min(state.detail_top, last) + delta * page))
        if self._app is not None:
            self._app.invalidate()

    def _page(self, delta: int) -> None:
        shown = self._shown
        if shown is None or len(self._queue) < 2:
            return
        index = (self._queue.index(shown) + delta) % len(self._queue)
        self._front = self._queue[index]
        self._keep_time()
        if self._app is not None:
            self._app.invalidate()
