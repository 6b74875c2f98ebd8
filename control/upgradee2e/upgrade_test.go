package upgradee2e_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/control/controltest"
	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { controltest.Main(m) }

// row is one line of the fixture: a kv row (value as jsonb text, or raw
// bytes) or a bucket's sequence.
type row struct {
	Bucket string          `json:"b"`
	Key    string          `json:"k"`
	Value  json.RawMessage `json:"v"`
	Raw    *string         `json:"r"`
	Seq    *uint64         `json:"seq"`
}

func fixture(t *testing.T) []row {
	t.Helper()
	f, err := os.Open("testdata/kv-store.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func (r row) bytes(t *testing.T) []byte {
	if r.Raw != nil {
		b, err := base64.StdEncoding.DecodeString(*r.Raw)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return r.Value
}

// load writes the fixture where a server on data will find it: the kv
// tables of the layout before (migration 0001 alone) on PostgreSQL, the
// same buckets in control.db on bbolt; and its master key.
func load(t *testing.T, data string) {
	t.Helper()
	key, err := os.ReadFile("testdata/master.key")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "master.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	rows := fixture(t)
	if !controltest.OnPostgres() {
		db, err := store.Open(filepath.Join(data, "control.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.Update(func(tx *store.Tx) error {
			for _, r := range rows {
				var err error
				if r.Seq != nil {
					err = tx.SetSeq(r.Bucket, *r.Seq)
				} else {
					err = tx.PutRaw(r.Bucket, r.Key, r.bytes(t))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, controltest.DatabaseURL(t, data))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE kv (bucket text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value jsonb, raw bytea,
    PRIMARY KEY (bucket, key), CHECK ((value IS NULL) <> (raw IS NULL)));
CREATE TABLE kv_seq (bucket text COLLATE "C" PRIMARY KEY, n bigint NOT NULL);
INSERT INTO schema_migrations (version, name) VALUES (1, '0001_kv.sql');`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		switch {
		case r.Seq != nil:
			_, err = conn.Exec(ctx, "INSERT INTO kv_seq (bucket, n) VALUES ($1, $2)", r.Bucket, int64(*r.Seq))
		case r.Raw != nil:
			_, err = conn.Exec(ctx, "INSERT INTO kv (bucket, key, raw) VALUES ($1, $2, $3)", r.Bucket, r.Key, r.bytes(t))
		default:
			_, err = conn.Exec(ctx, "INSERT INTO kv (bucket, key, value) VALUES ($1, $2, $3::text::jsonb)", r.Bucket, r.Key, string(r.Value))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func list(t *testing.T, s *controltest.Server, path, field, tok string) ([]any, float64) {
	t.Helper()
	d := controltest.Data(s.MustDo(200, "GET", path, nil, tok))
	items, _ := d[field].([]any)
	var total float64
	if pg, ok := d["pagination"].(map[string]any); ok {
		total, _ = pg["total"].(float64)
	}
	return items, total
}

// TestStoreOfTheKVLayoutUpgrades starts the current binary on the
// fixture: accounts log in, every list answers from the declared tables
// what the old layout held, the ledger verifies, and new writes land.
func TestStoreOfTheKVLayoutUpgrades(t *testing.T) {
	data := t.TempDir()
	load(t, data)
	s := controltest.StartIn(t, data)
	admin := s.Admin()
	ann := s.Login("ann@example.com", "Ann-pass-123456")

	evs, total := list(t, s, "/api/v1/events?container_id=cold1&limit=10", "events", ann)
	if total != 4 || len(evs) != 4 { // container.creating and three container.running
		t.Fatalf("ann's events of the container: %v of %v", len(evs), total)
	}
	if _, total := list(t, s, "/api/v1/events?event_type=container.running", "events", admin); total != 3 {
		t.Fatalf("admin's container.running events: %v", total)
	}
	txns, total := list(t, s, "/api/v1/wallet/transactions?sort_by=amount&sort_order=desc", "transactions", ann)
	if total != 3 || txns[0].(map[string]any)["amount"] != "100.00" {
		t.Fatalf("ann's transactions: %v", txns)
	}
	filter := url.QueryEscape(`{"amount":{"gte":9},"invoice_number":{"like":"inv-%"}}`)
	if invs, total := list(t, s, "/api/v1/wallet/invoices?filter="+filter, "invoices", ann); total != 1 || len(invs) != 1 {
		t.Fatalf("ann's invoices over 9: %v", invs)
	}
	if fees, total := list(t, s, "/api/v1/wallet/ai-fees", "fees", ann); total != 2 || len(fees) != 2 {
		t.Fatalf("ann's fees: %v", fees)
	}
	projects, total := list(t, s, "/api/v1/projects", "projects", ann)
	if total != 1 {
		t.Fatalf("ann's projects: %v", projects)
	}
	pid := projects[0].(map[string]any)["id"].(string)
	if cs, total := list(t, s, "/api/v1/projects/"+pid+"/containers", "containers", ann); total != 1 || cs[0].(map[string]any)["id"] != "cold1" {
		t.Fatalf("the project's containers: %v", cs)
	}
	imgs, total := list(t, s, "/api/v1/images/public?sort_by=price&sort_order=desc", "images", ann)
	if total != 2 || imgs[0].(map[string]any)["alias"] != "debian/12" {
		t.Fatalf("public images by price: %v", imgs)
	}
	// The old layout's unique alias still holds, and new writes land in
	// the tables and their indexes.
	s.MustDo(409, "POST", "/api/v1/admin/images", map[string]any{"alias": "debian/12", "image_name": "x", "os": "Linux", "architecture": "amd64"}, admin)
	_, before := list(t, s, "/api/v1/events?resource_type=wallet_transaction", "events", ann)
	s.MustDo(200, "POST", "/api/v1/wallet/transfer-to-ai", map[string]any{"amount": "1.00"}, ann)
	if _, total := list(t, s, "/api/v1/wallet/transactions", "transactions", ann); total != 4 {
		t.Fatalf("transactions after a new transfer: %v", total)
	}
	if _, total := list(t, s, "/api/v1/events?resource_type=wallet_transaction", "events", ann); before != 2 || total != 3 {
		t.Fatalf("ann's wallet events: %v before a new transfer, %v after", before, total)
	}
	users := s.MustDo(200, "GET", "/api/v1/admin/users", nil, admin)
	if !strings.Contains(string(users.Raw), "ann@example.com") {
		t.Fatalf("admin user list: %s", users.Raw)
	}
	s.Stop()
	args := append([]string{"wallet", "verify", "--data", data}, controltest.StoreFlags(t, data)...)
	if out, err := controltest.Out(args...); err != nil {
		t.Fatalf("wallet verify after the upgrade: %v\n%s", err, out)
	}
	if !controltest.OnPostgres() {
		return
	}
	// On PostgreSQL the buckets are tables now: kv keeps none of their rows
	// and an operator reads them with SQL.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, controltest.DatabaseURL(t, data))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left, evCount, ledger int
	var email string
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM kv WHERE bucket IN ('events', 'wallet_transactions', 'identity_users', 'images', 'projects', 'events_by', 'image_index')`).Scan(&left)
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE container_id = 'cold1'`).Scan(&evCount)
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM wallet_transactions WHERE amount > 0`).Scan(&ledger)
	_ = conn.QueryRow(ctx, `SELECT email FROM identity_users WHERE role = 'user'`).Scan(&email)
	if left != 0 || evCount != 4 || ledger != 4 || email != "ann@example.com" {
		t.Fatalf("tables after the upgrade: kv rows left %d, events %d, ledger %d, user %q", left, evCount, ledger, email)
	}
}
