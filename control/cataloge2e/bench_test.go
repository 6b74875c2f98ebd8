package cataloge2e_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"deckhand/control/controltest"
)

// BenchmarkPublicListHTTP is the public image list through the real
// binary (authentication, the list, JSON, response signing) over 10,000
// images created through the admin API; each op is one GET of a page of
// 100 with filters and sort, and p50/p99 are of the individual requests.
func BenchmarkPublicListHTTP(b *testing.B) {
	engineName := map[bool]string{false: "bbolt", true: "postgres"}[controltest.OnPostgres()]
	b.Run(engineName, benchPublicListHTTP)
}

func benchPublicListHTTP(b *testing.B) {
	s := serve(b)
	adm := s.Admin()
	rng := rand.New(rand.NewPCG(3, 5))
	oses := []string{"debian", "ubuntu", "alpine", "fedora", "arch"}
	archs := []string{"amd64", "arm64", "armhf"}
	words := []string{"web", "database", "gpu", "minimal", "desktop", "ci", "ml", "edge"}
	bodies := make(chan map[string]any, 64)
	go func() {
		for n := range 10000 {
			bodies <- map[string]any{"alias": fmt.Sprintf("%s-%s-%05d", oses[n%5], words[rng.IntN(8)], n), "image_name": fmt.Sprint("Image ", n),
				"description": "A " + words[rng.IntN(8)] + " image", "os": oses[rng.IntN(5)], "architecture": archs[rng.IntN(3)],
				"price": float64(rng.IntN(5000)) / 100, "tags": []string{words[rng.IntN(8)], words[rng.IntN(8)]}}
		}
		close(bodies)
	}()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range bodies {
				if r := s.Call("POST", "/api/v1/admin/images", body, adm); r.Status != 201 {
					b.Errorf("create: %d %s", r.Status, r.Raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	query := "/api/v1/images/public?architecture=amd64&min_price=1&max_price=40&sort_by=price&sort_order=desc&limit=100"
	req, _ := http.NewRequest("GET", s.URL+query, nil)
	req.Header.Set("Authorization", "Bearer "+adm)
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := s.HTTP.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		times = append(times, time.Since(t0))
		if res.StatusCode != 200 {
			b.Fatalf("list: %d", res.StatusCode)
		}
	}
	slices.Sort(times)
	ms := func(p float64) float64 { return float64(times[int(p*float64(len(times)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
