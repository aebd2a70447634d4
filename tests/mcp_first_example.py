"""The MCP page's first example, its server part exactly, served over stdio.

``tests/test_mcp_first_example.py`` runs it as a subprocess and calls its
tool with each client in its default mode: the Python SDK's ``Client``,
fastmcp's ``Client`` and the TypeScript SDK's client. The same test checks
that the lines between the markers below are the docs' first example's
server, line for line (blank lines aside), so the example a new user copies
is the one proven.
"""

from __future__ import annotations

# fmt: off
# -- the docs' first example: the server --
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import InputRequiredResult

from dsh_user_interaction import UserInteractionService
from dsh_user_interaction.extra.mcp import McpElicitationProvider, run_tool

# The server: one provider, registered once; run_tool asks the client of each call.
server = MCPServer("deployer")
service = UserInteractionService()
registration = service.register_provider(McpElicitationProvider())
@server.tool()
async def deploy(ctx: Context) -> str | InputRequiredResult:
    """Deploy, after asking the user how."""
    async def body() -> str:
        answer = await service.ask({"questions": [{
            "id": "mode", "question": "Which mode?", "header": "Choose Mode",
            "options": [{"label": "Fast"}, {"label": "Safe (Recommended)"}]}]})
        return f"deploying: {answer['answers'][0]}"
    return await run_tool(ctx, body)
# -- end of the docs' first example's server --
# fmt: on

if __name__ == "__main__":
    server.run("stdio")
