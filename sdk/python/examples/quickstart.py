"""The quickstart: sign in, create a token, transfer to AI credit, fetch
an invoice PDF, run a command, stream its output, upload and download a
file, take a screenshot.

    DECKHAND_CONTROL_URL=https://... DECKHAND_GATEWAY_URL=http://127.0.0.1:7700 \
    DECKHAND_EMAIL=you@example.com DECKHAND_PASSWORD=... python3 quickstart.py
"""

import hashlib
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import deckhand  # noqa: E402

control = deckhand.Client(os.environ["DECKHAND_CONTROL_URL"])
control.login(os.environ["DECKHAND_EMAIL"], os.environ["DECKHAND_PASSWORD"])
print("signed in as", control.me()["email"])

token = control.create_token("quickstart")
print("created token", token["prefix"], "(the secret is shown once)")

receipt = control.transfer_to_ai("1.00", idempotency_key="quickstart-transfer")
print("transferred; AI balance", receipt["ai_balance"])

invoice = control.generate_invoice(receipt["transaction_id"])
pdf = control.invoice_pdf(invoice["invoice_id"])
print("invoice PDF", invoice["invoice_number"], len(pdf), "bytes")

box = deckhand.Container(os.environ["DECKHAND_GATEWAY_URL"], token=os.environ.get("DECKHAND_AGENT_TOKEN"))
r = box.run(cmd=["uname", "-s"])
print("ran uname:", r["stdout"].strip(), "exit", r["exit_code"])

p = box.start(shell="for i in 1 2 3; do echo tick $i; done")
box.stream(p["id"], on_output=lambda o: print("stream", o.stream, o.data.decode().strip()))

data = os.urandom(1 << 20)
up = box.upload("/quickstart.bin", io.BytesIO(data), len(data))
out = io.BytesIO()
down = box.download("/quickstart.bin", out)
assert out.getvalue() == data and down["sha256"] == hashlib.sha256(data).hexdigest()
print("uploaded and downloaded", down["size"], "bytes, sha256", down["sha256"][:12])

try:
    png = box.screenshot()
    print("screenshot", len(png), "bytes of PNG")
except deckhand.DeckhandError as e:
    print("no display in this container:", e.code, e.message)
