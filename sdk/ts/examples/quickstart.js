// The quickstart: sign in, create a token, transfer to AI credit, fetch an
// invoice PDF, run a command, stream its output, upload and download a
// file, take a screenshot.
//
//   DECKHAND_CONTROL_URL=https://... DECKHAND_GATEWAY_URL=http://127.0.0.1:7700 \
//   DECKHAND_EMAIL=you@example.com DECKHAND_PASSWORD=... node examples/quickstart.js
import { DeckhandClient, Container, DeckhandError } from "../dist/index.js";

const control = new DeckhandClient(process.env.DECKHAND_CONTROL_URL);
await control.login(process.env.DECKHAND_EMAIL, process.env.DECKHAND_PASSWORD);
console.log("signed in as", (await control.me()).email);

const token = await control.createToken("quickstart");
console.log("created token", token.prefix, "(the secret is shown once)");

const receipt = await control.transferToAI("1.00", "ts-quickstart-transfer");
console.log("transferred; AI balance", receipt.ai_balance);

const invoice = await control.generateInvoice(receipt.transaction_id);
const pdf = await control.invoicePDF(invoice.invoice_id);
console.log("invoice PDF", invoice.invoice_number, pdf.length, "bytes");

const box = new Container(process.env.DECKHAND_GATEWAY_URL, { token: process.env.DECKHAND_AGENT_TOKEN });
const r = await box.run({ cmd: ["uname", "-s"] });
console.log("ran uname:", r.stdout.trim(), "exit", r.exit_code);

const p = await box.start({ shell: "for i in 1 2 3; do echo tick $i; done" });
await box.stream(p.id, (o) => process.stdout.write(`stream ${o.stream} ${new TextDecoder().decode(o.data)}`));

const data = crypto.getRandomValues(new Uint8Array(1 << 16));
await box.upload("/ts-quickstart.bin", data);
const back = [];
const down = await box.download("/ts-quickstart.bin", (b) => back.push(b));
console.log("uploaded and downloaded", down.size, "bytes, sha256", down.sha256.slice(0, 12));

try {
  const png = await box.screenshot();
  console.log("screenshot", png.length, "bytes of PNG");
} catch (e) {
  if (!(e instanceof DeckhandError)) throw e;
  console.log("no display in this container:", e.code);
}
