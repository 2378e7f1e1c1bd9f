// Drives an MCP stdio server with the TypeScript SDK v2 client (`@modelcontextprotocol/client`
// 2.4.0) pinned to protocol revision 2026-07-28 (`versionNegotiation: {mode: {pin}}`: a
// `server/discover` at connect, then stateless requests with `_meta`, no fallback) and prints
// what it saw as one JSON object.
//
// Usage: node tests/clients/ts_modern_client.mjs PLAN_JSON COMMAND [ARGS...]
// PLAN_JSON is a list of steps:
//   {"op": "list_tools"}                                  -> the tool names
//   {"op": "call", "name", "arguments", "progress"?}       -> the CallToolResult (input_required
//       results are fulfilled by the handlers below and retried by the SDK), or {"error": msg};
//       with "progress": true the number of progress notifications under "progress"
//   {"op": "list_change", "trigger": {call step}}          -> opens subscriptions/listen for tool
//       changes, makes the call, waits up to 15 s: {"changed": bool, "honored": filter}
// Output: {"steps": [...], "handled": [methods of the handled input requests]}.
// Handlers: elicitation accepts {"ok": true}; sampling answers "sampled: fixed answer"; roots
// returns file:///tmp. The SDK is loaded from .tools/npm-sdk2 (or MCP_SDK2_MODULES).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.MCP_SDK2_MODULES ?? path.join(here, '../../.tools/npm-sdk2/node_modules');
const load = (file) => import(pathToFileURL(path.join(modules, file)).href);
const { Client } = await load('@modelcontextprotocol/client/dist/index.mjs');
const { StdioClientTransport } = await load('@modelcontextprotocol/client/dist/stdio.mjs');

const [planText, command, ...args] = process.argv.slice(2);
const plan = JSON.parse(planText);
const handled = [];
let toolsChanged = 0;

const client = new Client(
  { name: 'ts-modern-client', version: '1.0.0' },
  {
    capabilities: { elicitation: {}, sampling: {}, roots: {} },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  },
);
client.setRequestHandler('elicitation/create', async () => {
  handled.push('elicitation/create');
  return { action: 'accept', content: { ok: true } };
});
client.setRequestHandler('sampling/createMessage', async () => {
  handled.push('sampling/createMessage');
  return { role: 'assistant', content: { type: 'text', text: 'sampled: fixed answer' }, model: 'fixture-model', stopReason: 'endTurn' };
});
client.setRequestHandler('roots/list', async () => {
  handled.push('roots/list');
  return { roots: [{ uri: 'file:///tmp', name: 'tmp' }] };
});
client.setNotificationHandler('notifications/tools/list_changed', async () => {
  toolsChanged += 1;
});

async function call(step) {
  let progress = 0;
  const options = step.progress ? { onprogress: () => { progress += 1; } } : {};
  try {
    const result = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, options);
    return step.progress ? { ...result, progress } : result;
  } catch (error) {
    return { error: String(error?.message ?? error) };
  }
}

async function run(step) {
  switch (step.op) {
    case 'list_tools':
      return (await client.listTools()).tools.map((t) => t.name);
    case 'call':
      return call(step);
    case 'list_change': {
      const before = toolsChanged;
      const sub = await client.listen({ toolsListChanged: true });
      await call(step.trigger);
      const deadline = Date.now() + 15000;
      while (toolsChanged === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await sub.close();
      return { changed: toolsChanged > before, honored: sub.honoredFilter };
    }
    default:
      return { error: `unknown op ${step.op}` };
  }
}

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
await client.connect(transport);
const steps = [];
for (const step of plan) {
  try {
    steps.push(await run(step));
  } catch (error) {
    steps.push({ exception: String(error?.message ?? error) });
  }
}
await client.close();
process.stdout.write(JSON.stringify({ steps, handled }) + '\n');
process.exit(0);
