"""A port the page cannot be served on: one clear line and exit status 2, never a traceback.

``python -m dsh_user_interaction --help`` promises exit status 2 for a wrong
command line; a ``--port`` out of range, or one another server holds, is
one. Run as a user would, in a process of its own.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dsh_user_interaction.extra.web import WebProvider
from dsh_user_interaction.extra.web._listen import CannotListen

from .helpers import patience

#: Seconds a command may take to fail (60 on the idle machine, the calibrated
#: patience on a busy one: it ends a red run).
BOUND = patience(6.0)


@contextmanager
def taken_port() -> Generator[int]:
    """A loopback port another server is listening on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def _command(tmp_path: Path, kind: str) -> list[str]:
    if kind == "web-demo":
        return [sys.executable, "-m", "dsh_user_interaction", "web-demo"]
    return [sys.executable, "-m", "dsh_user_interaction", "serve", str(tmp_path / "asks.db")]


def _fails_in_one_line(command: list[str], cwd: Path) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=BOUND, cwd=cwd, check=False
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["web-demo", "serve"])
@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_port_out_of_range_is_a_wrong_command_line(tmp_path: Path, kind: str, port: str) -> None:
    line = _fails_in_one_line([*_command(tmp_path, kind), "--port", port], tmp_path)
    assert line == f"error: --port {port} is not a TCP port: 1 to 65535, or 0 for a free one"
    assert not (tmp_path / "asks.db").exists()  # refused before anything opened


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["web-demo", "serve"])
def test_a_taken_port_is_a_wrong_command_line(tmp_path: Path, kind: str) -> None:
    with taken_port() as port:
        line = _fails_in_one_line([*_command(tmp_path, kind), "--port", str(port)], tmp_path)
    assert line == (
        f"error: cannot listen on 127.0.0.1:{port}: address already in use;"
        " pass another --port, or 0 for a free one"
    )


@pytest.mark.parametrize("port", [65536, -1, 99999])
def test_the_provider_refuses_a_port_out_of_range_naming_it(port: int) -> None:
    with pytest.raises(ValueError, match=rf"^WebProvider\(port={port}\) is not a TCP port"):
        WebProvider(port=port)


def test_a_taken_port_names_the_address_and_keeps_the_cause() -> None:
    async def main() -> None:
        with taken_port() as port:
            provider = WebProvider(port=port)
            with pytest.raises(CannotListen) as raised:
                await provider.start()
            await provider.aclose()
        assert str(raised.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"
        assert isinstance(raised.value, OSError)
        assert isinstance(raised.value.__cause__, OSError)
        assert raised.value.errno == raised.value.__cause__.errno

    asyncio.run(main())
