// The official TypeScript SDK's client, calling ask_user_question on the project's stdio server.
//
// Usage: node client.mjs SERVER, where SERVER is the JSON of {command, args, env}. For each
// scenario it calls the tool once, its elicitation handler answering as the scenario says, and
// prints one JSON object: per scenario, the form it received, what it sent and the tool's result.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const ARGUMENTS = {
  questions: [
    { id: "mode", question: "Which mode?", header: "Mode", options: [{ label: "Fast" }, { label: "Safe" }] },
    { id: "targets", question: "Which targets?", multi_select: true, options: [{ label: "tests" }, { label: "docs" }] },
    { id: "branch", question: "Branch name?" },
  ],
};

// What the human does with the form, per scenario.
const SCENARIOS = {
  single: { action: "accept", content: { q1: "Safe" } },
  multi: { action: "accept", content: { q2: ["docs", "tests"] } },
  custom: { action: "accept", content: { q1_other: "neither", q3: "main" } },
  decline: { action: "decline" },
  cancel: { action: "cancel" },
};

const server = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env });
const client = new Client({ name: "typescript-sdk-client", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const report = {};
let scenario = "";
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  report[scenario].fields = Object.keys(request.params.requestedSchema.properties);
  report[scenario].message = request.params.message;
  const reply = SCENARIOS[scenario];
  report[scenario].sent = reply;
  return reply;
});
await client.connect(transport);
// The newest revision this SDK speaks (it has no 2026-07-28 yet).
report.protocolVersion = LATEST_PROTOCOL_VERSION;
for (scenario of Object.keys(SCENARIOS)) {
  report[scenario] = {};
  const result = await client.callTool({ name: "ask_user_question", arguments: ARGUMENTS });
  report[scenario].result = { text: result.content.map((part) => part.text), isError: result.isError ?? false };
}
await client.close();
console.log(JSON.stringify(report));
