"""A throwaway PostgreSQL server of the machine's own binaries, for tests.

Design notes:

* ``initdb`` into a new temporary folder, then ``pg_ctl start`` on loopback
  (``127.0.0.1``, a free port) with its Unix socket in that folder; ``pg_ctl
  stop -m immediate`` and the folder's removal at the end. Nothing outside
  the folder is touched, and the server trusts every local connection.
* Settings for speed, since the data is thrown away: ``fsync``,
  ``synchronous_commit`` and ``full_page_writes`` off (a crash of the
  machine could corrupt the cluster; no test cares), and ``initdb
  --no-sync``. Starting takes about half a second.
* PostgreSQL refuses to run as root. When this process is root, the
  binaries run as the ``postgres`` system user (which Debian's package
  creates), and the folder belongs to that user.
* ``DSH_POSTGRES_DSN``, when set, names an existing server to use instead:
  nothing is started or stopped then.
* The server outlives no process that started it. A process killed by a
  signal runs no ``atexit`` and no ``finally``, so each server started here
  has a reaper (``_reaper.py``), a small process that waits on a pipe only
  the starting process holds open, and stops the server and removes its
  folder when the pipe ends.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

__all__ = [
    "DSN_VARIABLE",
    "PostgresServer",
    "ServerUnavailable",
    "postgres_bindir",
    "postgres_server",
    "shared_server",
]

#: The environment variable naming an existing server to use instead of a throwaway one.
DSN_VARIABLE: Final = "DSH_POSTGRES_DSN"

#: The superuser the throwaway cluster is made with (and the system user it runs as under root).
_SUPERUSER: Final = "postgres"

#: Settings for a cluster whose data nobody keeps.
_FAST_SETTINGS: Final = (
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
)

#: How long ``pg_ctl`` waits for the server to accept connections, in seconds.
_START_TIMEOUT: Final = 60

#: How long any one of PostgreSQL's binaries may run, in seconds.
_RUN_TIMEOUT: Final = 2 * _START_TIMEOUT


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server can be started here: no binaries, or no user to run them as.

    Raised by :func:`postgres_server` and :func:`shared_server` before they
    start anything, with a message that says what is missing.
    """


@final
@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A running PostgreSQL server: where to connect, and whether this process owns it."""

    #: A libpq connection string for the server's ``postgres`` database.
    dsn: str
    #: The folder holding the cluster and its Unix socket (``None``: ``DSH_POSTGRES_DSN``'s server).
    folder: Path | None = None
    #: The TCP port on ``127.0.0.1`` (``None``: ``DSH_POSTGRES_DSN``'s server).
    port: int | None = None
    #: How long starting took, in seconds (``0.0`` for a server of ``DSH_POSTGRES_DSN``).
    started_in: float = 0.0

    @property
    def owned(self) -> bool:
        """Whether this process started the server (and stops it)."""
        return self.folder is not None

    @property
    def socket_dsn(self) -> str | None:
        """A connection string through the Unix socket, for a server this process started."""
        if self.folder is None or self.port is None:
            return None
        return f"host={self.folder} port={self.port} user={_SUPERUSER} dbname=postgres"


def postgres_bindir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``.

    ``pg_config --bindir`` when it names a folder with ``initdb``, else
    Debian's newest ``/usr/lib/postgresql/*/bin``, else the ``initdb`` on
    ``PATH``. Raises :class:`ServerUnavailable` when there is none.
    """
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            found = subprocess.run(  # noqa: S603 - the pg_config on PATH
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=30
            ).stdout.strip()
            if found and (Path(found) / "initdb").is_file():
                return Path(found)
    debian = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: _version_key(Path(path).parent.parent.name),
    )
    if debian:
        return Path(debian[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).parent
    msg = (
        "PostgreSQL's initdb is not installed (Debian: apt-get install postgresql), "
        f"and {DSN_VARIABLE} names no server to use instead"
    )
    raise ServerUnavailable(msg)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


@dataclass(frozen=True, slots=True)
class _RunAs:
    """Who runs the server's binaries: this process's user, or ``postgres`` under root."""

    uid: int | None = None
    gid: int | None = None

    @classmethod
    def choose(cls) -> _RunAs:
        if os.geteuid() != 0:
            return cls()
        try:
            entry = pwd.getpwnam(_SUPERUSER)
        except KeyError:
            msg = (
                "PostgreSQL refuses to run as root, and there is no 'postgres' user to run it "
                "as (Debian's postgresql package creates one)"
            )
            raise ServerUnavailable(msg) from None
        return cls(entry.pw_uid, entry.pw_gid)

    def run(self, command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run one of PostgreSQL's binaries to its end, as the chosen user.

        Raises :class:`ServerUnavailable` when it cannot be started at all (a
        missing binary, or no permission to switch to the ``postgres`` user).
        """
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith("PG")
        } | {"LC_ALL": "C"}
        switch: dict[str, Any] = (
            {} if self.uid is None else {"user": self.uid, "group": self.gid, "extra_groups": []}
        )
        try:
            return subprocess.run(  # noqa: S603 - PostgreSQL's binaries, our arguments
                command,
                cwd=cwd,
                env=environment,
                capture_output=True,
                text=True,
                check=False,
                timeout=_RUN_TIMEOUT,
                **switch,
            )
        except (PermissionError, FileNotFoundError) as error:
            who = "this user" if self.uid is None else f"the {_SUPERUSER!r} user"
            msg = f"cannot run {command[0]} as {who}: {error}"
            raise ServerUnavailable(msg) from error


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(bindir: Path, run_as: _RunAs) -> PostgresServer:
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="dsh-postgres-"))
    try:
        if run_as.uid is not None and run_as.gid is not None:
            os.chown(folder, run_as.uid, run_as.gid)
        data = folder / "data"
        initdb = run_as.run(
            [
                str(bindir / "initdb"),
                f"--pgdata={data}",
                f"--username={_SUPERUSER}",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            ],
            folder,
        )
        if initdb.returncode != 0:
            msg = f"initdb failed ({initdb.returncode}): {initdb.stderr.strip()[-2000:]}"
            raise RuntimeError(msg)
        failures: list[str] = []
        for _ in range(5):  # another process may take the free port before the server does
            port = _free_port()
            options = [
                "-c listen_addresses=127.0.0.1",
                f"-p {port}",
                f"-k {folder}",
                *(f"-c {setting}" for setting in _FAST_SETTINGS),
            ]
            started_server = run_as.run(
                [
                    str(bindir / "pg_ctl"),
                    f"--pgdata={data}",
                    f"--log={folder / 'server.log'}",
                    "--wait",
                    f"--timeout={_START_TIMEOUT}",
                    f"--options={' '.join(options)}",
                    "start",
                ],
                folder,
            )
            if started_server.returncode == 0:
                _REAPERS[folder] = _reaper(folder, bindir)
                dsn = f"host=127.0.0.1 port={port} user={_SUPERUSER} dbname=postgres"
                return PostgresServer(dsn, folder, port, time.monotonic() - started)
            failures.append(started_server.stderr.strip())
        log = (folder / "server.log").read_text(errors="replace")[-2000:]
        msg = f"pg_ctl could not start the server: {failures[-1]}\n{log}"
        raise RuntimeError(msg)
    except BaseException:
        # Interrupted while pg_ctl started it, the server may run.
        with contextlib.suppress(Exception):
            _stop_cluster(folder, bindir, run_as)
        shutil.rmtree(folder, ignore_errors=True)
        raise


#: The reaper of each server this process started, by its folder (see ``_reaper.py``).
_REAPERS: Final[dict[Path, subprocess.Popen[bytes]]] = {}


def _reaper(folder: Path, bindir: Path) -> subprocess.Popen[bytes]:
    """Start the process that stops the server in *folder* once this process has gone."""
    return subprocess.Popen(  # noqa: S603 - this interpreter, our module
        [
            sys.executable,
            "-m",
            "dsh_user_interaction.extra.postgres._reaper",
            str(folder),
            str(bindir),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _stop(server: PostgresServer, bindir: Path, run_as: _RunAs) -> None:
    if server.folder is None:
        return
    try:
        _stop_cluster(server.folder, bindir, run_as)
    finally:
        reaper = _REAPERS.pop(server.folder, None)
        if reaper is not None and reaper.stdin is not None:
            # Its pipe ends: it finds the folder gone, and exits.
            reaper.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                reaper.wait(_RUN_TIMEOUT)


def _stop_cluster(folder: Path, bindir: Path, run_as: _RunAs) -> None:
    """Stop the server whose cluster is in *folder*, if it runs, and remove the folder."""
    data = folder / "data"
    stopped = run_as.run(
        [str(bindir / "pg_ctl"), f"--pgdata={data}", "--mode=immediate", "--wait", "stop"],
        folder,
    )
    if stopped.returncode != 0 and (data / "postmaster.pid").exists():
        # pg_ctl failed, yet the server may run: end the postmaster itself.
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((data / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def postgres_server(*, from_environment: bool = True) -> Generator[PostgresServer]:
    """A PostgreSQL server for the block: a throwaway one, or ``DSH_POSTGRES_DSN``'s.

    A throwaway server is started on entry (it takes about half a second)
    and stopped, its folder removed, on exit. With *from_environment* false,
    ``DSH_POSTGRES_DSN`` is ignored and a throwaway server always started.
    Raises :class:`ServerUnavailable` when no server can be started here,
    and :class:`RuntimeError` with the server's own words when starting
    fails.
    """
    existing = os.environ.get(DSN_VARIABLE) if from_environment else None
    if existing:
        yield PostgresServer(existing)
        return
    bindir = postgres_bindir()
    run_as = _RunAs.choose()
    server = _start(bindir, run_as)
    try:
        yield server
    finally:
        _stop(server, bindir, run_as)


_shared_lock = threading.Lock()
_shared: list[PostgresServer] = []


def shared_server() -> PostgresServer:
    """This process's server, started on first use and stopped when the interpreter exits.

    The server of ``DSH_POSTGRES_DSN`` when set. Safe to call from several
    threads; blocks while the first call starts the server.
    """
    with _shared_lock:
        if not _shared:
            existing = os.environ.get(DSN_VARIABLE)
            if existing:
                _shared.append(PostgresServer(existing))
            else:
                bindir = postgres_bindir()
                run_as = _RunAs.choose()
                server = _start(bindir, run_as)
                atexit.register(_stop, server, bindir, run_as)
                _shared.append(server)
        return _shared[0]
