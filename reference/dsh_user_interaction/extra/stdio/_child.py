"""The child process and the two threads that carry its lines (harness.md §1, §8).

Design notes:

* The threads belong to the :class:`Link`, not to a process: they start once
  and outlive every restart, so a restart inside a test never starts a
  thread (the suite counts threads an example leaves behind).
* Every event reaches ``on_event`` from the reader thread, tagged with the
  process's generation, so an event of a process already replaced is
  recognisable.
* Standard error is read by the reader thread too, beside standard output,
  so a child that writes a lot of it never blocks on a full pipe; only its
  last :data:`STDERR_KEPT` bytes are kept, for a report.
* Once the child has exited, the reader reads on for at most
  :data:`AFTER_EXIT` seconds and then stops: a grandchild that holds the
  pipes open, and writes to them, cannot keep the calls pending on the
  child from failing.
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
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

__all__ = ["AFTER_EXIT", "STDERR_KEPT", "Event", "Link"]

#: The longest line read; a longer one is a protocol error.
MAX_LINE: Final = 64 * 1024 * 1024
#: How much of a child's standard error is kept (its tail), in bytes.
STDERR_KEPT: Final = 64 * 1024
#: How long the reader goes on reading once the child has exited, in seconds.
AFTER_EXIT: Final = 1.0
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
        #: The current child's standard error, while the reader still reads it.
        self._stderr_fd: int | None = None
        self._stderr_tail = bytearray()
        self._stderr_lock = threading.Lock()
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
        process = subprocess.Popen(  # noqa: S603 - the command is the user's own
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self._cwd,
            env=self._env,
            # Its own process group, so that a kill reaches the grandchildren
            # that could otherwise hold its output open.
            start_new_session=True,
        )
        assert process.stderr is not None  # asked for above
        os.set_blocking(process.stderr.fileno(), False)
        with self._stderr_lock:
            self._stderr_tail.clear()  # the last child's tail served its last report
        with self._ready:
            self.generation += 1
            self._process = process
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
        self._take_stderr()  # what it wrote since the reader last looked
        with self._stderr_lock:
            text = bytes(self._stderr_tail[-limit:]).decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def _take_stderr(self) -> bool:
        """Read what is waiting on the child's standard error into the tail; ``False`` at its end.

        Non-blocking, and a few chunks at most, so that a child that floods
        it cannot hold the caller.
        """
        with self._stderr_lock:
            fd = self._stderr_fd
            if fd is None:
                return False
            for _ in range(16):
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not chunk:
                    return False
                tail = self._stderr_tail
                tail += chunk
                if len(tail) > STDERR_KEPT:
                    del tail[: len(tail) - STDERR_KEPT]
            return True

    def kill(self) -> None:
        """Stop the current child, if any: close its input, then kill it."""
        with self._lock:
            process = self._process
        if process is None:
            return
        _kill_group(process)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a kill is not refused
            process.wait(timeout=5)
        if process.stdin is not None:
            # A write blocked on it fails now that its reader is dead, so this never waits.
            with contextlib.suppress(OSError):
                process.stdin.close()
        # Its output and standard error are the reader thread's to close, since only
        # that thread reads them; the tail stays for a last report.

    def close(self) -> None:
        """Stop the child and let the threads end."""
        self.kill()
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
            stdout, stderr = process.stdout, process.stderr
            if stdout is not None and stderr is not None:
                with self._stderr_lock:
                    self._stderr_fd = stderr.fileno()
                try:
                    self._read_lines(seen, stdout.fileno(), stderr.fileno())
                finally:
                    self._take_stderr()
                    with self._stderr_lock:
                        self._stderr_fd = None
                    # Only this thread reads them, so only it closes them.
                    for pipe in (stdout, stderr):
                        with contextlib.suppress(OSError):
                            pipe.close()
            try:
                # Its output has ended: a child that runs on without it cannot answer,
                # so it is stopped after a moment rather than waited for.
                status = process.wait(timeout=AFTER_EXIT)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                status = process.wait()
            self._on_event(Event("exit", seen, detail=str(status)))

    def _read_lines(self, generation: int, fd: int, err: int) -> None:
        """Read lines until the output ends, or the process is replaced or the link closed.

        Standard error (*err*) is read into its tail as it comes. A grandchild
        that keeps the pipes open cannot hold the reader: it polls, gives up
        on a process the link no longer runs, and stops :data:`AFTER_EXIT`
        seconds after the child exits, whatever is still being written.
        """
        # The current line's pieces: each chunk is scanned once, so a long line is
        # read in linear time (joining a growing line and searching it again on
        # every chunk was quadratic).
        pieces: list[bytes] = []
        size = 0
        watched = [fd, err]
        exited_at: float | None = None
        while True:
            if self._closed or generation != self.generation:
                return
            process = self._process
            if process is not None and process.poll() is not None:
                # Exited; a grandchild may hold the pipes, and write on: read on a moment.
                exited_at = exited_at if exited_at is not None else time.monotonic()
                if time.monotonic() - exited_at > AFTER_EXIT:
                    return
            try:
                ready, _, _ = select.select(watched, [], [], 0.2)
            except (OSError, ValueError):
                return
            if err in ready and not self._take_stderr():
                watched.remove(err)  # its end: stop watching it
            if fd not in ready:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                if pieces:
                    self._line(generation, b"".join(pieces), complete=False)
                return
            start = 0
            while (end := chunk.find(b"\n", start)) != -1:
                pieces.append(chunk[start : end + 1])
                self._line(generation, b"".join(pieces), complete=True)
                pieces, size, start = [], 0, end + 1
            if start < len(chunk):
                pieces.append(chunk[start:])
                size += len(chunk) - start
            if size >= MAX_LINE:
                self._line(generation, b"".join(pieces)[:200], complete=False, detail="too long")
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
