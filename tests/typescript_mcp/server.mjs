// A server of the official TypeScript SDK whose tool, deploy, elicits one form and returns the result.
//
// Run on stdio by tests/test_mcp_typescript.py, whose client answers through a provider. The
// form has a titled single-select, a titled multi-select and a text field, as the 2025-11-25
// revision writes them; the tool's text is the JSON of the elicitation result.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "typescript-sdk-server", version: "1.0.0" });
server.registerTool("deploy", { description: "Deploy, after asking how." }, async () => {
  const result = await server.server.elicitInput({
    mode: "form",
    message: "How should we deploy?",
    requestedSchema: {
      type: "object",
      properties: {
        mode: { type: "string", title: "Mode", oneOf: [{ const: "fast", title: "Fast" }, { const: "safe", title: "Safe" }] },
        targets: { type: "array", title: "Targets", items: { anyOf: [{ const: "tests", title: "Tests" }, { const: "docs", title: "Docs" }] } },
        note: { type: "string", title: "A note" },
      },
      required: ["mode"],
    },
  });
  return { content: [{ type: "text", text: JSON.stringify(result) }] };
});
await server.connect(new StdioServerTransport());
