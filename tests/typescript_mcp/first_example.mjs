// The official TypeScript SDK's client, in its default mode, calling the MCP page's first example.
//
// Usage: node first_example.mjs SERVER, where SERVER is the JSON of {command, args, env}. It
// calls the tool deploy of tests/mcp_first_example.py once, its elicitation handler picking
// "Safe (Recommended)", and prints one JSON object: the form's fields, the revision it speaks and
// the tool's result.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const server = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env });
const client = new Client({ name: "typescript-sdk-client", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const report = { protocolVersion: LATEST_PROTOCOL_VERSION };
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  report.fields = Object.keys(request.params.requestedSchema.properties);
  return { action: "accept", content: { q1: "Safe (Recommended)" } };
});
await client.connect(transport);
const result = await client.callTool({ name: "deploy", arguments: {} });
report.result = { text: result.content.map((part) => part.text), isError: result.isError ?? false };
await client.close();
console.log(JSON.stringify(report));
