package vault_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
	"deckhand/services/vault"
)

// BenchmarkVault measures get and put latency: the domain call (seal or
// open plus one bbolt transaction, fsync included for puts) and the same
// over HTTP on a loopback connection (what a client sees).
func BenchmarkVault(b *testing.B) {
	value := json.RawMessage(`{"user":"app","password":"` + strings.Repeat("s", 64) + `"}`)
	setup := func(b *testing.B) (*vault.Service, string) {
		f := newVault(b, nil)
		for i := range 1000 {
			if _, _, err := f.svc.Put(b.Context(), fmt.Sprintf("key%04d", i), vault.Write{Value: value}, vault.Precondition{}); err != nil {
				b.Fatal(err)
			}
		}
		return f.svc, platformtest.Serve(b, f.h)
	}
	svc, base := setup(b)
	b.Run("get/domain", func(b *testing.B) {
		for i := range b.N {
			if _, err := svc.Get(b.Context(), fmt.Sprintf("key%04d", i%1000)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("put/domain", func(b *testing.B) {
		for i := range b.N {
			if _, _, err := svc.Put(b.Context(), fmt.Sprintf("key%04d", i%1000), vault.Write{Value: value}, vault.Precondition{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	do := func(b *testing.B, method, url, body string, want int) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: %d", method, url, resp.StatusCode)
		}
	}
	b.Run("get/http", func(b *testing.B) {
		for i := range b.N {
			do(b, "GET", fmt.Sprintf("%s/api/v1/vault/keys/key%04d", base, i%1000), "", 200)
		}
	})
	b.Run("put/http", func(b *testing.B) {
		body := `{"value":` + string(value) + `}`
		for i := range b.N {
			do(b, "PUT", fmt.Sprintf("%s/api/v1/vault/keys/key%04d", base, i%1000), body, 200)
		}
	})
}

// BenchmarkVaultList measures a page of the listing (100 keys, no values)
// out of 1000, within a prefix and after a cursor, and the counts of
// stats, which visit every key.
func BenchmarkVaultList(b *testing.B) {
	f := newVault(b, nil)
	value := json.RawMessage(`{"user":"app","password":"` + strings.Repeat("s", 64) + `"}`)
	for i := range 1000 {
		ttl := int64(3600)
		w := vault.Write{Value: value}
		if i%4 == 0 {
			w.TTLSeconds = &ttl
		}
		if _, _, err := f.svc.Put(b.Context(), fmt.Sprintf("%s.key%04d", []string{"app", "db"}[i%2], i), w, vault.Precondition{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("page100", func(b *testing.B) {
		for b.Loop() {
			l, err := f.svc.ListKeys(b.Context(), "", "app.key0500", 100)
			if err != nil || len(l.Keys) != 100 {
				b.Fatal(len(l.Keys), err)
			}
		}
	})
	b.Run("prefix100", func(b *testing.B) {
		for b.Loop() {
			l, err := f.svc.ListKeys(b.Context(), "db.", "", 100)
			if err != nil || len(l.Keys) != 100 {
				b.Fatal(len(l.Keys), err)
			}
		}
	})
	b.Run("stats", func(b *testing.B) {
		for b.Loop() {
			st, err := f.svc.Stats(b.Context())
			if err != nil || st.Keys != 1000 {
				b.Fatal(st.Keys, err)
			}
		}
	})
}
