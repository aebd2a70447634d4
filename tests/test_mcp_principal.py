"""MCP revision 2026-07-28 over HTTP with OAuth: the SDK binds a ``requestState`` to its user.

The MCP SDK seals every ``requestState`` it sends and, by default
(``RequestStateSecurity.bind_principal`` is ``authenticated_principal``),
binds it to the OAuth principal of the request that minted it: the client,
issuer and subject of the access token its bearer-auth middleware verified.
In process there is no token (``tests/test_mcp_rounds.py`` binds a ``_meta``
key instead), so here the server is real: an ``MCPServer`` configured as an
OAuth resource server, with a token verifier that knows two users, served
over streamable HTTP by uvicorn on loopback, and reached by the SDK's own
client over HTTP with a bearer token. Nothing of the SDK is mocked.

Why uvicorn: the SDK's client speaks ``httpx2``, and its ``ASGITransport``
works too (tried: the bearer-auth middleware runs, and the test takes some
50 ms instead of some 0.5 s), but only with the app's lifespan, which starts
the session manager, entered by hand, and with each response buffered whole.
A server on loopback is the deployment as it is, with its sockets, its Host
check and its lifespan, and costs well under a second.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
)
from dsh_user_interaction.extra.mcp import McpElicitationProvider, elicitation_callback, run_tool

from .helpers import run

ROUND_TRIP: Final = "2026-07-28"
MODE: Any = {
    "id": "mode",
    "question": "Which mode?",
    "options": [{"label": "Fast"}, {"label": "Safe"}],
}
#: One OAuth client acting for two users: the subject alone tells them apart.
CLIENT: Final = "deploy-agent"
ISSUER: Final = "https://auth.example.test"
USERS: Final = {"alice-token": "alice", "bob-token": "bob"}


class _Verifier:
    """The SDK's ``TokenVerifier``: two fixed bearer tokens, one per user; any other is refused."""

    def __init__(self, resource: str) -> None:
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token *token* stands for, issued for this server, or ``None``."""
        subject = USERS.get(token)
        if subject is None:
            return None
        return AccessToken(
            token=token,
            client_id=CLIENT,
            scopes=["deploy"],
            resource=self.resource,
            subject=subject,
            claims={"iss": ISSUER},
        )


def _deployer(url: str) -> MCPServer:
    """A server that asks through the seam, with OAuth and the SDK's default state security."""
    server = MCPServer(
        "deployer",
        token_verifier=_Verifier(url),
        auth=AuthSettings.model_validate(
            {
                "issuer_url": ISSUER,
                "resource_server_url": url,
                "validate_token_resource": True,
                "required_scopes": ["deploy"],
            }
        ),
    )
    service = UserInteractionService()
    service.register_provider(McpElicitationProvider())

    @server.tool()
    async def deploy(ctx: Context) -> str | types.InputRequiredResult:
        """Ask the mode; say the one picked."""

        async def body() -> str:
            answer = await service.ask({"questions": [MODE]})
            return str(answer["answers"][0]["selected"])

        return await run_tool(ctx, body)

    return server


@asynccontextmanager
async def _served() -> AsyncGenerator[str]:
    """The deployer under uvicorn on a loopback port of its own; yields its MCP endpoint.

    The socket is bound first, so that the server's resource URL, which the
    tokens must name, has the port in it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        app = _deployer(url).streamable_http_app(host="127.0.0.1")
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
        )
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            while not server.started:
                assert not serving.done(), serving
                await asyncio.sleep(0.005)
            yield url
        finally:
            server.should_exit = True
            await serving


def _safe(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """The user: picks "Safe"."""
    return {"answers": [{"id": q["id"], "selected": ["Safe"]} for q in request["questions"]]}


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncGenerator[Client]:
    """The SDK's client on 2026-07-28, over streamable HTTP, carrying *token*.

    Its elicitation callback declares form elicitation, without which the
    tool cannot ask; the test answers the rounds itself.
    """
    headers = {"Authorization": f"Bearer {token}"}
    callback = elicitation_callback(ScriptedProvider(respond=_safe))
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=ROUND_TRIP,
            elicitation_callback=callback,
        ) as client,
    ):
        yield client


def _picked(key: str) -> types.InputResponses:
    return {key: types.ElicitResult(action="accept", content={"q1": "Safe"})}


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.slow
def test_the_sdk_binds_a_state_to_the_oauth_user_by_default() -> None:
    """MCP-ROUND-5: Bob cannot finish Alice's call with her state; Alice can; no token, no call.

    The server passes no ``request_state_security``: the SDK's default seal,
    bound by ``authenticated_principal`` to the token's client, issuer and
    subject. Alice's first call ends with an ``InputRequiredResult``. Bob,
    with a valid token of the same OAuth client, retries it with her state
    and a valid answer under its key: it is refused with ``INVALID_PARAMS``
    in the SDK's wording, not ``run_tool``'s, so by the seal. Alice's own
    retry then completes with the answer she picked (Bob's refusal used up
    nothing of hers). A request without a token, or with one the verifier
    does not know, is refused with 401.
    """

    async def main() -> None:
        async with _served() as url:
            async with httpx2.AsyncClient() as anonymous:
                for headers in ({}, {"Authorization": "Bearer mallory-token"}):
                    response = await anonymous.post(url, json={}, headers=headers)
                    assert response.status_code == 401, response
                    assert "resource_metadata=" in response.headers["www-authenticate"]
            async with _client(url, "alice-token") as alice:
                first = await alice.session.call_tool("deploy", {}, allow_input_required=True)
                assert isinstance(first, types.InputRequiredResult), first
                (key,) = first.input_requests or {}
                state = first.request_state
                assert state is not None
                async with _client(url, "bob-token") as bob:
                    with pytest.raises(MCPError) as refused:
                        await bob.session.call_tool(
                            "deploy", {}, input_responses=_picked(key), request_state=state
                        )
                assert refused.value.code == types.INVALID_PARAMS
                assert refused.value.message == "Invalid or expired requestState"
                done = await alice.session.call_tool(
                    "deploy", {}, input_responses=_picked(key), request_state=state
                )
                assert not done.is_error, done
                assert _text(done) == "['Safe']"

    run(main(), bound=30)
