"""The demo command in a real terminal: tmux runs it, send-keys types, capture-pane reads."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from .helpers import need, patience

TMUX = shutil.which("tmux")

#: How long to wait for the screen to show something, in seconds: 15 on the idle
#: machine, the calibrated patience on a busy one; it only ends a red run.
PATIENCE = patience(1.5)


class Pane:
    """One tmux pane on a private server, running the demo."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return done.stdout

    def screen(self, *, escapes: bool = False) -> str:
        """The pane's text, wrapped lines joined, trailing blanks removed."""
        captured = self.tmux("capture-pane", "-p", "-J", *(["-e"] if escapes else []), "-t", "demo")
        return "\n".join(line.rstrip() for line in captured.splitlines())

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "demo", *(["-l"] if literal else []), *keys)

    def wait_for(self, ready: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + PATIENCE
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the pane never showed {what}; it shows:\n{screen}")
            time.sleep(0.05)


@pytest.fixture
def pane() -> Iterator[Pane]:
    """The demo in an 80 x 24 tmux pane on a private socket; the server is killed afterwards."""
    need("tmux")  # skipped without it, failed in CI
    pane = Pane(f"dsh-test-{uuid.uuid4().hex[:12]}")
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    command = (
        f"env PYTHONPATH={shlex.quote(os.pathsep.join(paths))} "
        f"{shlex.quote(sys.executable)} -m dsh_user_interaction demo; "
        'echo "[exit $?]"; sleep 600'
    )
    pane.tmux("-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "80", "-y", "24", command)
    try:
        yield pane
    finally:
        subprocess.run([TMUX or "tmux", "-L", pane.socket, "kill-server"], check=False)


def test_the_demo_answers_through_a_real_terminal(pane: Pane) -> None:
    """Keys typed into tmux come back as the answer JSON; a paste keeps its CR and tab."""
    screen = pane.wait_for(lambda s: s.startswith("ask #1 | question 1/4"), "the first question")
    # The ANSI colour sequence in the question's detail is drawn as text ...
    assert "shown, never interpreted: \\x1b[31mred?\\x1b[0m <U+202E>abc" in screen
    # ... and the terminal never received it: no red anywhere on the pane.
    coloured = pane.screen(escapes=True)
    assert "\x1b[31m" not in coloured
    assert "\\x1b" in coloured

    pane.keys("Down", "Enter")
    pane.wait_for(lambda s: s.startswith("ask #1 | question 2/4"), "the multi-select")
    pane.keys("3")
    pane.keys("Up", "Up", "Space", "Enter")  # bench by number, then tests: in option order
    pane.wait_for(lambda s: s.startswith("ask #1 | question 3/4"), "the text question")
    pane.tmux("set-buffer", "line one\rtwo\t")
    pane.tmux("paste-buffer", "-p", "-d", "-t", "demo")  # a bracketed paste
    pane.keys("Enter")
    screen = pane.wait_for(lambda s: s.startswith("ask #1 | question 4/4"), "the plan review")
    assert "--- plan ---\n# Migrate the store" in screen
    pane.keys("1")
    screen = pane.wait_for(lambda s: "[exit " in s, "the demo's exit")
    assert "[exit 0]" in screen
    answer = json.loads(screen[: screen.index("[exit ")].strip().replace("\n", ""))
    assert answer == {
        "answers": [
            {"id": "mode", "selected": ["Safe (Recommended)"]},
            {"id": "targets", "selected": ["tests", "bench"]},
            {"id": "branch", "selected": [], "custom": "line one\rtwo\t"},
            {"id": "plan-review", "selected": ["Approve"]},
        ]
    }


def test_esc_in_a_real_terminal_dismisses_the_demo(pane: Pane) -> None:
    """Esc dismisses the batch: the demo prints the ASK_CANCELLED message and exits 1."""
    pane.wait_for(lambda s: s.startswith("ask #1 | question 1/4"), "the first question")
    pane.keys("Escape")
    screen = pane.wait_for(lambda s: "[exit " in s, "the demo's exit")
    assert "Error: the user cancelled ask_user_question" in screen
    assert "[exit 1]" in screen
