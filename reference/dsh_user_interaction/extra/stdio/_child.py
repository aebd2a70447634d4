"""The child process and the two threads that carry its lines (harness.md §1, §8).

Design notes:

* The threads belong to the :class:`Link`, not to a process: they start once
  and outlive every restart, so a restart inside a test never starts a
  thread (the suite counts threads an example leaves behind).
* Every event reaches ``on_event`` from the reader thread, tagged with the
  process's generation, so an event of a process already replaced is
  recognisable.
* Standard error goes to an unnamed temporary file: a child that writes a lot
  of it can never block on a full pipe, and its tail is there for a report.
* Writes go through a queue to the writer thread, so a child that stops
  reading cannot block the caller's event loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final, cast

__all__ = ["Event", "Link"]

#: The longest line read; a longer one is a protocol error.
MAX_LINE: Final = 64 * 1024 * 1024
_STOP: Final = object()


@dataclass(frozen=True, slots=True)
class Event:
    """Something the child did: a ``message``, a ``bad-line`` or an ``exit``."""

    kind: str
    generation: int
    #: The parsed message, for ``message``.
    message: dict[str, Any] | None = None
    #: The raw line (``message``, ``bad-line``), decoded leniently for reports.
    text: str = ""
    #: Why the line is bad, or the exit status as text.
    detail: str = ""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


class Link:
    """Starts the child, writes lines to it and reads lines from it."""

    def __init__(
        self,
        argv: Sequence[str],
        on_event: Callable[[Event], None],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self._on_event = on_event
        self._cwd = cwd
        self._env = env
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self.generation = 0
        self._outbox: queue.SimpleQueue[tuple[int, bytes] | object] = queue.SimpleQueue()
        self._closed = False
        #: Every process started, for the finalizer, which must not hold the link.
        self._processes: list[subprocess.Popen[bytes]] = []
        self._reader = threading.Thread(target=self._read, name="dsh-harness-reader", daemon=True)
        self._writer = threading.Thread(target=self._write, name="dsh-harness-writer", daemon=True)
        self._reader.start()
        self._writer.start()
        weakref.finalize(self, _kill, self._processes)

    def start(self) -> int:
        """Start a (fresh) child process; return its generation.

        Raises :class:`OSError` when the command cannot be started.
        """
        self.kill()
        self._close_stderr()
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the next start, or close()
        try:
            process = subprocess.Popen(  # noqa: S603 - the command is the user's own
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=self._cwd,
                env=self._env,
                # Its own process group, so that a kill reaches the grandchildren
                # that could otherwise hold its output open.
                start_new_session=True,
            )
        except BaseException:
            stderr.close()
            raise
        with self._ready:
            self.generation += 1
            self._process = process
            self._stderr = stderr
            self._processes.append(process)
            self._ready.notify_all()
            return self.generation

    @property
    def alive(self) -> bool:
        """Whether the current child is running."""
        process = self._process
        return process is not None and process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The current child's exit status, once it has exited."""
        process = self._process
        return None if process is None else process.poll()

    def send(self, data: bytes) -> None:
        """Queue *data* (whole lines) for the current child."""
        self._outbox.put((self.generation, data))

    def stderr_tail(self, lines: int = 15, limit: int = 4000) -> str:
        """The last lines the child wrote on standard error, for a report."""
        stderr = self._stderr
        if stderr is None:
            return ""
        try:
            size = os.fstat(stderr.fileno()).st_size
            with open(os.dup(stderr.fileno()), "rb") as copy:
                copy.seek(max(0, size - limit))
                text = copy.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        """Stop the current child, if any: close its input, then kill it."""
        with self._lock:
            process, stderr = self._process, self._stderr
        if process is None:
            return
        _kill_group(process)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a kill is not refused
            process.wait(timeout=5)
        if process.stdin is not None:
            # A write blocked on it fails now that its reader is dead, so this never waits.
            with contextlib.suppress(OSError):
                process.stdin.close()
        # Its output is the reader thread's to close, since only that thread reads it.
        # Standard error stays readable for a last report; the next start replaces it.
        del stderr

    def _close_stderr(self) -> None:
        with self._lock:
            stderr, self._stderr = self._stderr, None
        if stderr is not None:
            stderr.close()

    def close(self) -> None:
        """Stop the child and let the threads end."""
        self.kill()
        self._close_stderr()
        self._closed = True
        self._outbox.put(_STOP)
        with self._ready:
            self._ready.notify_all()

    # -- threads ---------------------------------------------------------

    def _next_process(self, after: int) -> tuple[int, subprocess.Popen[bytes]] | None:
        with self._ready:
            while not self._closed and (self._process is None or self.generation == after):
                self._ready.wait()
            if self._closed or self._process is None:
                return None
            return self.generation, self._process

    def _read(self) -> None:
        seen = 0
        while True:
            found = self._next_process(seen)
            if found is None:
                return
            seen, process = found
            stdout = process.stdout
            if stdout is not None:
                try:
                    self._read_lines(seen, stdout.fileno())
                finally:
                    with contextlib.suppress(OSError):
                        stdout.close()  # only this thread reads it, so only it closes it
            try:
                status = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                status = process.wait()
            self._on_event(Event("exit", seen, detail=str(status)))

    def _read_lines(self, generation: int, fd: int) -> None:
        """Read lines until the output ends, or the process is replaced or the link closed.

        A grandchild that keeps the pipe open cannot hold the reader: it polls,
        and gives up on a process the link no longer runs.
        """
        pending = b""
        quiet_after_exit = 0
        while True:
            if self._closed or generation != self.generation:
                return
            try:
                ready, _, _ = select.select([fd], [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                process = self._process
                if process is not None and process.poll() is not None:
                    # Exited, and a grandchild may hold the pipe: a second of quiet ends it.
                    quiet_after_exit += 1
                    if quiet_after_exit > 5:
                        return
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                if pending:
                    self._line(generation, pending, complete=False)
                return
            pending += chunk
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                self._line(generation, raw + b"\n", complete=True)
            if len(pending) >= MAX_LINE:
                self._line(generation, pending[:200], complete=False, detail="too long")
                return

    def _line(self, generation: int, raw: bytes, *, complete: bool, detail: str = "") -> None:
        text = raw.decode("utf-8", "replace")
        if not complete:
            self._on_event(
                Event("bad-line", generation, text=text, detail=detail or "no newline at the end")
            )
            return
        try:
            message = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            why = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            self._on_event(Event("bad-line", generation, text=text, detail=why))
            return
        if type(message) is not dict:
            self._on_event(Event("bad-line", generation, text=text, detail="not a JSON object"))
            return
        found = cast("dict[str, Any]", message)
        self._on_event(Event("message", generation, message=found, text=text))

    def _write(self) -> None:
        while True:
            item = self._outbox.get()
            if item is _STOP:
                return
            generation, data = cast("tuple[int, bytes]", item)
            process = self._process
            if process is None or generation != self.generation or process.stdin is None:
                continue
            try:
                process.stdin.write(data)
                process.stdin.flush()
            except (OSError, ValueError):
                continue  # the reader reports the exit


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill *process* and the process group it leads (its own, from ``start_new_session``)."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        process.kill()


def _kill(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        _kill_group(process)
