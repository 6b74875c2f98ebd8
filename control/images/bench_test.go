package images_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"deckhand/control/catalogtest"
	"deckhand/control/images"
)

// benchCatalog is one 10,000-image catalog per engine, seeded once per
// test binary run.
var (
	benchMu  sync.Mutex
	benchEnv = map[string]*env{}
)

const benchImages = 10000

func seededCatalog(b *testing.B) *env {
	benchMu.Lock()
	defer benchMu.Unlock()
	if e, ok := benchEnv[engine.Name]; ok {
		return e
	}
	e := newEnv(b)
	rng := rand.New(rand.NewPCG(7, 11))
	oses := []string{"debian", "ubuntu", "alpine", "fedora", "arch"}
	archs := []string{"amd64", "arm64", "armhf"}
	words := []string{"web", "database", "gpu", "minimal", "desktop", "ci", "ml", "edge"}
	for batch := 0; batch < benchImages/1000; batch++ {
		var seed []images.SeedImage
		for i := range 1000 {
			n := batch*1000 + i
			count := rng.IntN(40)
			seed = append(seed, images.SeedImage{In: images.CreateInput{
				Alias: fmt.Sprintf("%s-%s-%05d", oses[n%5], words[rng.IntN(8)], n), ImageName: "Image " + fmt.Sprint(n),
				Description: "A " + words[rng.IntN(8)] + " image for " + words[rng.IntN(8)] + " work",
				OS:          oses[rng.IntN(5)], Architecture: archs[rng.IntN(3)], Size: int64(rng.IntN(1 << 30)),
				Price: jsonNum(fmt.Sprintf("%d.%02d", rng.IntN(50), rng.IntN(100))), Tags: []string{words[rng.IntN(8)], words[rng.IntN(8)]}},
				RatingCount: count, RatingSum: int64(count * rng.IntN(501))})
		}
		e.clock.Advance(time.Second)
		if err := e.svc.Seed(seed); err != nil {
			b.Fatal(err)
		}
	}
	benchEnv[engine.Name] = e
	return e
}

// BenchmarkPublicList times one page of 100 of the public list over
// 10,000 images, filtered and sorted, on the run's engine; it reports the
// median and p99 of the individual list calls (ms).
func BenchmarkPublicList(b *testing.B) {
	queries := []struct {
		name string
		in   images.ListInput
	}{
		{"arch+price+rating/sort=price", images.ListInput{Architecture: "amd64", MinPrice: f(1), MaxPrice: f(40), MinRating: f(2), SortBy: "price", SortOrder: "desc", Limit: 100}},
		{"os+search/sort=rating", images.ListInput{OS: "ubuntu", Search: "gpu", SortBy: "rating", SortOrder: "desc", Limit: 100}},
		{"search/sort=alias/page=3", images.ListInput{Search: "web", SortBy: "alias", SortOrder: "asc", Limit: 100, Page: 3}},
		{"nofilter/sort=added/page=50", images.ListInput{SortBy: "added_date", SortOrder: "desc", Limit: 100, Page: 50}},
	}
	e := seededCatalog(b)
	u := catalogtest.User("bench")
	some := must[*images.PublicList](b)(e.svc.List(u, images.ListInput{Limit: 1})).Images[0].ID
	for i, q := range append(queries, queries[0]) {
		// The last shape rates an image before every list (outside the
		// timed call): the list right after a write.
		afterWrite := i == len(queries)
		name := q.name
		if afterWrite {
			name = "after-a-rating/" + name
		}
		b.Run(engine.Name+"/"+name, func(b *testing.B) {
			var times []time.Duration
			n := 0
			for b.Loop() {
				if afterWrite {
					n++
					if _, err := e.svc.Rate(catalogtest.User(fmt.Sprint("r", n)), images.RateRequest{ImageRef: images.ImageRef{ID: some}, Body: images.RateInput{Rating: ptr(float64(n % 6))}}); err != nil {
						b.Fatal(err)
					}
				}
				t0 := time.Now()
				l, err := e.svc.List(u, q.in)
				times = append(times, time.Since(t0))
				if err != nil || len(l.Images) == 0 {
					b.Fatalf("list: %v (%d images)", err, len(l.Images))
				}
			}
			slices.Sort(times)
			ms := func(p float64) float64 { return float64(times[int(p*float64(len(times)-1))]) / 1e6 }
			b.ReportMetric(ms(0.5), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
