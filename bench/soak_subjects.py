"""The UI the bridge soak asks through: it answers at once, or holds an ask until it is interrupted.

:class:`SoakUI` is the human at the far end of every bridge in
``bench/soak_bridges.py``. Each question is answered with its own text as
the custom answer, so an answer names the ask it was made for, and a caller
that got another ask's answer is caught. A question whose text starts with
:data:`HOLD` is never answered: the ask stays on screen until its signal
aborts (``ASK_ABORTED``) or its call is cancelled, which is how the soak's
aborts, cancellations and timeouts reach the far side of the bridge.

``python -m dsh_user_interaction_conformance.child --provider
bench.soak_subjects:subject`` serves it over the JSON-lines harness, for
:class:`~dsh_user_interaction.extra.stdio.StdioProvider`;
``bench/soak_subject.mjs`` is the same UI in JavaScript, on the Node
example's adapter. On the MCP bridge it answers the client's elicitation
requests through :func:`~dsh_user_interaction.extra.mcp.elicitation_callback`.
"""

from __future__ import annotations

import asyncio
from typing import Final

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
)
from dsh_user_interaction_conformance import ScriptedDriver, Subject

__all__ = ["HOLD", "SoakUI", "answer_for", "subject"]

#: A question whose text starts with this is held until its ask is interrupted.
HOLD: Final = "hold"


def answer_for(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """The answer :class:`SoakUI` gives *request*: each question's own text, as custom text."""
    return {
        "answers": [
            {"id": question["id"], "selected": [], "custom": question["question"]}
            for question in request["questions"]
        ]
    }


def _noop() -> None:
    return None


class SoakUI:
    """A provider whose human answers at once, except for the asks it is told to hold.

    An ask whose signal has already aborted raises ``ASK_ABORTED`` at once;
    a held ask raises ``ASK_ABORTED`` when its signal aborts, and lets a
    cancellation propagate; it keeps nothing once the ask has ended.
    """

    def __init__(self) -> None:
        #: How many asks are held right now.
        self.holding = 0

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Answer *request*, or hold it until it is interrupted."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        if not request["questions"][0]["question"].startswith(HOLD):
            return answer_for(request)
        aborted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_abort(_signal: object) -> None:
            if not aborted.done():
                aborted.set_result(None)

        remove = signal.add_listener(on_abort) if signal is not None else _noop
        self.holding += 1
        try:
            await aborted
        finally:
            self.holding -= 1
            remove()
        raise UserInteractionError.of(ErrorCode.ASK_ABORTED)


def subject() -> Subject:
    """:class:`SoakUI` as a harness subject; its driver is never called by the soak."""
    return Subject(provider=SoakUI(), driver=ScriptedDriver(ScriptedProvider()), name="soak-ui")
