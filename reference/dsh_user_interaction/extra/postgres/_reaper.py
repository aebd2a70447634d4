"""Stop a throwaway PostgreSQL server once the process that started it has gone, however it went.

Run as ``python -m dsh_user_interaction.extra.postgres._reaper FOLDER BINDIR``
by ``_server.py``, with its standard input the read end of a pipe whose
write end only the starting process holds. The server's postmaster is a
daemon of its own: a process killed by a signal (``SIGKILL``, or a
``SIGTERM`` nobody handles) runs no ``atexit``, and would leave it running
with its folder. When the pipe ends (the starting process exited, or closed
it after stopping the server itself), this stops the server, if it still
runs, and removes its folder. It runs in a session of its own, so a Ctrl-C
meant for the starting process does not end it first.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ._server import _RunAs, _stop_cluster

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Wait for the end of standard input, then stop the server in ``argv[0]`` with ``argv[1]``."""
    folder, bindir = (argv if argv is not None else sys.argv[1:])[:2]
    while sys.stdin.buffer.read(4096):
        pass  # nobody writes; the read ends when every writer has gone
    if Path(folder).exists():
        _stop_cluster(Path(folder), Path(bindir), _RunAs.choose())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
