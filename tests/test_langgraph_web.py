"""A LangGraph agent's question answered by a person in the web page, in real Chromium.

The framework adapter's whole path with a real UI: LangChain's test model
calls ``ask_user_question``; the run pauses on its interrupt (LangGraph's
checkpointer); ``resume_command`` shows the question through a service
whose provider is the web page; a person picks and sends in the browser;
the run resumes and the model reads the answer in its ``ToolMessage``.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import Any, cast

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from dsh_user_interaction import UserInteractionService
from dsh_user_interaction.extra.langgraph import (
    AskUserQuestionTool,
    InterruptProvider,
    resume_command,
)
from dsh_user_interaction.extra.web import WebProvider

from .test_web_browser import browser, opened, run

pytestmark = pytest.mark.slow

#: LangChain's ``create_agent``, used through its result's documented methods (its own
#: signature holds a checkpointer type generic without a default: partly unknown to pyright).
create_agent = cast("Callable[..., Any]", importlib.import_module("langchain.agents").create_agent)


class _Model(FakeMessagesListChatModel):
    """LangChain's test model, taking any tools (it answers from its script)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


QUESTIONS: Any = {
    "questions": [
        {
            "id": "mode",
            "header": "Mode",
            "question": "Deploy how?",
            "options": [{"label": "Canary"}, {"label": "All at once"}],
        },
        {"id": "note", "question": "Anything for the release notes?"},
    ]
}


def test_a_paused_langgraph_run_is_answered_in_the_web_page_and_resumes() -> None:
    """The model reads, as its tool result, what the person picked and typed in the page."""
    model = _Model(
        responses=[
            AIMessage(
                "", tool_calls=[{"name": "ask_user_question", "id": "call_1", "args": QUESTIONS}]
            ),
            AIMessage("Deploying as a canary."),
        ]
    )
    in_graph = UserInteractionService()
    in_graph.register_provider(InterruptProvider())
    agent: Any = create_agent(
        model, [AskUserQuestionTool(service=in_graph)], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "deploy-1"}}

    async def main() -> None:
        paused = await agent.ainvoke({"messages": [("user", "ship it")]}, config)
        assert paused["__interrupt__"][0].value["request"]["askId"] == "call_1"
        async with WebProvider() as page_provider, browser() as chromium:
            human = UserInteractionService()
            human.register_provider(page_provider)
            answering = asyncio.ensure_future(resume_command(agent, config, human))
            async with opened(page_provider, chromium) as page:
                card = page.get_by_role("article", name="Mode")
                await card.get_by_role("radio", name="Canary").check()
                notes = card.get_by_role("group", name="Anything for the release notes?")
                await notes.get_by_role("textbox").fill("behind the flag")
                await card.get_by_role("button", name="Send").click()
                command = await answering
                await page.get_by_text("Nothing to answer right now.").wait_for()
        done = await agent.ainvoke(command, config)
        tool = done["messages"][-2]
        assert isinstance(tool, ToolMessage)
        assert tool.tool_call_id == "call_1"
        assert tool.content == (
            '{"answers":[{"id":"mode","selected":["Canary"]},'
            '{"id":"note","selected":[],"custom":"behind the flag"}]}'
        )
        assert done["messages"][-1].content == "Deploying as a canary."

    run(main)
