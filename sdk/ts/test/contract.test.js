// Contract tests against the real binaries: the Go harness (sdk/go,
// TestTypeScriptSDK) starts deckhand-control and an agent and passes their
// URLs in the environment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { DeckhandClient, Container, Containers, Processes, Running, Files, DeckhandError, SignatureError, API_VERSION } from "../dist/index.js";
import { Proxy } from "./proxy.js";
import { Middle } from "./middle.js";

const CONTROL = process.env.DECKHAND_CONTROL_URL;
const GATEWAY = process.env.DECKHAND_GATEWAY_URL;
const PASSWORD = process.env.DECKHAND_PASSWORD;
if (!CONTROL || !GATEWAY) throw new Error("DECKHAND_CONTROL_URL and DECKHAND_GATEWAY_URL are unset: run through `go test` in sdk/go (TestTypeScriptSDK)");

// The admin signs in once: logins are rate-limited per IP.
let adminClient;
async function newUser(credit) {
  if (!adminClient) {
    adminClient = new DeckhandClient(CONTROL);
    await adminClient.login(process.env.DECKHAND_ADMIN_EMAIL, process.env.DECKHAND_ADMIN_PASSWORD);
  }
  const admin = adminClient;
  const email = `ts-${randomUUID().slice(0, 10)}@example.com`;
  const { data } = await admin.api.POST("/api/v1/admin/users", { body: { email, password: PASSWORD, verified: true } });
  if (credit) await admin.request("POST", "/api/v1/admin/wallet/credit", undefined, { user_id: data.data.id, amount: credit, reason: "ts sdk test" });
  const c = new DeckhandClient(CONTROL);
  await c.login(email, PASSWORD);
  c.email = email;
  return c;
}

test("login, me and an auth token", async () => {
  const c = await newUser();
  const me = await c.me();
  assert.ok(me.id);
  const tok = await c.createToken("ts sdk");
  assert.match(tok.token, /^svc_/);
  assert.equal((await new DeckhandClient(CONTROL, { token: tok.token }).me()).id, me.id);
});

test("an error carries the server's status, code and message", async () => {
  const c = await newUser();
  await assert.rejects(c.transferToAI("-1"), (e) => e instanceof DeckhandError && e.status === 400 && e.code === "Bad Request" && /amount/.test(e.serverMessage));
  await assert.rejects(new Container(GATEWAY).run({ cmd: ["true"], cwd: "relative" }),
    (e) => e instanceof DeckhandError && e.status === 400 && e.code === "INVALID" && e.details === "cwd");
});

test("pagination visits every transaction once", async () => {
  const c = await newUser("20.00");
  for (let i = 0; i < 5; i++) await c.transferToAI("0.50");
  const { pagination } = await c.request("GET", "/api/v1/wallet/transactions");
  const ids = [];
  for await (const t of c.transactions(2)) ids.push(t.id);
  assert.ok(pagination.total >= 6);
  assert.equal(ids.length, pagination.total);
  assert.equal(new Set(ids).size, ids.length);
  let fees = 0;
  for await (const _ of c.pages("/api/v1/wallet/ai-fees", "fees", 2)) fees++;
  assert.equal(fees, 5);
  await assert.rejects(async () => { for await (const _ of c.transactions(101)); }, (e) => e instanceof DeckhandError && e.status === 400);
});

test("invoice PDF", async () => {
  const c = await newUser("5.00");
  const r = await c.transferToAI("2.00", "ts-invoice");
  const g = await c.generateInvoice(r.transaction_id);
  const pdf = await c.invoicePDF(g.invoice_id);
  assert.equal(new TextDecoder().decode(pdf.subarray(0, 5)), "%PDF-");
  const ids = [];
  for await (const i of c.invoices()) ids.push(i.id);
  assert.ok(ids.includes(g.invoice_id));
});

test("a tampered answer is refused", async (t) => {
  const good = await newUser();
  const p = await new Proxy(CONTROL).listen();
  t.after(() => p.close());
  const c = new DeckhandClient(p.url, { token: good.token });
  assert.equal((await c.me()).email, good.email);
  const [local] = good.email.split("@");
  p.rewrite = (b) => Buffer.from(b.toString("latin1").replace(good.email, `${local}@exbmple.com`), "latin1");
  await assert.rejects(c.me(), (e) => e instanceof SignatureError && /does not verify/.test(e.reason));
  p.rewrite = (b) => Buffer.from(b.toString("latin1").replace(/X-Service-Signature:/i, "X-Service-Signaturf:"), "latin1");
  await assert.rejects(c.me(), (e) => e instanceof SignatureError && /missing/.test(e.reason));
});

test("a replayed or relabelled answer is refused by its binding", async (t) => {
  const good = await newUser();
  const m = await new Middle(CONTROL, "/users/auth/me").listen();
  t.after(() => m.close());
  const c = new DeckhandClient(m.url, { token: good.token });
  assert.equal((await c.me()).email, good.email);
  // A genuine answer to an earlier request to the same path: its
  // X-Service-Signature holds; only the binding to this nonce does not.
  m.replay = true;
  await assert.rejects(c.me(), (e) => e instanceof SignatureError && /binding/.test(e.reason));
  // A genuine 404 passed on as 200.
  m.replay = false;
  m.relabel = 200;
  await assert.rejects(c.request("GET", "/api/v1/nothing-here/users/auth/me"), (e) => e instanceof SignatureError && /status/.test(e.reason));
  assert.equal(m.tampered, 2);
});

test("fromLogin uses the CLI's saved login", async (t) => {
  const good = await newUser();
  const { token } = await good.createToken("from login");
  const dir = mkdtempSync(join(tmpdir(), "deckhand-login-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "config.json");
  writeFileSync(path, JSON.stringify({ control_url: CONTROL, credential: { kind: "token", token } }), { mode: 0o600 });
  const before = process.env.DECKHAND_CONFIG;
  process.env.DECKHAND_CONFIG = path;
  t.after(() => (before === undefined ? delete process.env.DECKHAND_CONFIG : (process.env.DECKHAND_CONFIG = before)));
  assert.equal((await (await DeckhandClient.fromLogin()).me()).email, good.email);
  chmodSync(path, 0o644);
  await assert.rejects(DeckhandClient.fromLogin(), /chmod 600/);
  process.env.DECKHAND_CONFIG = join(dir, "none.json");
  await assert.rejects(DeckhandClient.fromLogin(), /deckhand login/);
});

test("an answer outside the replay window is refused", async () => {
  const good = await newUser();
  for (const skew of [-301_000, 301_000]) {
    const c = new DeckhandClient(CONTROL, { token: good.token, now: () => Date.now() + skew });
    await assert.rejects(c.me(), (e) => e instanceof SignatureError && /replay window/.test(e.reason));
  }
});

test("run and stream output", async () => {
  const g = new Container(GATEWAY);
  const r = await g.run({ shell: "echo out; echo err >&2; exit 3" });
  assert.deepEqual([r.stdout, r.stderr, r.exit_code], ["out\n", "err\n", 3]);
  const p = await g.start({ cmd: ["sh", "-c", "for i in 1 2 3; do echo line $i; done; echo oops >&2"] });
  const got = { stdout: "", stderr: "" };
  const end = await g.stream(p.id, (o) => { got[o.stream] += new TextDecoder().decode(o.data); });
  assert.deepEqual(got, { stdout: "line 1\nline 2\nline 3\n", stderr: "oops\n" });
  assert.equal(end.exit_code, 0);
});

test("stream resumes after a forced disconnect", async (t) => {
  const direct = new Container(GATEWAY);
  const p = await new Proxy(GATEWAY).listen();
  t.after(() => p.close());
  const via = new Container(p.url);
  const proc = await direct.start({ shell: "echo first; read x; echo second-$x", keep_stdin_open: true });
  let got = "";
  let cut = false;
  const end = await via.stream(proc.id, async (o) => {
    got += new TextDecoder().decode(o.data);
    if (got.includes("first\n") && !cut) {
      cut = true;
      p.cut();
      await direct.writeStdin(proc.id, new TextEncoder().encode("go\n"));
    }
  });
  assert.equal(got, "first\nsecond-go\n");
  assert.equal(end.state, "exited");
  assert.ok(p.dials >= 2);
});

test("a 100 MB file round trips through dropped connections", async (t) => {
  const size = 100 << 20;
  const p = await new Proxy(GATEWAY).listen();
  t.after(() => p.close());
  const g = new Container(p.url);
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) data.set(createHash("sha256").update(String(i)).digest(), i);
  const want = createHash("sha256").update(data).digest("hex");
  p.cutOnceAfter(37 << 20);
  const up = await g.upload("/ts-big.bin", data);
  assert.equal(up.sha256, want);
  assert.ok(up.reconnects >= 1);
  const h = createHash("sha256");
  let n = 0;
  p.cutOnceAfter(61 << 20);
  const down = await g.download("/ts-big.bin", (b) => { h.update(b); n += b.length; });
  assert.equal(h.digest("hex"), want);
  assert.equal(down.sha256, want);
  assert.equal(n, size);
  assert.ok(down.reconnects >= 1);
});

test("a terminal reads and writes until the shell ends", async () => {
  const t = await new Container(GATEWAY).attach({ shell: "/bin/sh", cols: 100, rows: 30 });
  t.write("echo hello-$((6*7)); exit 3\n");
  let out = "";
  for (let b; (b = await t.read()) !== null; ) out += new TextDecoder().decode(b);
  assert.match(out, /hello-42/);
  assert.equal(t.exitCode, 3);
});

test("coverage entries name methods that exist", () => {
  const cov = JSON.parse(readFileSync(new URL("../../coverage.json", import.meta.url)));
  assert.equal(cov.api_version, API_VERSION);
  const classes = { DeckhandClient, Container, Containers, Processes, Running, Files };
  for (const [doc, ops] of Object.entries(cov.documents)) {
    for (const [op, e] of Object.entries(ops)) {
      if (e.ts === "generated") continue;
      const [cls, m] = e.ts.split(".");
      assert.equal(typeof classes[cls]?.prototype[m], "function", `${doc} ${op}: no ${e.ts}`);
    }
  }
});

test("the quickstart example runs", () => {
  const out = execFileSync(process.execPath, [new URL("../examples/quickstart.js", import.meta.url).pathname], { encoding: "utf8", timeout: 300_000 });
  assert.match(out, /invoice PDF/);
  assert.match(out, /uploaded and downloaded/);
});
