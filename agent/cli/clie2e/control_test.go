package clie2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"deckhand/control/controltest"
)

// The token lifecycle through the CLI, checked against the server: a
// disabled token is refused, an enabled one works, a revoked one is gone;
// failures print the server's message and exit non-zero.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	email := "tokens@example.com"
	s.User(s.Admin(), email)
	u := newUser(t)
	u.login(s.URL, email, controltest.GoodPW)

	created := u.jsonOf("tokens", "create", "ci runner", "--ip", "127.0.0.1", "--expires-at", "tomorrow")
	id, secret := created["id"].(string), created["token"].(string)
	if !strings.HasPrefix(secret, "svc_") || created["alias"] != "ci runner" || created["is_enabled"] != true {
		t.Fatalf("created %v", created)
	}
	list := u.ok("", "tokens", "list", "-o", "json")
	if jq(t, `map(select(.id == "`+id+`")) | length`, list) != "1" || strings.Contains(list, secret) {
		t.Fatalf("list %s", list)
	}
	// The table lists it too, never the secret.
	if tbl := u.ok("", "tokens", "list"); !strings.Contains(tbl, id) || !strings.Contains(tbl, "ci runner") || strings.Contains(tbl, secret) {
		t.Fatalf("table %s", tbl)
	}
	// -o yaml parses, with the same fields.
	var y map[string]any
	if err := yaml.Unmarshal([]byte(u.ok("", "tokens", "get", id, "-o", "yaml")), &y); err != nil || y["id"] != id || y["is_enabled"] != true {
		t.Fatalf("yaml %v %v", y, err)
	}
	s.MustDo(200, "GET", "/api/v1/users/auth/me", nil, secret)

	if got := u.jsonOf("tokens", "disable", id); got["is_enabled"] != false {
		t.Fatalf("disable: %v", got)
	}
	s.MustDo(401, "GET", "/api/v1/users/auth/me", nil, secret)
	if got := u.jsonOf("tokens", "enable", id); got["is_enabled"] != true {
		t.Fatalf("enable: %v", got)
	}
	s.MustDo(200, "GET", "/api/v1/users/auth/me", nil, secret)

	if got := u.jsonOf("tokens", "revoke", id); got["revoked"] != true {
		t.Fatalf("revoke: %v", got)
	}
	s.MustDo(401, "GET", "/api/v1/users/auth/me", nil, secret)
	r := u.fails("not found", "tokens", "get", id)
	if r.stdout != "" {
		t.Fatalf("a failure printed on stdout: %s", r)
	}
	u.fails("alias", "tokens", "create", "bad/alias!")
}

// A transfer through the CLI moves the money the server says it moved,
// replays with the same idempotency key, and its invoice PDF (made and
// saved by the CLI) reads back with pdftotext.
func TestTransferAndInvoicePDF(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext is needed (apt-get install poppler-utils)")
	}
	s := controltest.Start(t)
	admin := s.Admin()
	email := "wallet@example.com"
	uid, _ := s.User(admin, email)
	s.MustDo(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": uid, "amount": "50.00", "reason": "test top-up"}, admin)
	u := newUser(t)
	u.login(s.URL, email, controltest.GoodPW)

	if b := u.jsonOf("wallet", "balance"); b["general_balance"] != "50.00" {
		t.Fatalf("balance %v", b)
	}
	receipt := u.jsonOf("wallet", "transfer", "10.00", "--idempotency-key", "k-1", "--expected-fee-bps", "500")
	if receipt["gross_transferred"] != "10.00" || receipt["fee"] != "0.50" || receipt["net_ai_credit"] != "9.50" ||
		receipt["general_balance"] != "40.00" || receipt["replayed"] != false || receipt["idempotency_key"] != "k-1" {
		t.Fatalf("receipt %v", receipt)
	}
	txn := receipt["transaction_id"].(string)
	again := u.jsonOf("wallet", "transfer", "10.00", "--idempotency-key", "k-1")
	if again["replayed"] != true || again["transaction_id"] != txn || again["general_balance"] != "40.00" {
		t.Fatalf("replay %v", again)
	}
	u.fails("TRANSFER_FEE_CHANGED", "wallet", "transfer", "1.00", "--expected-fee-bps", "400")
	u.fails("amount", "wallet", "transfer", "1.001")
	if b := u.jsonOf("wallet", "balance"); b["general_balance"] != "40.00" || b["ai_limit"] != "9.50" {
		t.Fatalf("balance after %v", b)
	}
	txs := u.ok("", "wallet", "transactions", "-o", "json")
	if jq(t, `.transactions[0].id`, txs) != txn || jq(t, `.transactions | length`, txs) != "2" {
		t.Fatalf("transactions %s", txs)
	}

	pdf := filepath.Join(u.home, "invoice.pdf")
	saved := u.jsonOf("wallet", "invoices", "--transaction", txn, "--pdf", pdf)
	inv := saved["invoice_id"].(string)
	text, err := exec.Command("pdftotext", pdf, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	one := u.jsonOf("wallet", "invoices", inv)
	number := one["invoice_number"].(string)
	for _, want := range []string{"INVOICE", number, email, "9.50", "0.50", "Platform fee"} {
		if !strings.Contains(string(text), want) {
			t.Fatalf("invoice PDF text lacks %q:\n%s", want, text)
		}
	}
	// The same invoice on stdout, and in the list.
	if out := u.ok("", "wallet", "invoices", inv, "--pdf", "-"); !strings.HasPrefix(out, "%PDF-") {
		t.Fatalf("--pdf - wrote %q", out[:min(len(out), 20)])
	}
	if jq(t, `.invoices[0].id`, u.ok("", "wallet", "invoices", "-o", "json")) != inv {
		t.Fatal("the invoice is not listed")
	}
}

// events lists and follows the log (each new event one JSON line);
// notifications lists and marks them read.
func TestEventsAndNotifications(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	admin := s.Admin()
	email := "events@example.com"
	uid, _ := s.User(admin, email)
	u := newUser(t)
	u.login(s.URL, email, controltest.GoodPW)
	u.ok("", "tokens", "create", "first")
	list := u.ok("", "events", "--type", "auth.token.created", "-o", "json")
	if jq(t, `.events | length`, list) != "1" || jq(t, `.events[0].payload.alias`, list) != "first" {
		t.Fatalf("events %s", list)
	}

	// From a moment after the first token's event (not "now" as the
	// process sees it, which may come after the next token).
	since := time.Now().UTC().Format(time.RFC3339Nano)
	cmd := exec.Command(bin, "events", "--follow", "--since", since, "--interval", "100ms", "--type", "auth.token.created", "-o", "json")
	cmd.Env = u.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The earlier token is not printed, the next two are, once each, in
	// order.
	for _, alias := range []string{"second", "third"} {
		u.ok("", "tokens", "create", alias)
		select {
		case line, ok := <-lines:
			var ev map[string]any
			if !ok || json.Unmarshal([]byte(line), &ev) != nil || ev["payload"].(map[string]any)["alias"] != alias {
				t.Fatalf("followed %q, want the event of %s", line, alias)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the event of %s never came", alias)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if rest := readRest(lines); rest != "" {
		t.Fatalf("more lines than events: %q", rest)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("events --follow after SIGINT: %v", err)
	}

	s.MustDo(201, "POST", "/api/v1/admin/notifications", map[string]any{"title": "Maintenance", "body": "tonight", "user_id": uid, "level": "info"}, admin)
	n := u.ok("", "notifications", "--unread", "-o", "json")
	if jq(t, `[.notifications[] | select(.title == "Maintenance")] | length`, n) != "1" {
		t.Fatalf("notifications %s", n)
	}
	u.ok("", "notifications", "read", "--all")
	if n := u.ok("", "notifications", "--unread", "-o", "json"); jq(t, `.notifications | length`, n) != "0" {
		t.Fatalf("unread after read --all: %s", n)
	}
}

func readRest(lines <-chan string) string {
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	return strings.Join(rest, "\n")
}
