// An independent MCP client for the mcp service's end-to-end test: the
// official TypeScript SDK over Streamable HTTP. Usage:
//   node client.mjs ENDPOINT KEY DIR
// It lists the tools, runs a command, writes, edits and reads a file back
// under DIR, subscribes to that file and waits for the update a write
// makes, and prints one JSON line of what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [endpoint, key, dir] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { "X-Key": key } } });
const client = new Client({ name: "deckhand-node-test", version: "1.0.0" });
const out = {};
let updated;
const gotUpdate = new Promise((resolve) => { updated = resolve; });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated(n.params.uri));

const timer = setTimeout(() => { console.log(JSON.stringify({ ...out, error: "timed out" })); process.exit(2); }, 60000);
try {
  await client.connect(transport);
  out.session = transport.sessionId ? true : false;
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name).sort();
  const run = await client.callTool({ name: "process_run", arguments: { cmd: ["echo", "hello-node"] } });
  out.run = { text: run.content[0]?.text, stdout: run.structuredContent?.stdout, exit_code: run.structuredContent?.exit_code };
  const path = dir + "/node.txt";
  await client.callTool({ name: "files_write", arguments: { path, content: "one two\n" } });
  const edit = await client.callTool({ name: "files_edit", arguments: { path, old_string: "two", new_string: "three" } });
  out.edit_error = edit.isError ?? false;
  const read = await client.callTool({ name: "files_read", arguments: { path } });
  out.read = read.content[0]?.text;
  const uri = "file://" + path;
  await client.subscribeResource({ uri });
  await client.callTool({ name: "files_write", arguments: { path, content: "four\n" } });
  out.updated = await gotUpdate;
  const res = await client.readResource({ uri });
  out.resource = res.contents[0]?.text;
  await client.close();
} catch (e) {
  out.error = String(e);
}
clearTimeout(timer);
console.log(JSON.stringify(out));
// An open stream would keep the event loop alive after a failure.
process.exit(0);
