"""``python -m dsh_user_interaction web-demo``: one sample batch, asked through the page."""

from __future__ import annotations

import asyncio
import json
import sys

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra._demo_request import DEMO_REQUEST

from ._listen import CannotListen
from ._provider import WebProvider

__all__ = ["run_web_demo"]


async def _ask(request: AskUserQuestionRequest, port: int) -> AskUserQuestionAnswer:
    service = UserInteractionService()
    async with WebProvider(port=port, agent="web-demo") as provider:
        print(f"Open {provider.url} to answer.", file=sys.stderr, flush=True)
        with service.register_provider(provider):
            return await service.ask(request)


def run_web_demo(port: int = 0) -> int:
    """Ask the demos' sample batch through the page; print the answer as compact JSON.

    The page's address, with its secret, goes to standard error. Exit status
    0 with the answer, 1 with ``Error: <message>`` when the batch was
    dismissed, and 1 when stopped with Ctrl-C before an answer. A *port*
    that cannot be listened on (taken, or not allowed) is the
    command line's mistake: one line, ``error: ...``, and exit status 2.
    """
    try:
        answer = asyncio.run(_ask(DEMO_REQUEST, port))
    except CannotListen as error:
        print(f"error: {error}; pass another --port, or 0 for a free one", file=sys.stderr)
        return 2
    except UserInteractionError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Stopped before the questions were answered.", file=sys.stderr)
        return 1
    print(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
    return 0
