"""``python -m dsh_user_interaction demo``: one sample batch, asked in this terminal."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Final

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra._demo_request import DEMO_REQUEST

from ._provider import TerminalProvider

__all__ = ["DEMO_REQUEST", "run_demo"]


async def _ask(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    service = UserInteractionService()
    provider = TerminalProvider()
    with service.register_provider(provider):
        try:
            return await service.ask(request)
        finally:
            await provider.aclose()


#: What the demo says, on one line, when no human can answer at this terminal.
NO_TERMINAL: Final = (
    "python -m dsh_user_interaction demo: needs an interactive terminal; standard input is not one"
)
#: What the demo says when its terminal's input closes before the batch is answered.
INPUT_CLOSED: Final = (
    "python -m dsh_user_interaction demo: standard input closed before the questions were answered"
)


def run_demo() -> int:
    """Ask :data:`DEMO_REQUEST` in the terminal; print the answer as compact JSON.

    Exit status 0 with the answer, 1 with ``Error: <message>`` when the batch
    was dismissed (Esc or Ctrl-C), and 2 with one line saying why when
    standard input is no terminal or closes before the answer.
    """
    if sys.stdin is None or not sys.stdin.isatty():  # None: file descriptor 0 is closed
        print(NO_TERMINAL, file=sys.stderr)
        return 2
    try:
        answer = asyncio.run(_ask(DEMO_REQUEST))
    except UserInteractionError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    except EOFError:
        print(INPUT_CLOSED, file=sys.stderr)
        return 2
    print(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
    return 0
