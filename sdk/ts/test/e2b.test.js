// An E2B-style program against a real container: the Go harness (sdk/go,
// TestTypeScriptSDK) starts a control plane that runs containers on the
// local engine and passes it in DECKHAND_SANDBOX_*; without an engine the
// test skips.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DeckhandClient, DeckhandError } from "../dist/index.js";
import { Proxy } from "./proxy.js";

const URL_ = process.env.DECKHAND_SANDBOX_URL;

test("create, run, write and read, stream across a disconnect, delete", { skip: !URL_ && "no container engine" }, async (t) => {
  const client = new DeckhandClient(URL_, { agentRoute: "agent_addr" });
  await client.login(process.env.DECKHAND_SANDBOX_EMAIL, process.env.DECKHAND_PASSWORD);

  let box = await client.containers.create(process.env.DECKHAND_SANDBOX_IMAGE);
  t.after(() => client.containers.delete(box.id).catch(() => {}));
  const info = await box.waitRunning();
  assert.equal(info.projectId, process.env.DECKHAND_SANDBOX_PROJECT);
  assert.ok(info.agentAddr);
  assert.equal(box.url("process"), info.urls.process);
  assert.match(box.url("p8080"), new RegExp(`-${box.id}-p8080-1\\.`));
  assert.deepEqual((await client.containers.list()).map((c) => c.id), [box.id]);

  // The handle mints an access token from the control plane by itself;
  // a token the control plane did not sign opens nothing.
  let r = await box.process.run(["echo", "hello", "from", "deckhand"]);
  await assert.rejects(box.withToken("not-a-token").process.run(["true"]), (e) => e instanceof DeckhandError && [401, 403].includes(e.status));
  assert.equal(r.stdout, "hello from deckhand\n");
  assert.equal(r.exitCode, 0);
  r = await box.process.run("echo oops >&2; exit 3");
  assert.equal(r.exitCode, 3);
  assert.equal(r.stderr, "oops\n");

  await box.files.write("/tmp/hello.txt", "written by the sdk\n");
  assert.equal(await box.files.readText("/tmp/hello.txt"), "written by the sdk\n");
  assert.ok((await box.files.list("/tmp")).some((e) => e.name === "hello.txt" && e.size === 19 && e.type === "file"));

  // A long command's output across a forced disconnect: a cuttable link
  // between the SDK and the agent.
  const link = await new Proxy(`http://${info.agentAddr}`).listen();
  t.after(() => link.close());
  const linked = box.withToken(box.token);
  linked.info = { ...info, agentAddr: link.url.slice("http://".length) };
  const lines = 60;
  const run = await linked.process.start(`i=1; while [ $i -le ${lines} ]; do echo line-$i; i=$((i+1)); sleep 0.05; done`);
  let out = "";
  let cut = false;
  const end = await run.stream((o) => {
    out += new TextDecoder().decode(o.data);
    if (!cut && out.split("\n").length > 10) {
      cut = true;
      link.cut();
    }
  });
  assert.equal(out, Array.from({ length: lines }, (_, i) => `line-${i + 1}\n`).join(""));
  assert.equal(end.exitCode, 0);
  assert.ok(cut && link.dials >= 2, `cut ${cut}, ${link.dials} connections`);

  assert.equal((await client.containers.stop(box.id)).status, "stopped");
  await box.delete();
  await assert.rejects(client.containers.get(box.id), (e) => e instanceof DeckhandError && e.status === 404);
});
