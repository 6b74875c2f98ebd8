package cron_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/cron"
)

func newService(t *testing.T, deps contract.ServiceDeps, set *cron.Settings) *cron.Service {
	t.Helper()
	svc, err := cron.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// fileHost is a service on a crontab file holding content (none when
// content is nil), with the runner off.
func fileHost(t *testing.T, content *string, format string) (*platform.Host, string) {
	t.Helper()
	tab := filepath.Join(t.TempDir(), "spool", "crontab")
	if content != nil {
		if err := os.MkdirAll(filepath.Dir(tab), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tab, []byte(*content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	svc := newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab, Format: format})
	return platformtest.ServiceHost(t, svc), tab
}

type answer struct {
	status int
	m      map[string]any
	raw    []byte
	header http.Header
}

// call sends a request in-process; body is JSON-encoded unless a string.
func call(t *testing.T, h *platform.Host, method, path string, body any, hdr ...string) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req := platformtest.NewRequest(method, path, rd)
	if _, ok := body.(string); !ok && body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.App().Test(req, fiber.TestConfig{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	a.raw, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(a.raw, &a.m)
	return a
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func entries(t *testing.T, h *platform.Host) []map[string]any {
	t.Helper()
	a := call(t, h, "GET", "/api/v1/cron/entries", nil)
	if a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.raw)
	}
	var out []map[string]any
	for _, e := range a.m["entries"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	h, _ := fileHost(t, nil, "")
	platformtest.CheckRoutesDocumented(t, h)
}

func TestBadQueryParametersAreNamed(t *testing.T) {
	t.Parallel()
	h, _ := fileHost(t, nil, "")
	if n := platformtest.CheckQueryValidation(t, h); n == 0 {
		t.Fatal("cron declares no query parameters to check")
	}
}

func TestHealthNamesCron(t *testing.T) {
	t.Parallel()
	h, _ := fileHost(t, nil, "")
	var rec platform.Health
	status, _ := platformtest.GetJSON(t, h, "/health", &rec)
	if status != 200 || rec.Service != "cron" || rec.Status != "ok" || rec.FDs == nil || *rec.FDs <= 0 || rec.Memory == nil || rec.Memory.RSS == 0 {
		t.Fatalf("health %d %+v", status, rec)
	}
}

// A crontab with everything cron allows and some lines it does not
// understand: the header block, variables (quoted too), CRON_TZ, tabs, a
// CRLF line, a commented-out entry, an unknown line and no final newline.
const richCrontab = "# Edit this file to introduce tasks to be run by cron.\n" +
	"# m h  dom mon dow   command\n" +
	"SHELL=/bin/bash\n" +
	"MAILTO=\"ops@example.com\"\n" +
	"\n" +
	"# nightly backup\n" +
	"0 3 * * *\ttar czf /tmp/b.tgz /etc   \n" +
	"*/15  *  *  *  1-5 echo weekday\r\n" +
	"#30 4 * * 7 echo sunday\n" +
	"this line is not cron\n" +
	"CRON_TZ=Europe/Paris\n" +
	"@daily echo paris\n" +
	"  # indented note\n" +
	"@reboot echo up"

func TestListReadsEveryKindOfLine(t *testing.T) {
	t.Parallel()
	content := richCrontab
	h, _ := fileHost(t, &content, "")
	es := entries(t, h)
	if len(es) != 5 {
		t.Fatalf("want 5 entries, got %d: %v", len(es), es)
	}
	want := []struct {
		line     float64
		schedule string
		command  string
		comment  string
		enabled  bool
		tz       string
		next     int
	}{
		{7, "0 3 * * *", "tar czf /tmp/b.tgz /etc   ", "nightly backup", true, "", 5},
		{8, "*/15 * * * 1-5", "echo weekday\r", "", true, "", 5},
		{9, "30 4 * * 7", "echo sunday", "", false, "", 0},
		{12, "@daily", "echo paris", "", true, "Europe/Paris", 5},
		{14, "@reboot", "echo up", "indented note", true, "Europe/Paris", 0},
	}
	ids := map[string]bool{}
	for i, w := range want {
		e := es[i]
		if e["line"] != w.line || e["schedule"] != w.schedule || e["command"] != w.command || e["comment"] != w.comment ||
			e["enabled"] != w.enabled || e["user"] != nil || len(e["next_runs"].([]any)) != w.next ||
			e["overlap"] != "allow" || e["catchup"] != "none" {
			t.Errorf("entry %d: %v", i, e)
		}
		if w.tz != "" && e["timezone"] != w.tz {
			t.Errorf("entry %d zone %v, want %s", i, e["timezone"], w.tz)
		}
		ids[e["id"].(string)] = true
	}
	if len(ids) != 5 {
		t.Fatalf("ids are not unique: %v", ids)
	}
	// next_runs of the Paris entry are Paris midnights, in Paris time.
	paris, _ := time.LoadLocation("Europe/Paris")
	for _, v := range es[3]["next_runs"].([]any) {
		tm, err := time.Parse(time.RFC3339, v.(string))
		if err != nil || tm.In(paris).Hour() != 0 || tm.In(paris).Minute() != 0 || !strings.HasSuffix(v.(string), "+01:00") && !strings.HasSuffix(v.(string), "+02:00") {
			t.Fatalf("paris next run %v (%v)", v, err)
		}
	}
	if a := call(t, h, "GET", "/api/v1/cron/entries?enabled=false", nil); len(a.m["entries"].([]any)) != 1 {
		t.Fatalf("enabled=false: %s", a.raw)
	}
}

// Every edit through the API changes only its own lines: the rest of the
// file, odd lines included, is written back byte for byte, and the other
// entries keep their ids.
func TestEditsPreserveOtherLinesByteForByte(t *testing.T) {
	t.Parallel()
	content := richCrontab
	h, tab := fileHost(t, &content, "")
	es := entries(t, h)
	backup, weekday, sunday, paris := es[0]["id"].(string), es[1]["id"].(string), es[2]["id"].(string), es[3]["id"].(string)

	// Create: appended after a newline the last line lacked.
	a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "5  4 * * sun", "command": "echo new", "comment": "added"})
	if a.status != 201 || a.m["schedule"] != "5 4 * * sun" || a.m["comment"] != "added" || a.m["line"] != 16.0 || a.header.Get("ETag") == "" {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	created := a.m["id"].(string)
	want := richCrontab + "\n# added\n5 4 * * sun echo new\n"
	if got := readFile(t, tab); got != want {
		t.Fatalf("after create:\n%q\nwant\n%q", got, want)
	}
	if got := readFile(t, tab+".bak"); got != richCrontab {
		t.Fatalf("backup %q", got)
	}

	// Disable and enable: only that line changes; the id stays.
	a = call(t, h, "POST", "/api/v1/cron/entries/"+backup+"/disable", nil)
	if a.status != 200 || a.m["id"] != backup || a.m["enabled"] != false || a.m["comment"] != "nightly backup" {
		t.Fatalf("disable: %d %s", a.status, a.raw)
	}
	want = strings.Replace(want, "0 3 * * *\ttar", "# 0 3 * * *\ttar", 1)
	if got := readFile(t, tab); got != want {
		t.Fatalf("after disable:\n%q\nwant\n%q", got, want)
	}
	a = call(t, h, "POST", "/api/v1/cron/entries/"+sunday+"/enable", nil)
	if a.status != 200 || a.m["id"] != sunday || a.m["enabled"] != true || a.m["raw"] != "30 4 * * 7 echo sunday" {
		t.Fatalf("enable: %d %s", a.status, a.raw)
	}
	want = strings.Replace(want, "#30 4 * * 7 echo sunday", "30 4 * * 7 echo sunday", 1)
	if got := readFile(t, tab); got != want {
		t.Fatalf("after enable:\n%q\nwant\n%q", got, want)
	}

	// Update the command: a new id, the CRLF line and everything else intact.
	a = call(t, h, "PATCH", "/api/v1/cron/entries/"+paris, map[string]any{"command": "echo paris again", "comment": "in Paris"})
	if a.status != 200 || a.m["command"] != "echo paris again" || a.m["comment"] != "in Paris" || a.m["id"] == paris || a.m["timezone"] != "Europe/Paris" {
		t.Fatalf("update: %d %s", a.status, a.raw)
	}
	want = strings.Replace(want, "CRON_TZ=Europe/Paris\n@daily echo paris\n", "CRON_TZ=Europe/Paris\n# in Paris\n@daily echo paris again\n", 1)
	if got := readFile(t, tab); got != want {
		t.Fatalf("after update:\n%q\nwant\n%q", got, want)
	}

	// Delete: the entry and its comment line go, nothing else.
	a = call(t, h, "DELETE", "/api/v1/cron/entries/"+created, nil)
	if a.status != 200 || a.m["id"] != created {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	want = strings.Replace(want, "\n# added\n5 4 * * sun echo new\n", "\n", 1)
	if got := readFile(t, tab); got != want {
		t.Fatalf("after delete:\n%q\nwant\n%q", got, want)
	}
	if a := call(t, h, "GET", "/api/v1/cron/entries/"+created, nil); a.status != 404 || a.m["code"] != "NOT_FOUND" {
		t.Fatalf("deleted entry: %d %s", a.status, a.raw)
	}
	// Entries nobody touched kept their ids through all of it.
	for _, id := range []string{backup, weekday, sunday} {
		if a := call(t, h, "GET", "/api/v1/cron/entries/"+id, nil); a.status != 200 {
			t.Fatalf("id %s changed: %d %s", id, a.status, a.raw)
		}
	}
	// Changing only a policy leaves the file alone.
	before := readFile(t, tab)
	a = call(t, h, "PATCH", "/api/v1/cron/entries/"+weekday, map[string]any{"overlap": "skip", "catchup": "last"})
	if a.status != 200 || a.m["overlap"] != "skip" || a.m["catchup"] != "last" || a.m["id"] != weekday || readFile(t, tab) != before {
		t.Fatalf("policy update: %d %s", a.status, a.raw)
	}
	// The raw crontab is the file, with the same ETag the list answers.
	raw := call(t, h, "GET", "/api/v1/cron/crontab", nil)
	list := call(t, h, "GET", "/api/v1/cron/entries", nil)
	if raw.status != 200 || string(raw.raw) != before || raw.header.Get("ETag") != list.header.Get("ETag") || list.m["etag"] != raw.header.Get("ETag") {
		t.Fatalf("raw %d %q etag %s / %s", raw.status, raw.raw, raw.header.Get("ETag"), list.header.Get("ETag"))
	}
}

// System-format crontabs (/etc/crontab, /etc/cron.d) have a user field.
func TestSystemFormatHasAUserField(t *testing.T) {
	t.Parallel()
	content := "SHELL=/bin/sh\n17 *\t* * *\troot\tcd / && run-parts --report /etc/cron.hourly\n"
	h, tab := fileHost(t, &content, "system")
	es := entries(t, h)
	if len(es) != 1 || es[0]["user"] != "root" || es[0]["command"] != "cd / && run-parts --report /etc/cron.hourly" {
		t.Fatalf("entries %v", es)
	}
	if a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true"}); a.status != 400 || a.m["details"] != "user" {
		t.Fatalf("no user: %d %s", a.status, a.raw)
	}
	a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "user": "nobody"})
	if a.status != 201 || a.m["user"] != "nobody" {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	if got := readFile(t, tab); got != content+"@hourly nobody true\n" {
		t.Fatalf("file %q", got)
	}
	// A user crontab refuses a user field.
	u, _ := fileHost(t, nil, "user")
	if a := call(t, u, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "user": "root"}); a.status != 400 || a.m["details"] != "user" {
		t.Fatalf("user field in a user crontab: %d %s", a.status, a.raw)
	}
}

func TestBadInputIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	content := "# keep me\n0 1 * * * true\n"
	h, tab := fileHost(t, &content, "")
	id := entries(t, h)[0]["id"].(string)
	for _, tc := range []struct {
		method, path string
		body         any
		code, field  string
	}{
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "61 * * * *", "command": "true"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "* * * *", "command": "true"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@every 1s", "command": "true"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@sometimes", "command": "true"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "", "command": "true"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": " "}, "INVALID", "command"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "a\nb"}, "INVALID", "command"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "comment": "0 3 * * * rm -rf /"}, "INVALID", "comment"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "overlap": "sometimes"}, "INVALID", "overlap"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "catchup": "first"}, "INVALID", "catchup"},
		{"POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "when": 1}, "INVALID", "when"},
		{"PATCH", "/api/v1/cron/entries/" + id, map[string]any{"schedule": "0 25 * * *"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/validate", map[string]any{"schedule": "0 0 31 2 * *"}, "INVALID_SCHEDULE", "schedule"},
		{"POST", "/api/v1/cron/validate", map[string]any{"schedule": "@daily", "timezone": "Mars/Olympus"}, "INVALID_SCHEDULE", "timezone"},
		{"PUT", "/api/v1/cron/crontab", "# fine\n0 99 * * * nope\n", "INVALID_SCHEDULE", "crontab line 2"},
		{"PUT", "/api/v1/cron/crontab", "CRON_TZ=Nowhere/Land\n", "INVALID_SCHEDULE", "crontab line 1"},
	} {
		a := call(t, h, tc.method, tc.path, tc.body, "If-Match", "*")
		if a.status != 400 || a.m["code"] != tc.code || a.m["details"] != tc.field || !strings.Contains(a.m["message"].(string), tc.field) {
			t.Errorf("%s %s %v: %d %s, want 400 %s naming %s", tc.method, tc.path, tc.body, a.status, a.raw, tc.code, tc.field)
		}
	}
	if got := readFile(t, tab); got != content {
		t.Fatalf("a refused request changed the crontab: %q", got)
	}
	if a := call(t, h, "PATCH", "/api/v1/cron/entries/e_nope", map[string]any{"command": "x"}); a.status != 404 {
		t.Fatalf("unknown id: %d %s", a.status, a.raw)
	}
}

func TestValidateAnswersNextTimes(t *testing.T) {
	t.Parallel()
	h, _ := fileHost(t, nil, "")
	a := call(t, h, "POST", "/api/v1/cron/validate", map[string]any{"schedule": "30  2 * * mon-fri", "timezone": "Asia/Tokyo", "count": 3})
	if a.status != 200 || a.m["schedule"] != "30 2 * * mon-fri" || a.m["timezone"] != "Asia/Tokyo" || len(a.m["next_runs"].([]any)) != 3 {
		t.Fatalf("validate: %d %s", a.status, a.raw)
	}
	for _, v := range a.m["next_runs"].([]any) {
		if !strings.Contains(v.(string), "T02:30:00+09:00") {
			t.Fatalf("next run %v is not 02:30 Tokyo", v)
		}
	}
	for _, spec := range []string{"@reboot", "@midnight", "@annually", "0 0 * * 7", "0 0 * * 5-7"} {
		a := call(t, h, "POST", "/api/v1/cron/validate", map[string]any{"schedule": spec})
		if a.status != 200 || (spec == "@reboot") != (a.m["reboot"] == true) || (spec == "@reboot") != (len(a.m["next_runs"].([]any)) == 0) {
			t.Fatalf("%s: %d %s", spec, a.status, a.raw)
		}
	}
	a = call(t, h, "POST", "/api/v1/cron/validate", map[string]any{"schedule": "0 12 * * 7", "timezone": "UTC"})
	for _, v := range a.m["next_runs"].([]any) {
		tm, _ := time.Parse(time.RFC3339, v.(string))
		if tm.Weekday() != time.Sunday {
			t.Fatalf("7 is Sunday in crontab(5): %v", v)
		}
	}
}

// Two writers holding the same ETag race to replace the crontab: exactly
// one wins, the others get 412 and their text is not written.
func TestETagRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	content := "# v0\n"
	h, tab := fileHost(t, &content, "")
	etag := call(t, h, "GET", "/api/v1/cron/crontab", nil).header.Get("ETag")
	const writers = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		winner   string
	)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := "# written by writer " + string(rune('a'+i)) + "\n@daily true\n"
			a := call(t, h, "PUT", "/api/v1/cron/crontab", body, "If-Match", etag)
			mu.Lock()
			statuses[a.status]++
			if a.status == 200 {
				winner = body
			}
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if statuses[200] != 1 || statuses[412] != writers-1 {
		t.Fatalf("statuses %v", statuses)
	}
	if got := readFile(t, tab); got != winner {
		t.Fatalf("crontab %q, winner wrote %q", got, winner)
	}
	// Entry edits with a stale ETag lose the same way; without If-Match
	// the raw write is refused.
	a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true"}, "If-Match", etag)
	if a.status != 412 || a.m["code"] != "PRECONDITION_FAILED" {
		t.Fatalf("stale create: %d %s", a.status, a.raw)
	}
	if a := call(t, h, "PUT", "/api/v1/cron/crontab", "# blind\n"); a.status != 428 || a.m["details"] != "If-Match" {
		t.Fatalf("no If-Match: %d %s", a.status, a.raw)
	}
	cur := call(t, h, "GET", "/api/v1/cron/crontab", nil).header.Get("ETag")
	a = call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true"}, "If-Match", cur)
	if a.status != 201 || a.header.Get("ETag") == cur {
		t.Fatalf("fresh create: %d %s", a.status, a.raw)
	}
	if got := readFile(t, tab); got != winner+"@hourly true\n" {
		t.Fatalf("crontab %q", got)
	}
}

// A crontab that cannot be read or written answers 500 BACKEND_ERROR with
// the spec's message, and /health says so until it can again.
func TestCrontabFailuresAreBackendErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab := filepath.Join(dir, "crontab")
	if err := os.Mkdir(tab, 0o755); err != nil { // a directory: reading it fails, as root too
		t.Fatal(err)
	}
	svc := newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab})
	h := platformtest.ServiceHost(t, svc)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/v1/cron/entries"}, {"GET", "/api/v1/cron/crontab"},
	} {
		a := call(t, h, tc.method, tc.path, nil)
		if a.status != 500 || a.m["code"] != "BACKEND_ERROR" || a.m["message"] != "Internal server error" || !strings.Contains(a.m["details"].(string), "read the crontab") {
			t.Fatalf("%s %s: %d %s", tc.method, tc.path, a.status, a.raw)
		}
	}
	var rec platform.Health
	if _, raw := platformtest.GetJSON(t, h, "/health", &rec); rec.Status != "unavailable" || !strings.Contains(rec.Detail, "crontab") {
		t.Fatalf("health while unreadable: %s", raw)
	}
	if err := os.Remove(tab); err != nil {
		t.Fatal(err)
	}
	if a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@daily", "command": "true"}); a.status != 201 {
		t.Fatalf("create after repair: %d %s", a.status, a.raw)
	}
	if _, raw := platformtest.GetJSON(t, h, "/health", &rec); rec.Status != "ok" {
		t.Fatalf("health after repair: %s", raw)
	}
	// Writing where a directory cannot exist fails the same way.
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := platformtest.ServiceHost(t, newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: filepath.Join(file, "crontab")}))
	a := call(t, bad, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@daily", "command": "true"})
	if a.status != 500 || a.m["code"] != "BACKEND_ERROR" || a.m["message"] != "Internal server error" || a.m["details"] == "" {
		t.Fatalf("write failure: %d %s", a.status, a.raw)
	}
	if _, raw := platformtest.GetJSON(t, bad, "/health", &rec); rec.Status != "unavailable" {
		t.Fatalf("health after a failed write: %s", raw)
	}
}

// Concurrent edits without If-Match each apply to the current crontab:
// none is lost.
func TestConcurrentEditsLoseNothing(t *testing.T) {
	t.Parallel()
	h, tab := fileHost(t, nil, "")
	const n = 10
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "echo " + string(rune('a'+i))}); a.status != 201 {
				t.Errorf("create %d: %d %s", i, a.status, a.raw)
			}
		}(i)
	}
	wg.Wait()
	if es := entries(t, h); len(es) != n || strings.Count(readFile(t, tab), "@hourly echo ") != n {
		t.Fatalf("%d entries:\n%s", len(es), readFile(t, tab))
	}
}

// A change of schedule gives the entry a new id; its policies go with it.
func TestPoliciesFollowAnEditedEntry(t *testing.T) {
	t.Parallel()
	h, _ := fileHost(t, nil, "")
	a := call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true", "overlap": "queue", "catchup": "all"})
	if a.status != 201 || a.m["overlap"] != "queue" || a.m["catchup"] != "all" {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	old := a.m["id"].(string)
	a = call(t, h, "PATCH", "/api/v1/cron/entries/"+old, map[string]any{"schedule": "@daily"})
	if a.status != 200 || a.m["id"] == old || a.m["overlap"] != "queue" || a.m["catchup"] != "all" {
		t.Fatalf("edit: %d %s", a.status, a.raw)
	}
	if a := call(t, h, "GET", "/api/v1/cron/entries/"+old, nil); a.status != 404 {
		t.Fatalf("old id: %d", a.status)
	}
	// A new entry that happens to get the old id again starts with defaults.
	a = call(t, h, "POST", "/api/v1/cron/entries", map[string]any{"schedule": "@hourly", "command": "true"})
	if a.m["id"] != old || a.m["overlap"] != "allow" || a.m["catchup"] != "none" {
		t.Fatalf("recreated: %s", a.raw)
	}
}
