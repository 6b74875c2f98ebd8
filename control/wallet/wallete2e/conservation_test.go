package wallete2e_test

import (
	"bytes"
	"context"
	"deckhand/control/wallet"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/control/money"
	"deckhand/platform/secrets"
)

// job is one transfer request of the storm.
type job struct {
	user   int
	key    string
	amount string
}

// outcome is what one request got (status 0: no answer, the server died).
type outcome struct {
	job
	status   int
	txID     string
	replayed bool
	gross    money.Amount
}

// storm builds n transfers over users: every key is sent once, about a
// fifth a second time with the same amount (a replay, often concurrent
// with the first) and a few with another amount (409).
func storm(n, users int, seed uint64) []job {
	r := rand.New(rand.NewPCG(seed, 7))
	var jobs []job
	for len(jobs) < n {
		j := job{user: r.IntN(users), key: fmt.Sprintf("key-%d-%d", seed, len(jobs)), amount: money.Amount(1 + r.IntN(3000)).String()}
		jobs = append(jobs, j)
		switch x := r.IntN(10); {
		case x < 2 && len(jobs) < n:
			jobs = append(jobs, j)
		case x == 2 && len(jobs) < n:
			other := j
			other.amount = (money.Amount(1+r.IntN(3000)) + 3000).String()
			jobs = append(jobs, other)
		}
	}
	r.Shuffle(len(jobs), func(i, k int) { jobs[i], jobs[k] = jobs[k], jobs[i] })
	return jobs
}

// fire sends jobs from workers clients against the servers (round robin)
// and returns every outcome; stopAfter > 0 calls onStop once that many
// answers arrived.
func fire(t *testing.T, urls []string, toks []string, jobs []job, workers int, stopAfter int, onStop func()) []outcome {
	t.Helper()
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	out := make([]outcome, len(jobs))
	var next, answered atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				j := jobs[i]
				o := outcome{job: j}
				body, _ := json.Marshal(map[string]any{"amount": j.amount, "idempotency_key": j.key})
				req, _ := http.NewRequest("POST", urls[i%len(urls)]+"/api/v1/wallet/transfer-to-ai", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+toks[j.user])
				req.Header.Set("Content-Type", "application/json")
				if res, err := client.Do(req); err == nil {
					raw, _ := io.ReadAll(res.Body)
					res.Body.Close()
					o.status = res.StatusCode
					var env struct {
						Data struct {
							TransactionID string       `json:"transaction_id"`
							Replayed      bool         `json:"replayed"`
							Gross         money.Amount `json:"gross_transferred"`
						} `json:"data"`
					}
					if o.status == 200 {
						if err := json.Unmarshal(raw, &env); err != nil {
							t.Errorf("receipt: %v %s", err, raw)
						}
						o.txID, o.replayed, o.gross = env.Data.TransactionID, env.Data.Replayed, env.Data.Gross
					} else if o.status == 400 && !bytes.Contains(raw, []byte("insufficient balance")) {
						t.Errorf("transfer %v: 400 for another reason than the balance: %s", j, raw)
					} else if o.status == 409 && !bytes.Contains(raw, []byte("TRANSFER_IDEMPOTENCY_KEY_REUSED")) {
						t.Errorf("transfer %v: %s", j, raw)
					} else if o.status != 400 && o.status != 409 {
						t.Errorf("transfer %v: %d %s", j, o.status, raw)
					}
				}
				out[i] = o
				if stopAfter > 0 && answered.Add(1) == int64(stopAfter) {
					once.Do(onStop)
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// party is the storm's users on one server.
type party struct {
	ids, toks []string
	credited  money.Amount // per user
}

func newParty(s *srv, n int, each string) *party {
	admin := s.Admin()
	p := &party{}
	for i := 0; i < n; i++ {
		id, tok := s.User(admin, fmt.Sprintf("saver%d@example.com", i))
		credit(s, admin, id, each)
		p.ids, p.toks = append(p.ids, id), append(p.toks, tok)
	}
	p.credited, _ = money.Parse(each)
	return p
}

// checkConservation: each user's general balance, AI limit and fees add up
// to what was credited, to the cent; every key moved money at most once
// and every 200 is in the ledger with the transaction id it answered.
func checkConservation(t *testing.T, s *srv, p *party, outs []outcome) {
	t.Helper()
	byKey := map[string]string{}
	for _, o := range outs {
		if o.status != 200 {
			continue
		}
		if prev, ok := byKey[o.key]; ok && prev != o.txID {
			t.Errorf("key %s answered two transactions %s and %s", o.key, prev, o.txID)
		}
		byKey[o.key] = o.txID
	}
	var total money.Amount
	for u := range p.ids {
		b := balances(s, p.toks[u])
		fees := feesOf(s, p.toks[u])
		sum := amt(t, b["general_balance"]) + amt(t, b["ai_limit"]) + fees
		if sum != p.credited {
			t.Errorf("user %d: general %v + ai_limit %v + fees %s = %s, credited %s", u, b["general_balance"], b["ai_limit"], fees, sum, p.credited)
		}
		total += sum
		// Count the user's transfers in the ledger: one per key.
		l := data(s.Must(s.Call("GET", "/api/v1/wallet/transactions?limit=100&page=1", nil, p.toks[u]), 200))
		pg := l["pagination"].(map[string]any)
		seen := map[string]bool{}
		for page := 1; ; page++ {
			l = data(s.Must(s.Call("GET", fmt.Sprintf("/api/v1/wallet/transactions?limit=100&page=%d", page), nil, p.toks[u]), 200))
			for _, x := range l["transactions"].([]any) {
				seen[x.(map[string]any)["id"].(string)] = true
			}
			if float64(page) >= pg["totalPages"].(float64) {
				break
			}
		}
		for _, o := range outs {
			if o.status == 200 && o.user == u && !seen[o.txID] {
				t.Errorf("transfer %s answered 200 (%s) but is not in the ledger", o.key, o.txID)
			}
		}
	}
	if want := p.credited * money.Amount(len(p.ids)); total != want {
		t.Errorf("all users hold %s, credits were %s", total, want)
	}
}

func summary(outs []outcome) string {
	n := map[int]int{}
	replays := 0
	for _, o := range outs {
		n[o.status]++
		if o.replayed {
			replays++
		}
	}
	return fmt.Sprintf("statuses %v, replayed %d", n, replays)
}

func TestConservationUnderConcurrentTransfers(t *testing.T) {
	s := controltest.Start(t)
	p := newParty(s, 5, "1000.00")
	outs := fire(t, []string{s.URL}, p.toks, storm(500, 5, 1), 64, 0, nil)
	t.Log(summary(outs))
	checkOutcomes(t, outs)
	checkConservation(t, s, p, outs)
	s.Stop()
	verify(t, s.Data)
}

// checkOutcomes: replays carry the original's transaction, other amounts 409.
func checkOutcomes(t *testing.T, outs []outcome) {
	t.Helper()
	first := map[string]outcome{}
	for _, o := range outs {
		if o.status == 200 && !o.replayed {
			if prev, dup := first[o.key]; dup {
				t.Errorf("key %s moved money twice: %s and %s", o.key, prev.txID, o.txID)
			}
			first[o.key] = o
		}
	}
	replays := 0
	for _, o := range outs {
		if o.status == 200 && o.replayed {
			replays++
			if f, ok := first[o.key]; ok && (f.txID != o.txID || f.amount != o.amount) {
				t.Errorf("replay of %s answered %s, first %s", o.key, o.txID, f.txID)
			}
		}
	}
	if replays == 0 {
		t.Error("no request was replayed: the storm did not exercise idempotency")
	}
}

func TestConservationAfterSIGKILL(t *testing.T) {
	data := t.TempDir()
	s := controltest.StartIn(t, data)
	p := newParty(s, 5, "1000.00")
	jobs := storm(500, 5, 2)
	outs := fire(t, []string{s.URL}, p.toks, jobs, 64, 150, s.Kill)
	t.Log("before the kill and during it: " + summary(outs))
	s2 := controltest.StartIn(t, data)
	// Tokens survive the restart; every answered 200 must be in the ledger.
	checkConservation(t, s2, p, outs)
	// Send the storm again: committed keys replay, the rest move now.
	again := fire(t, []string{s2.URL}, p.toks, jobs, 64, 0, nil)
	t.Log("after restart: " + summary(again))
	all := append(append([]outcome{}, outs...), again...)
	checkConservation(t, s2, p, all)
	s2.Stop()
	verify(t, data)
}

func TestConservationAcrossTwoReplicas(t *testing.T) {
	if !controltest.OnPostgres() {
		t.Skip("replicas share a PostgreSQL database; this runs in the PostgreSQL pass")
	}
	data := t.TempDir()
	dbURL := controltest.DatabaseURL(t, data)
	key := filepath.Join(t.TempDir(), "master.key")
	if err := secrets.WriteKeyFile(key, secrets.NewKey()); err != nil {
		t.Fatal(err)
	}
	start := func() *srv {
		d := t.TempDir()
		return controltest.StartArgs(t, d, "serve", "--listen", "127.0.0.1:0", "--data", d, "--database-url", dbURL,
			"--master-key-file", key, "--admin-email", controltest.AdminEmail, "--admin-password", controltest.AdminPass, "--log-level", "warn")
	}
	a, b := start(), start()
	p := newParty(a, 5, "1000.00")
	outs := fire(t, []string{a.URL, b.URL}, p.toks, storm(500, 5, 3), 64, 0, nil)
	t.Log(summary(outs))
	checkOutcomes(t, outs)
	checkConservation(t, b, p, outs)
	verify(t, data)
}

// TestVerifyNamesTheAccountThatDisagrees changes one balance behind the
// ledger's back: wallet verify must exit non-zero and name the account.
func TestVerifyNamesTheAccountThatDisagrees(t *testing.T) {
	data := t.TempDir()
	s := controltest.StartIn(t, data)
	p := newParty(s, 2, "10.00")
	s.Must(transfer(s, p.toks[1], map[string]any{"amount": "1.00"}), 200)
	s.Stop()
	verify(t, data)
	var db *store.DB
	var err error
	if controltest.OnPostgres() {
		db, err = pgstore.Open(context.Background(), controltest.DatabaseURL(t, data))
	} else {
		db, err = store.Open(filepath.Join(data, "control.db"))
	}
	if err != nil {
		t.Fatal(err)
	}
	// A writer of the balances declares their table, as the server does.
	if err := db.Declare(context.Background(), wallet.Tables...); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *store.Tx) error {
		var a map[string]any
		if _, err := tx.Get("wallet_accounts", p.ids[1], &a); err != nil {
			return err
		}
		a["general_balance"] = "1000000.00"
		return tx.Put("wallet_accounts", p.ids[1], a)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"wallet", "verify", "--data", data}
	if controltest.OnPostgres() {
		args = append(args, "--database-url", controltest.DatabaseURL(t, data))
	}
	out, err := controltest.Out(args...)
	if err == nil {
		t.Fatalf("verify passed a tampered balance:\n%s", out)
	}
	if !strings.Contains(out, "MISMATCH account bal_"+p.ids[1]) || strings.Contains(out, p.ids[0]) {
		t.Fatalf("verify did not name exactly the tampered account:\n%s", out)
	}
}
