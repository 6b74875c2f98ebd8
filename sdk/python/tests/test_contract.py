import hashlib
import io
import json
import os
import random
import subprocess
import sys
import time

import pytest

import deckhand
from conftest import CONTROL, GATEWAY, new_user


def test_login_me_and_an_auth_token():
    c = new_user()
    me = c.me()
    assert me["id"]
    tok = c.create_token("python sdk")
    assert tok["token"].startswith("svc_")
    assert deckhand.Client(CONTROL, token=tok["token"]).me()["id"] == me["id"]


def test_an_error_carries_the_servers_status_code_and_message():
    c = new_user()
    with pytest.raises(deckhand.DeckhandError) as e:
        c.transfer_to_ai("-1")
    assert e.value.status == 400 and e.value.code == "Bad Request" and "amount" in e.value.message
    with pytest.raises(deckhand.DeckhandError) as e:
        deckhand.Container(GATEWAY).run(cmd=["true"], cwd="relative")
    assert (e.value.status, e.value.code, e.value.details) == (400, "INVALID", "cwd")


def test_pagination_visits_every_transaction_once():
    c = new_user("20.00")
    for _ in range(5):
        c.transfer_to_ai("0.50")
    total = c.request("GET", "/api/v1/wallet/transactions")["pagination"]["total"]
    ids = [t["id"] for t in c.transactions(page_size=2)]
    assert len(ids) == total >= 6
    assert len(set(ids)) == len(ids)
    assert len(list(c.pages("/api/v1/wallet/ai-fees", "fees", page_size=2))) == 5
    with pytest.raises(deckhand.DeckhandError) as e:
        list(c.transactions(page_size=101))
    assert e.value.status == 400


def test_invoice_pdf():
    c = new_user("5.00")
    r = c.transfer_to_ai("2.00", idempotency_key="py-invoice")
    g = c.generate_invoice(r["transaction_id"])
    pdf = c.invoice_pdf(g["invoice_id"])
    assert pdf.startswith(b"%PDF-") and len(pdf) > 500
    assert g["invoice_id"] in [i["id"] for i in c.invoices()]


def test_a_tampered_answer_is_refused(proxy_to):
    good = new_user()
    p = proxy_to(CONTROL)
    c = deckhand.Client(p.url, token=good.token)
    assert c.me()["email"] == good.email
    local, domain = good.email.split("@")
    p.rewrite = lambda b: b.replace(good.email.encode(), (local + "@exbmple.com").encode(), 1)
    with pytest.raises(deckhand.SignatureError, match="does not verify"):
        c.me()
    p.rewrite = lambda b: b.replace(b"X-Service-Signature:", b"X-Service-Signaturf:", 1)
    with pytest.raises(deckhand.SignatureError, match="missing"):
        c.me()


def test_a_replayed_or_relabelled_answer_is_refused_by_its_binding(proxy_to):
    from conftest import Middle
    good = new_user()
    m = Middle(CONTROL, "/users/auth/me")
    try:
        c = deckhand.Client(m.url, token=good.token)
        assert c.me()["email"] == good.email
        # A genuine answer to an earlier request to the same path: its
        # X-Service-Signature holds; only the binding to this nonce does not.
        m.replay = True
        with pytest.raises(deckhand.SignatureError, match="binding"):
            c.me()
        assert m.tampered == 1
    finally:
        m.close()
    # A genuine 404 passed on as 200.
    p = proxy_to(CONTROL)
    c = deckhand.Client(p.url, token=good.token)
    p.rewrite = lambda b: b.replace(b"HTTP/1.1 404 Not Found", b"HTTP/1.1 200 OK", 1)
    with pytest.raises(deckhand.SignatureError, match="status"):
        c.request("GET", "/api/v1/nothing-here")


@pytest.mark.parametrize("skew", [-301, 301])
def test_an_answer_outside_the_replay_window_is_refused(skew):
    good = new_user()
    c = deckhand.Client(CONTROL, token=good.token, now=lambda: time.time() + skew)
    with pytest.raises(deckhand.SignatureError, match="replay window"):
        c.me()


def test_call_reaches_any_operation_by_its_id():
    c = new_user("1.00")
    assert c.call("getBalances")["general_balance"] == "1.00"
    g = deckhand.Container(GATEWAY)
    assert g.call("files", "statFile", query={"path": "/"})["type"] == "dir"
    with pytest.raises(ValueError, match="no operation"):
        c.call("noSuchOperation")


def test_run_and_stream_output():
    g = deckhand.Container(GATEWAY)
    r = g.run(shell="echo out; echo err >&2; exit 3")
    assert (r["stdout"], r["stderr"], r["exit_code"]) == ("out\n", "err\n", 3)
    p = g.start(cmd=["sh", "-c", "for i in 1 2 3; do echo line $i; done; echo oops >&2"])
    got = {"stdout": b"", "stderr": b""}

    def on(o):
        got[o.stream] += o.data

    end = g.stream(p["id"], on_output=on)
    assert got == {"stdout": b"line 1\nline 2\nline 3\n", "stderr": b"oops\n"} and end["exit_code"] == 0


def test_stream_resumes_after_a_forced_disconnect(proxy_to):
    direct = deckhand.Container(GATEWAY)
    p = proxy_to(GATEWAY)
    via = deckhand.Container(p.url)
    proc = direct.start(shell="echo first; read x; echo second-$x", keep_stdin_open=True)
    got = bytearray()
    done = []

    def on(o):
        got.extend(o.data)
        if b"first\n" in got and not done:
            done.append(1)
            p.cut()
            direct.write_stdin(proc["id"], b"go\n")

    end = via.stream(proc["id"], on_output=on)
    assert bytes(got) == b"first\nsecond-go\n"
    assert end["state"] == "exited" and p.dials >= 2


def test_terminal_reads_and_writes_until_the_shell_ends():
    with deckhand.Container(GATEWAY).terminal(shell="/bin/sh", cols=100, rows=30) as t:
        t.write(b"echo hello-$((6*7)); exit 3\n")
        out = b""
        while True:
            b = t.read()
            if not b:
                break
            out += b
    assert b"hello-42" in out and t.exit_code == 3


def test_terminal_refusal_is_a_typed_error():
    with pytest.raises(deckhand.DeckhandError) as e:
        deckhand.Container(GATEWAY).terminal(id="none")
    assert e.value.status == 404


class Random:
    """n deterministic pseudo-random bytes."""

    def __init__(self, n, seed):
        self.left, self.rnd = n, random.Random(seed)

    def read(self, k):
        k = min(k, self.left)
        self.left -= k
        return self.rnd.randbytes(k)


def test_a_100mb_file_round_trips_through_dropped_connections(proxy_to):
    size = 100 << 20
    p = proxy_to(GATEWAY)
    g = deckhand.Container(p.url)
    src = Random(size, 7)
    want = hashlib.sha256()

    class Tee:
        def read(self, k):
            b = src.read(k)
            want.update(b)
            return b

    p.cut_once_after(37 << 20)
    up = g.upload("/py-big.bin", Tee(), size)
    assert up["sha256"] == want.hexdigest() and up["size"] == size and up["reconnects"] >= 1

    class Sink:
        n = 0
        h = hashlib.sha256()

        def write(self, b):
            self.n += len(b)
            self.h.update(b)

    sink = Sink()
    p.cut_once_after(61 << 20)
    down = g.download("/py-big.bin", sink)
    assert sink.h.hexdigest() == want.hexdigest() == down["sha256"]
    assert sink.n == size and down["reconnects"] >= 1


def test_coverage_entries_name_methods_that_exist():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "coverage.json")
    with open(path) as f:
        cov = json.load(f)
    assert cov["api_version"] == deckhand.API_VERSION
    for doc, ops in cov["documents"].items():
        for op, e in ops.items():
            name = e["python"]
            if name == "generated":
                method, _ = deckhand._openapi.resolve(doc, op, _AnyParams())
                assert method
                continue
            cls, meth = name.split(".")
            assert hasattr(getattr(deckhand, cls), meth), f"{doc} {op}: no {name}"


class _AnyParams(dict):
    def __contains__(self, k):
        return True

    def __getitem__(self, k):
        return "x"


def test_the_quickstart_example_runs():
    ex = os.path.join(os.path.dirname(__file__), "..", "examples", "quickstart.py")
    r = subprocess.run([sys.executable, ex], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "invoice PDF" in r.stdout and "downloaded" in r.stdout


def test_from_login_uses_the_clis_saved_login(tmp_path, monkeypatch):
    good = new_user()
    tok = good.create_token("from login")["token"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"control_url": CONTROL, "credential": {"kind": "token", "token": tok}}))
    path.chmod(0o600)
    monkeypatch.setenv("DECKHAND_CONFIG", str(path))
    assert deckhand.Client.from_login().me()["email"] == good.email
    path.chmod(0o644)
    with pytest.raises(deckhand.DeckhandError, match="chmod 600"):
        deckhand.Client.from_login()
    monkeypatch.setenv("DECKHAND_CONFIG", str(tmp_path / "none.json"))
    with pytest.raises(deckhand.DeckhandError, match="deckhand login"):
        deckhand.Client.from_login()
