package images_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	catpage "deckhand/control/catalog"
	"deckhand/control/catalogtest"
	"deckhand/control/events"
	"deckhand/control/images"
	"deckhand/control/money"
	"deckhand/platform/fault"
)

func num(s string) json.Number { return json.Number(s) }

func fl(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func jsonNum(s string) json.Number { return num(s) }

func pngB64(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	img.SetNRGBA(0, 0, color.NRGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestCreateAndGet(t *testing.T) {
	e := newEnv(t)
	img := e.create(t, images.CreateInput{Alias: "debian/12", ImageName: "Debian 12", OS: "Debian", Architecture: "amd64",
		Release: "bookworm", Variant: "cloud", Size: 123456, Price: num("4.5"), Tags: []string{"stable"}, Description: "A base"})
	if !strings.HasPrefix(img.ID, "img_") || img.IconURL != "/api/v1/images/"+img.ID+"/icon" || img.Price != money.Number(450) ||
		img.AddedDate != "2026-03-01T12:00:01.000Z" || img.Serial != "20260301_1200" {
		t.Fatalf("created %+v", img)
	}
	got, err := e.svc.Get(catalogtest.User("u1"), images.ImageRef{ID: img.ID})
	if err != nil || got.Serial != "20260301_1200" || got.Alias != "debian/12" || got.RatingCount != 0 {
		t.Fatalf("get %+v %v", got, err)
	}
	raw, _ := json.Marshal(got)
	for _, f := range []string{`"price":4.50`, `"serial":"20260301_1200"`, `"average_rating":0`, `"prespawn":false`, `"size":123456`} {
		if !bytes.Contains(raw, []byte(f)) {
			t.Errorf("JSON %s lacks %s", raw, f)
		}
	}
	// The admin action is in the event log.
	evs, err := events.NewLog(e.db, e.clock).All()
	if err != nil || len(evs) != 1 || evs[0].EventType != "image.created" || evs[0].ResourceID != img.ID || evs[0].ActorID != "admin-1" {
		t.Fatalf("events %+v %v", evs, err)
	}
	// Alias is unique without regard to case.
	_, err = e.svc.Create(admin, images.CreateInput{Alias: "DEBIAN/12", ImageName: "x", OS: "x", Architecture: "amd64"})
	wantCode(t, err, fault.CodeConflict, "")
	// Only admins create.
	_, err = e.svc.Create(catalogtest.User("u1"), images.CreateInput{Alias: "u", ImageName: "x", OS: "x", Architecture: "amd64"})
	wantCode(t, err, fault.CodeForbidden, "")

	_, err = e.svc.Get(catalogtest.User("u1"), images.ImageRef{ID: "img_000000000000000000000000"})
	wantCode(t, err, fault.CodeNotFound, "")
	_, err = e.svc.Get(catalogtest.User("u1"), images.ImageRef{ID: "nope"})
	wantCode(t, err, fault.CodeInvalid, "id")
}

func TestCreateRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	ok := images.CreateInput{Alias: "a", ImageName: "n", OS: "linux", Architecture: "amd64"}
	cases := []struct {
		name, field string
		edit        func(*images.CreateInput)
	}{
		{"no alias", "alias", func(in *images.CreateInput) { in.Alias = "" }},
		{"long alias", "alias", func(in *images.CreateInput) { in.Alias = strings.Repeat("a", 255) }},
		{"control char alias", "alias", func(in *images.CreateInput) { in.Alias = "a\x1fb" }},
		{"padded alias", "alias", func(in *images.CreateInput) { in.Alias = " a" }},
		{"no image name", "image_name", func(in *images.CreateInput) { in.ImageName = "" }},
		{"no os", "os", func(in *images.CreateInput) { in.OS = "" }},
		{"bad architecture", "architecture", func(in *images.CreateInput) { in.Architecture = "AMD 64" }},
		{"negative size", "size", func(in *images.CreateInput) { in.Size = -1 }},
		{"negative price", "price", func(in *images.CreateInput) { in.Price = "-1" }},
		{"three decimals", "price", func(in *images.CreateInput) { in.Price = "1.005" }},
		{"exponent price", "price", func(in *images.CreateInput) { in.Price = "1e3" }},
		{"too many tags", "tags", func(in *images.CreateInput) { in.Tags = make([]string, 33) }},
		{"empty tag", "tags", func(in *images.CreateInput) { in.Tags = []string{""} }},
		{"icon not base64", "icon_png_b64", func(in *images.CreateInput) { in.IconPNGB64 = "%%%" }},
		{"icon not png", "icon_png_b64", func(in *images.CreateInput) { in.IconPNGB64 = base64.StdEncoding.EncodeToString([]byte("GIF89a")) }},
		{"icon too wide", "icon_png_b64", func(in *images.CreateInput) { in.IconPNGB64 = pngB64(t, 1025, 1) }},
		{"long description", "description", func(in *images.CreateInput) { in.Description = strings.Repeat("d", 4001) }},
	}
	for _, c := range cases {
		in := ok
		c.edit(&in)
		_, err := e.svc.Create(admin, in)
		if code(err) != fault.CodeInvalid || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want INVALID naming %s", c.name, err, c.field)
		}
	}
	// Nothing partial was written.
	l := must[*images.PublicList](t)(e.svc.List(catalogtest.User("u"), images.ListInput{}))
	if l.Pagination.Total != 0 {
		t.Fatalf("bad creates left %d images", l.Pagination.Total)
	}
}

func TestIcon(t *testing.T) {
	e := newEnv(t)
	plain := e.create(t, images.CreateInput{Alias: "plain", ImageName: "n", OS: "linux", Architecture: "amd64"})
	up := pngB64(t, 16, 16)
	custom := e.create(t, images.CreateInput{Alias: "custom", ImageName: "n", OS: "linux", Architecture: "amd64", IconPNGB64: up})
	u := catalogtest.User("u")
	gen := must[[]byte](t)(e.svc.Icon(u, plain.ID))
	cfg, err := png.DecodeConfig(bytes.NewReader(gen))
	if err != nil || cfg.Width != 64 || cfg.Height != 64 {
		t.Fatalf("generated icon: %v %+v", err, cfg)
	}
	if again := must[[]byte](t)(e.svc.Icon(u, plain.ID)); !bytes.Equal(gen, again) {
		t.Fatal("generated icon is not deterministic")
	}
	if bytes.Equal(gen, images.DefaultIcon(custom.ID)) {
		t.Fatal("two ids drew the same icon")
	}
	want, _ := base64.StdEncoding.DecodeString(up)
	if got := must[[]byte](t)(e.svc.Icon(u, custom.ID)); !bytes.Equal(got, want) {
		t.Fatal("uploaded icon not served as uploaded")
	}
	_, err = e.svc.Icon(u, "img_ffffffffffffffffffffffff")
	wantCode(t, err, fault.CodeNotFound, "")
}

// catalog seeds a small catalog with every filter dimension varied.
func catalog(t *testing.T, e *env) map[string]*images.Image {
	out := map[string]*images.Image{}
	for _, in := range []images.CreateInput{
		{Alias: "alpine", ImageName: "Alpine Linux", OS: "Alpine", Architecture: "amd64", Price: "0", Tags: []string{"tiny"}},
		{Alias: "debian", ImageName: "Debian", OS: "Debian", Architecture: "amd64", Price: "2.50", Description: "Stable base"},
		{Alias: "debian-arm", ImageName: "Debian", OS: "Debian", Architecture: "arm64", Price: "3"},
		{Alias: "ubuntu", ImageName: "Ubuntu", OS: "Ubuntu", Architecture: "amd64", Price: "10", Tags: []string{"LTS", "desktop"}},
		{Alias: "ubuntu-pi", ImageName: "Ubuntu", OS: "Ubuntu", Architecture: "armhf", Price: "0.99"},
		{Alias: "fedora", ImageName: "Fedora", OS: "Fedora", Architecture: "amd64", Price: "0", Description: "Has a desktop"},
	} {
		out[in.Alias] = e.create(t, in)
	}
	rate := func(alias, user, r string) {
		n := fl(r)
		if _, err := e.svc.Rate(catalogtest.User(user), images.RateRequest{ImageRef: images.ImageRef{ID: out[alias].ID}, Body: images.RateInput{Rating: &n}}); err != nil {
			t.Fatal(err)
		}
	}
	rate("alpine", "a", "5")
	rate("alpine", "b", "4") // 4.5
	rate("debian", "a", "3")
	rate("ubuntu", "a", "1")
	rate("ubuntu", "b", "2") // 1.5
	rate("fedora", "a", "4.25")
	return out
}

func aliases(l *images.PublicList) string {
	var s []string
	for _, i := range l.Images {
		s = append(s, i.Alias)
	}
	return strings.Join(s, ",")
}

func f(v float64) *float64 { return &v }

func TestListFiltersSortAndPages(t *testing.T) {
	e := newEnv(t)
	catalog(t, e)
	u := catalogtest.User("u")
	cases := []struct {
		name  string
		in    images.ListInput
		want  string
		total int
	}{
		{"default: newest first", images.ListInput{}, "fedora,ubuntu-pi,ubuntu,debian-arm,debian,alpine", 6},
		{"added asc", images.ListInput{SortBy: "added_date", SortOrder: "asc"}, "alpine,debian,debian-arm,ubuntu,ubuntu-pi,fedora", 6},
		{"alias asc", images.ListInput{SortBy: "alias", SortOrder: "asc"}, "alpine,debian,debian-arm,fedora,ubuntu,ubuntu-pi", 6},
		{"price desc", images.ListInput{SortBy: "price", SortOrder: "desc", OS: "ubuntu"}, "ubuntu,ubuntu-pi", 2},
		{"rating desc", images.ListInput{SortBy: "rating", SortOrder: "desc", MinRating: f(1)}, "alpine,fedora,debian,ubuntu", 4},
		{"os case-insensitive", images.ListInput{OS: "DEBIAN", SortBy: "alias", SortOrder: "asc"}, "debian,debian-arm", 2},
		{"architecture", images.ListInput{Architecture: "amd64", SortBy: "alias", SortOrder: "asc"}, "alpine,debian,fedora,ubuntu", 4},
		{"free only", images.ListInput{MaxPrice: f(0), SortBy: "alias", SortOrder: "asc"}, "alpine,fedora", 2},
		{"price range", images.ListInput{MinPrice: f(0.99), MaxPrice: f(3), SortBy: "price", SortOrder: "asc"}, "ubuntu-pi,debian,debian-arm", 3},
		{"price bound between cents", images.ListInput{MinPrice: f(0.985), MaxPrice: f(2.999), SortBy: "price", SortOrder: "asc"}, "ubuntu-pi,debian", 2},
		{"rating range", images.ListInput{MinRating: f(1.5), MaxRating: f(4.25), SortBy: "rating", SortOrder: "asc"}, "ubuntu,debian,fedora", 3},
		{"search tag", images.ListInput{Search: "lts"}, "ubuntu", 1},
		{"search description and tag", images.ListInput{Search: "DESKTOP", SortBy: "alias", SortOrder: "asc"}, "fedora,ubuntu", 2},
		{"search name", images.ListInput{Search: "alpine linux"}, "alpine", 1},
		{"combined", images.ListInput{Architecture: "amd64", MaxPrice: f(5), Search: "e", SortBy: "alias", SortOrder: "desc"}, "fedora,debian,alpine", 3},
		{"no match", images.ListInput{OS: "plan9"}, "", 0},
		{"page 2 of 2", images.ListInput{SortBy: "alias", SortOrder: "asc", Limit: 4, Page: 2}, "ubuntu,ubuntu-pi", 6},
		{"page past the end", images.ListInput{Limit: 4, Page: 3}, "", 6},
		{"filtered page 2", images.ListInput{Architecture: "amd64", SortBy: "alias", SortOrder: "asc", Limit: 3, Page: 2}, "ubuntu", 4},
	}
	for _, c := range cases {
		l, err := e.svc.List(u, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		limit := c.in.Limit
		if limit == 0 {
			limit = 20
		}
		if got := aliases(l); got != c.want || l.Pagination.Total != c.total || l.Pagination.Limit != limit ||
			l.Pagination.TotalPages != (c.total+limit-1)/limit {
			t.Errorf("%s: got %q %+v, want %q total %d", c.name, got, l.Pagination, c.want, c.total)
		}
	}
}

func TestListRejectsBadQuery(t *testing.T) {
	e := newEnv(t)
	u := catalogtest.User("u")
	cases := []struct {
		field string
		in    images.ListInput
	}{
		{"page", images.ListInput{Page: -1}},
		{"limit", images.ListInput{Limit: 101}},
		{"limit", images.ListInput{Limit: -5}},
		{"sort_by", images.ListInput{SortBy: "size"}},
		{"sort_order", images.ListInput{SortOrder: "up"}},
		{"min_price", images.ListInput{MinPrice: f(5), MaxPrice: f(1)}},
		{"min_price", images.ListInput{MinPrice: f(-1)}},
		{"min_rating", images.ListInput{MinRating: f(4), MaxRating: f(2)}},
		{"max_rating", images.ListInput{MaxRating: f(6)}},
		{"search", images.ListInput{Search: strings.Repeat("s", 201)}},
	}
	for _, c := range cases {
		_, err := e.svc.List(u, c.in)
		wantCode(t, err, fault.CodeInvalid, c.field)
	}
}

func TestImportPurchaseAndLibrary(t *testing.T) {
	e := newEnv(t)
	cat := catalog(t, e)
	u := catalogtest.User("buyer")
	// Import: free only, once.
	imp := func(id string) error {
		_, err := e.svc.Import(u, images.ImageRef{ID: id})
		return err
	}
	if err := imp(cat["alpine"].ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, imp(cat["alpine"].ID), fault.CodeBadRequest, "")
	wantCode(t, imp(cat["debian"].ID), fault.CodeBadRequest, "")
	wantCode(t, imp("img_aaaaaaaaaaaaaaaaaaaaaaaa"), fault.CodeNotFound, "")
	wantCode(t, imp("img_XYZ"), fault.CodeInvalid, "id")

	// Purchase: insufficient balance is 400 and leaves nothing behind.
	catalogtest.Credit(t, e.db, e.wallet, "buyer", 900)
	e.clock.Advance(1e9)
	_, err := e.svc.Purchase(u, images.ImageRef{ID: cat["ubuntu"].ID})
	wantCode(t, err, fault.CodeBadRequest, "")
	if bal, ledger := catalogtest.Balance(t, e.wallet, "buyer"); bal != 900 || len(ledger) != 0 {
		t.Fatalf("failed purchase moved money: %s %v", bal, ledger)
	}
	res, err := e.svc.Purchase(u, images.ImageRef{ID: cat["debian"].ID})
	if err != nil || res.PricePaid != 250 || res.RemainingBalance != 650 {
		t.Fatalf("purchase %+v %v", res, err)
	}
	raw, _ := json.Marshal(res)
	if string(raw) != `{"price_paid":2.50,"remaining_balance":6.50}` {
		t.Fatalf("purchase JSON %s", raw)
	}
	_, err = e.svc.Purchase(u, images.ImageRef{ID: cat["debian"].ID})
	wantCode(t, err, fault.CodeBadRequest, "")
	_, err = e.svc.Purchase(u, images.ImageRef{ID: cat["fedora"].ID})
	wantCode(t, err, fault.CodeBadRequest, "")
	_, err = e.svc.Purchase(u, images.ImageRef{ID: "img_aaaaaaaaaaaaaaaaaaaaaaaa"})
	wantCode(t, err, fault.CodeNotFound, "")
	bal, ledger := catalogtest.Balance(t, e.wallet, "buyer")
	if bal != 650 || len(ledger) != 1 || ledger[0].TransactionType != "image_purchase" || ledger[0].Reference != cat["debian"].ID || ledger[0].Amount != 250 {
		t.Fatalf("after purchase: %s %+v", bal, ledger)
	}

	// Library: newest first, with the caller's rating.
	n := fl("2")
	must[*images.RateResult](t)(e.svc.Rate(u, images.RateRequest{ImageRef: images.ImageRef{ID: cat["debian"].ID}, Body: images.RateInput{Rating: &n}}))
	lib := must[*images.UserList](t)(e.svc.Library(u, images.LibraryInput{}))
	if len(lib.Images) != 2 || lib.Pagination.Total != 2 {
		t.Fatalf("library %+v", lib)
	}
	d, a := lib.Images[0], lib.Images[1]
	if d.Alias != "debian" || !d.HasRated || d.UserRating != 2 || d.Acquired != "purchase" || d.PricePaid != 250 || d.AverageRating != 2.5 || d.RatingCount != 2 {
		t.Fatalf("library debian %+v", d)
	}
	if a.Alias != "alpine" || a.HasRated || a.UserRating != 0 || a.Acquired != "import" {
		t.Fatalf("library alpine %+v", a)
	}
	raw, _ = json.Marshal(d)
	if bytes.Contains(raw, []byte("added_date")) || !bytes.Contains(raw, []byte(`"has_rated":true`)) {
		t.Fatalf("library JSON %s", raw)
	}
	asc := must[*images.UserList](t)(e.svc.Library(u, images.LibraryInput{Page: catpage.Page{SortOrder: "asc", Limit: 1, Page: 2}}))
	if len(asc.Images) != 1 || asc.Images[0].Alias != "debian" || asc.Pagination.TotalPages != 2 {
		t.Fatalf("library asc page 2 %+v", asc)
	}
	if other := must[*images.UserList](t)(e.svc.Library(catalogtest.User("other"), images.LibraryInput{})); other.Pagination.Total != 0 {
		t.Fatalf("another user's library %+v", other)
	}
	_, err = e.svc.Library(u, images.LibraryInput{Page: catpage.Page{Page: -1}})
	wantCode(t, err, fault.CodeInvalid, "page")
}

func TestRate(t *testing.T) {
	e := newEnv(t)
	img := e.create(t, images.CreateInput{Alias: "x", ImageName: "x", OS: "linux", Architecture: "amd64"})
	rate := func(user, r string) (*images.RateResult, error) {
		n := fl(r)
		return e.svc.Rate(catalogtest.User(user), images.RateRequest{ImageRef: images.ImageRef{ID: img.ID}, Body: images.RateInput{Rating: &n}})
	}
	for _, bad := range []string{"6", "-1", "5.01", "4.567", "NaN"} {
		_, err := rate("a", bad)
		wantCode(t, err, fault.CodeInvalid, "rating")
	}
	_, err := e.svc.Rate(catalogtest.User("a"), images.RateRequest{ImageRef: images.ImageRef{ID: img.ID}, Body: images.RateInput{}})
	wantCode(t, err, fault.CodeInvalid, "rating")
	steps := []struct {
		user, rating string
		avg          float64
		count        int
	}{{"a", "5", 5, 1}, {"b", "0", 2.5, 2}, {"a", "1", 0.5, 2}, {"c", "4.5", 1.83, 3}, {"c", "4.5", 1.83, 3}}
	for _, s := range steps {
		res, err := rate(s.user, s.rating)
		if err != nil || res.AverageRating != s.avg || res.RatingCount != s.count || fmt.Sprint(res.NewRating) != s.rating {
			t.Fatalf("%s rates %s: %+v %v, want avg %v count %d", s.user, s.rating, res, err, s.avg, s.count)
		}
	}
	got := must[*images.Image](t)(e.svc.Get(catalogtest.User("a"), images.ImageRef{ID: img.ID}))
	if got.AverageRating != 1.83 || got.RatingCount != 3 {
		t.Fatalf("image after ratings %+v", got)
	}
	_, err = e.svc.Rate(catalogtest.User("a"), images.RateRequest{ImageRef: images.ImageRef{ID: "img_aaaaaaaaaaaaaaaaaaaaaaaa"}, Body: images.RateInput{Rating: ptr(fl("3"))}})
	wantCode(t, err, fault.CodeNotFound, "")
}

func ptr[T any](v T) *T { return &v }

// The same user buying the same image from many goroutines pays once.
func TestConcurrentPurchasesChargeOnce(t *testing.T) {
	e := newEnv(t)
	img := e.create(t, images.CreateInput{Alias: "x", ImageName: "x", OS: "linux", Architecture: "amd64", Price: "1"})
	catalogtest.Credit(t, e.db, e.wallet, "u", 10000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, owned := 0, 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.Purchase(catalogtest.User("u"), images.ImageRef{ID: img.ID})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case code(err) == fault.CodeBadRequest && strings.Contains(err.Error(), "already owned"):
				owned++
			default:
				t.Errorf("purchase: %v", err)
			}
		}()
	}
	wg.Wait()
	bal, ledger := catalogtest.Balance(t, e.wallet, "u")
	if ok != 1 || owned != 19 || bal != 9900 || len(ledger) != 1 {
		t.Fatalf("%d succeeded, %d already owned, balance %s, %d charges", ok, owned, bal, len(ledger))
	}
}

// Concurrent ratings of one image by different users all count.
func TestConcurrentRatingsAllCount(t *testing.T) {
	e := newEnv(t)
	img := e.create(t, images.CreateInput{Alias: "x", ImageName: "x", OS: "linux", Architecture: "amd64"})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.svc.Rate(catalogtest.User(fmt.Sprint("u", i)), images.RateRequest{ImageRef: images.ImageRef{ID: img.ID}, Body: images.RateInput{Rating: ptr(fl(fmt.Sprint(i % 6)))}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := must[*images.Image](t)(e.svc.Get(catalogtest.User("a"), images.ImageRef{ID: img.ID}))
	// ratings 0..5,0..5,0..3 → sum 36 over 16 = 2.25
	if got.RatingCount != 16 || got.AverageRating != 2.25 {
		t.Fatalf("after 16 concurrent ratings: %+v", got)
	}
	l := must[*images.PublicList](t)(e.svc.List(catalogtest.User("a"), images.ListInput{MinRating: f(2.25), MaxRating: f(2.25)}))
	if l.Pagination.Total != 1 {
		t.Fatalf("rating index out of step: %+v", l.Pagination)
	}
}

// After random creates and ratings, every indexed list equals the same
// query answered by brute force over the records.
func TestIndexMatchesBruteForce(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(1, 2))
	oses := []string{"debian", "ubuntu", "alpine"}
	archs := []string{"amd64", "arm64"}
	words := []string{"web", "db", "gpu", "mini"}
	var ins []images.SeedImage
	for i := range 120 {
		ins = append(ins, images.SeedImage{In: images.CreateInput{Alias: fmt.Sprintf("img-%03d-%s", rng.IntN(1000), fmt.Sprint(i)), ImageName: "n",
			OS: oses[rng.IntN(3)], Architecture: archs[rng.IntN(2)], Price: num(fmt.Sprintf("%d.%02d", rng.IntN(5), rng.IntN(100))),
			Tags: []string{words[rng.IntN(4)]}}})
	}
	if err := e.svc.Seed(ins); err != nil {
		t.Fatal(err)
	}
	all := must[*images.PublicList](t)(e.svc.List(catalogtest.User("x"), images.ListInput{Limit: 100}))
	rest := must[*images.PublicList](t)(e.svc.List(catalogtest.User("x"), images.ListInput{Limit: 100, Page: 2}))
	recs := append(all.Images, rest.Images...)
	if len(recs) != 120 {
		t.Fatalf("%d images listed", len(recs))
	}
	for i := range 80 {
		id := recs[rng.IntN(len(recs))].ID
		must[*images.RateResult](t)(e.svc.Rate(catalogtest.User(fmt.Sprint("r", i%7)), images.RateRequest{ImageRef: images.ImageRef{ID: id}, Body: images.RateInput{Rating: ptr(fl(fmt.Sprint(rng.IntN(6))))}}))
	}
	byID := map[string]images.Image{}
	for _, r := range recs {
		byID[r.ID] = *must[*images.Image](t)(e.svc.Get(catalogtest.User("x"), images.ImageRef{ID: r.ID}))
	}
	for q := range 90 {
		// Writes between lists: the indexes follow each.
		switch rng.IntN(4) {
		case 0:
			id := recs[rng.IntN(len(recs))].ID
			must[*images.RateResult](t)(e.svc.Rate(catalogtest.User(fmt.Sprint("r", rng.IntN(9))), images.RateRequest{ImageRef: images.ImageRef{ID: id}, Body: images.RateInput{Rating: ptr(float64(rng.IntN(6)))}}))
			byID[id] = *must[*images.Image](t)(e.svc.Get(catalogtest.User("x"), images.ImageRef{ID: id}))
		case 1:
			img := e.create(t, images.CreateInput{Alias: fmt.Sprint("late-", q), ImageName: "n", OS: oses[rng.IntN(3)], Architecture: "amd64",
				Price: num(fmt.Sprint(rng.IntN(5))), Tags: []string{words[rng.IntN(4)]}})
			img.Serial = ""
			byID[img.ID] = *img
			recs = append(recs, *img)
		}
		for id, r := range byID {
			r.Serial = ""
			byID[id] = r
		}
		in := images.ListInput{SortBy: []string{"alias", "added_date", "price", "rating"}[q%4], SortOrder: []string{"asc", "desc"}[q/4%2],
			Limit: 1 + rng.IntN(30), Page: 1 + rng.IntN(3)}
		if rng.IntN(2) == 0 {
			in.OS = oses[rng.IntN(3)]
		}
		if rng.IntN(2) == 0 {
			in.MinPrice, in.MaxPrice = f(float64(rng.IntN(2))), f(float64(2+rng.IntN(3)))
		}
		if rng.IntN(2) == 0 {
			in.MinRating = f(float64(rng.IntN(4)))
		}
		if rng.IntN(3) == 0 {
			in.Search = words[rng.IntN(4)]
		}
		var want []images.Image
		for _, r := range byID {
			p := float64(r.Price) / 100
			if (in.OS == "" || r.OS == in.OS) && (in.MinPrice == nil || (p >= *in.MinPrice && p <= *in.MaxPrice)) &&
				(in.MinRating == nil || r.AverageRating >= *in.MinRating) && (in.Search == "" || slices.Contains(r.Tags, in.Search) || strings.Contains(r.Alias, in.Search)) {
				want = append(want, r)
			}
		}
		key := func(r images.Image) string {
			switch in.SortBy {
			case "alias":
				return r.Alias
			case "added_date":
				return r.AddedDate + r.ID
			case "price":
				return fmt.Sprintf("%019d", int64(r.Price)) + r.ID
			}
			return fmt.Sprintf("%03.0f", r.AverageRating*100) + r.ID
		}
		sort.Slice(want, func(i, j int) bool { return (key(want[i]) < key(want[j])) == (in.SortOrder == "asc") })
		got := must[*images.PublicList](t)(e.svc.List(catalogtest.User("x"), in))
		lo := min((in.Page-1)*in.Limit, len(want))
		hi := min(lo+in.Limit, len(want))
		var gotIDs, wantIDs []string
		for _, r := range got.Images {
			gotIDs = append(gotIDs, r.ID)
		}
		for _, r := range want[lo:hi] {
			wantIDs = append(wantIDs, r.ID)
		}
		if got.Pagination.Total != len(want) || !slices.Equal(gotIDs, wantIDs) {
			t.Fatalf("query %+v: total %d want %d\n got %v\nwant %v", in, got.Pagination.Total, len(want), gotIDs, wantIDs)
		}
	}
}

// A second service on the same storage (another replica) sees every
// write at once: its lists read the same table in each read
// transaction.
func TestReplicaListsAreExact(t *testing.T) {
	e := newEnv(t)
	denv, _ := catalogtest.Env(t, "images", e.another(), e.clock)
	other, err := images.New(denv)
	if err != nil {
		t.Fatal(err)
	}
	u := catalogtest.User("u")
	if l := must[*images.PublicList](t)(other.List(u, images.ListInput{})); l.Pagination.Total != 0 {
		t.Fatalf("empty catalog lists %+v", l.Pagination)
	}
	a := e.create(t, images.CreateInput{Alias: "a", ImageName: "a", OS: "linux", Architecture: "amd64"})
	b := e.create(t, images.CreateInput{Alias: "b", ImageName: "b", OS: "linux", Architecture: "amd64"})
	l := must[*images.PublicList](t)(other.List(u, images.ListInput{}))
	if l.Pagination.Total != 2 || l.Images[0].ID != b.ID {
		t.Fatalf("replica after creates: %s", aliases(l))
	}
	must[*images.RateResult](t)(e.svc.Rate(u, images.RateRequest{ImageRef: images.ImageRef{ID: a.ID}, Body: images.RateInput{Rating: ptr(4.0)}}))
	l = must[*images.PublicList](t)(other.List(u, images.ListInput{SortBy: "rating"}))
	if l.Images[0].ID != a.ID || l.Images[0].AverageRating != 4 || l.Images[0].RatingCount != 1 {
		t.Fatalf("replica after a rating: %+v", l.Images[0])
	}
	l = must[*images.PublicList](t)(other.List(u, images.ListInput{MinRating: f(3)}))
	if aliases(l) != "a" {
		t.Fatalf("replica rating filter: %q", aliases(l))
	}
}
