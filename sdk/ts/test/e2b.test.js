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

// The state verbs (src/state.ts), after the program above in this file so
// the sandbox user's project holds one test's containers at a time.
test("pause, resume, snapshots, fork, restore, keepalive, kept workspaces", { skip: !URL_ && "no container engine" }, async (t) => {
  const client = new DeckhandClient(URL_, { agentRoute: "agent_addr" });
  await client.login(process.env.DECKHAND_SANDBOX_EMAIL, process.env.DECKHAND_PASSWORD);
  const cs = client.containers;
  const project = process.env.DECKHAND_SANDBOX_PROJECT;
  const box = await cs.create(process.env.DECKHAND_SANDBOX_IMAGE, { name: "state" });
  const made = [box.id];
  t.after(() => Promise.all(made.map((id) => cs.delete(id).catch(() => {}))));
  await box.waitRunning();
  assert.equal((await cs.pause(box.id)).status, "paused");
  assert.equal((await cs.resume(box.id)).status, "running");

  const lease = await box.keepalive(60);
  assert.match(lease.id, /^lse_/);
  assert.equal(lease.durationSeconds, 60);
  await assert.rejects(box.keepalive(0), /seconds/);

  await box.files.write("/home/user/state.txt", "at the snapshot\n");
  const snap = await cs.snapshot(box.id, "first");
  assert.deepEqual([snap.name, snap.containerId, snap.projectId], ["first", box.id, project]);
  assert.equal((await cs.renameSnapshot(box.id, snap.id, "renamed")).name, "renamed");
  const listed = await cs.snapshots(box.id);
  assert.deepEqual(listed.map((s) => [s.id, s.name]), [[snap.id, "renamed"]]);
  assert.ok(listed[0].sizeBytes > 0);

  const [fork, ...more] = await cs.fork(snap.id, { name: "copy", count: 1 });
  assert.equal(more.length, 0);
  made.push(fork.id);
  await fork.waitRunning();
  assert.equal(fork.info.name, "copy-1");
  assert.equal(await fork.files.readText("/home/user/state.txt"), "at the snapshot\n");

  await box.files.write("/home/user/state.txt", "changed\n");
  assert.equal((await cs.restore(box.id, snap.id)).id, box.id);
  await box.waitRunning();
  assert.equal(await box.files.readText("/home/user/state.txt"), "at the snapshot\n");
  await cs.deleteSnapshot(box.id, snap.id);
  assert.deepEqual(await cs.snapshots(box.id), []);

  await cs.deleteKeepingWorkspace(fork.id);
  made.pop();
  const ws = await cs.workspaces();
  assert.deepEqual(ws.map((w) => [w.id, w.projectId, w.name]), [[fork.id, project, "copy-1"]]);
  await cs.deleteWorkspace(project, fork.id);
  assert.deepEqual(await cs.workspaces(project), []);
});
