package consolee2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"deckhand/control/console"
	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
)

// runConsole runs one mode of scripts/e2e/console-browser.mjs against a
// console and answers its output; it fails the test unless the script
// says the mode passed.
func runConsole(t *testing.T, mode string, args map[string]any) string {
	t.Helper()
	node, chromium, dir := platformtest.BrowserTools(t, "../../scripts/e2e")
	if !console.Built() {
		t.Skip("browser test skipped: the console is not built (make build runs Vite)")
	}
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "console-browser.mjs"), mode, string(raw))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "console "+mode+" passed") {
		t.Fatalf("console %s: %v\n%s", mode, err, out)
	}
	return string(out)
}

// artifacts is where a test keeps files for people to look at (the
// screenshots): $DECKHAND_ARTIFACTS, else .cache/artifacts in the checkout.
func artifacts(t *testing.T, name string) string {
	base := os.Getenv("DECKHAND_ARTIFACTS")
	if base == "" {
		base, _ = filepath.Abs("../../.cache/artifacts")
	}
	dir := filepath.Join(base, "console", controltest.Engine(), name)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func line(t *testing.T, out, prefix string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + ` (.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the browser script printed no %q line:\n%s", prefix, out)
	}
	return strings.TrimSpace(m[1])
}

// TestConsoleStory is a new user's way through the console in Chromium:
// sign up, the mailed link, login, 2FA with oathtool, logout and login
// with a code, an auth token, a double-clicked transfer, an invoice PDF,
// and recovery (the reset mail's link, then a backup code). The server's
// side is then checked over the API with that token.
func TestConsoleStory(t *testing.T) {
	s := controltest.Start(t, "--transfer-fee-bps", "250")
	email := "newcomer@example.com"
	out := runConsole(t, "story", map[string]any{"url": s.URL, "email": email, "mailDir": filepath.Join(s.Data, "mail"),
		"adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass, "outDir": artifacts(t, "story")})
	token := line(t, out, "TOKEN")
	line(t, out, "RECOVERED")

	// The token made in the console works with curl.
	curl, err := exec.Command("curl", "-sS", "-H", "Authorization: Bearer "+token, s.URL+"/api/v1/users/auth/me").CombinedOutput()
	if err != nil || !strings.Contains(string(curl), `"email":"`+email+`"`) {
		t.Fatalf("curl with the console's token: %v %s", err, curl)
	}
	me := s.MustDo(200, "GET", "/api/v1/users/auth/me", nil, token)
	if d := controltest.Data(me); d["two_factor_enabled"] != true {
		t.Fatalf("2FA is not on after the console's setup: %s", me.Raw)
	}
	// The racing double click moved money once.
	txns := controltest.Data(s.MustDo(200, "GET", "/api/v1/wallet/transactions?limit=100", nil, token))["transactions"].([]any)
	transfers := 0
	for _, x := range txns {
		if x.(map[string]any)["transaction_type"] == "transfer_to_ai" {
			transfers++
		}
	}
	bal := controltest.Data(s.MustDo(200, "GET", "/api/v1/wallet/balances", nil, token))
	if transfers != 1 || bal["general_balance"] != "90.00" || bal["ai_limit"] != "9.75" {
		t.Fatalf("after the double click: %d transfers, balances %v", transfers, bal)
	}
	if line(t, out, "BALANCE") != "90.00 USD" {
		t.Fatalf("the console shows %q", line(t, out, "BALANCE"))
	}
	// The replayed key answers the first receipt: the console sent it.
	key := line(t, out, "KEY")
	r := s.MustDo(200, "POST", "/api/v1/wallet/transfer-to-ai", map[string]any{"amount": "10", "idempotency_key": key}, token)
	if controltest.Data(r)["replayed"] != true {
		t.Fatalf("the console's idempotency key is not the transfer's: %s", r.Raw)
	}
}

// setup makes a project with a container (admin) and a plain user.
func setup(t *testing.T, s *controltest.Server) (admin, project, container string) {
	t.Helper()
	admin = s.Admin()
	project = controltest.Data(s.MustDo(201, "POST", "/api/v1/projects", map[string]any{"name": "console demo"}, admin))["id"].(string)
	container = controltest.Data(s.MustDo(201, "POST", "/api/v1/admin/containers",
		map[string]any{"name": "web-1", "project_id": project}, admin))["id"].(string)
	return admin, project, container
}

// TestConsolePermissionsConflict edits one container's permissions in two
// tabs: the second save answers 412, the console shows the newer document
// and saves the merge of both edits.
func TestConsolePermissionsConflict(t *testing.T) {
	s := controltest.Start(t)
	admin, _, container := setup(t, s)
	runConsole(t, "conflict", map[string]any{"url": s.URL, "container": container,
		"adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass})
	doc := controltest.Data(s.MustDo(200, "GET", "/api/v1/containers/"+container+"/proxy/permissions", nil, admin))
	groups, _ := doc["groups"].(map[string]any)
	if doc["file_version"] != float64(2) || groups["office"] == nil || groups["vpn"] == nil || doc["default"] != "allow" {
		t.Fatalf("the merged document: %v", doc)
	}
}

// TestConsolePages visits every page as a plain user and as the admin at
// 360 and 1440 px: axe-core finds no serious or critical violation, no
// page breaks the CSP, scrolls sideways or shifts while it loads;
// screenshots are kept. It runs on the embedded store only: the pages
// read the same answers from both engines, and the flows whose answers
// depend on the engine (TestConsoleStory, the conflict) run on both.
func TestConsolePages(t *testing.T) {
	if controltest.OnPostgres() {
		t.Skip("the page tour runs on the embedded store (see the comment)")
	}
	s := controltest.Start(t)
	admin, project, container := setup(t, s)
	userEmail := "plain@example.com"
	uid, _ := s.User(admin, userEmail)
	// Something in every list: a notification, an image, money.
	s.MustDo(201, "POST", "/api/v1/admin/notifications", map[string]any{"title": "Maintenance", "body": "Tonight at 22:00"}, admin)
	s.MustDo(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": uid, "amount": "20", "reason": "welcome"}, admin)
	s.MustDo(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "debian-12", "image_name": "debian/12", "os": "debian",
		"architecture": "amd64", "description": "Debian 12 desktop"}, admin)
	s.MustDo(201, "POST", "/api/v1/projects/"+project+"/permissions", map[string]any{"user_id": uid, "role": "viewer"}, admin)
	out := runConsole(t, "tour", map[string]any{"url": s.URL, "project": project, "container": container,
		"adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass,
		"userEmail": userEmail, "userPassword": controltest.GoodPW, "outDir": artifacts(t, "pages")})
	t.Log(line(t, out, "SCREENSHOTS"))
}

// TestConsoleRoles: a plain user, a viewer of the project, is shown no
// action the API would refuse it (the events' Delete, the project's
// settings, grants and role changes) and a footer naming the signing key;
// the admin is shown them and grants access by email, which the server
// then holds.
func TestConsoleRoles(t *testing.T) {
	s := controltest.Start(t)
	admin, project, _ := setup(t, s)
	userEmail := "viewer@example.com"
	uid, _ := s.User(admin, userEmail)
	granted, _ := s.User(admin, "granted@example.com")
	s.MustDo(201, "POST", "/api/v1/projects/"+project+"/permissions", map[string]any{"user_id": uid, "role": "viewer"}, admin)
	runConsole(t, "roles", map[string]any{"url": s.URL, "project": project,
		"adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass,
		"userEmail": userEmail, "userPassword": controltest.GoodPW, "grantEmail": "granted@example.com"})
	perms := s.MustDo(200, "GET", "/api/v1/projects/"+project+"/permissions", nil, admin)
	if !strings.Contains(string(perms.Raw), `"user_id":"`+granted+`"`) {
		t.Fatalf("the grant by email is not on the server: %s", perms.Raw)
	}
}

// TestConsoleCrossOrigin: a page on another origin of the same site (the
// session cookie, SameSite=Strict, still goes along) cannot make a token,
// read the session's CSRF token, log the user out or frame the console.
func TestConsoleCrossOrigin(t *testing.T) {
	s := controltest.Start(t)
	admin := s.Admin()
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><title>elsewhere</title><p>another origin</p>")
	}))
	defer evil.Close()
	out := runConsole(t, "cross", map[string]any{"url": s.URL, "evil": evil.URL,
		"adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass})
	if toks := s.MustDo(200, "GET", "/api/v1/auth/tokens", nil, admin); strings.Contains(string(toks.Raw), "evil") {
		t.Fatalf("another origin made a token:\n%s\n%s", toks.Raw, out)
	}
}

// TestConsoleRefusesAlteredAnswers puts a proxy that alters the login
// answer between Chromium and the server: the console checks the
// signature with WebCrypto Ed25519 and refuses it.
func TestConsoleRefusesAlteredAnswers(t *testing.T) {
	s := controltest.Start(t)
	target, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != console.SessionPath || r.Request.Method != http.MethodPost {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		body = []byte(strings.Replace(string(body), `"role":"admin"`, `"role":"owner"`, 1))
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", fmt.Sprint(len(body)))
		return nil
	}
	proxy := httptest.NewServer(rp)
	defer proxy.Close()
	runConsole(t, "tamper", map[string]any{"url": proxy.URL, "adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass})
}

// TestConsoleSettings is a plain user's settings in Chromium: the
// container's network (the agent's report and egress decisions, stop,
// start, an allow list), payment methods, a rented server, 2FA with the
// token gate, regenerated backup codes and 2FA turned off with oathtool
// codes; then the admin adds an image with an icon. The server's side
// is checked over the API afterwards.
func TestConsoleSettings(t *testing.T) {
	s := controltest.Start(t)
	admin, project, container := setup(t, s)
	email := "settings@example.com"
	uid, token := s.User(admin, email)
	s.MustDo(201, "POST", "/api/v1/projects/"+project+"/permissions", map[string]any{"user_id": uid, "role": "manager"}, admin)
	s.MustDo(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": uid, "amount": "50", "reason": "rentals"}, admin)
	s.MustDo(201, "POST", "/api/v1/admin/servers", map[string]any{"name": "gpu-1", "region": "eu-west", "price": "12.50",
		"specs": map[string]any{"cpu": 8, "memory_gb": 32}}, admin)
	s.MustDo(201, "POST", "/api/v1/admin/servers", map[string]any{"name": "tiny-1", "region": "eu-west"}, admin)

	// A running network whose agent has reported decisions.
	net := "/api/v1/containers/" + container + "/network"
	s.MustDo(200, "PUT", net, map[string]any{"type": "block"}, admin)
	s.MustDo(200, "POST", net+"/start", nil, admin)
	agentTok := controltest.Data(s.MustDo(201, "POST", "/api/v1/containers/"+container+"/agent-tokens", nil, admin))["token"].(string)
	version := controltest.Data(s.MustDo(200, "GET", net+"/effective", nil, agentTok))["version"]
	s.MustDo(200, "POST", net+"/remote-status", map[string]any{"is_running": true, "last_check": time.Now().UTC().Format(time.RFC3339),
		"enforceable": true, "version": version, "allowed": 3, "denied": 1, "dropped": 2,
		"recent": []map[string]any{{"time": time.Now().UTC().Format(time.RFC3339), "outcome": "denied", "protocol": "tcp",
			"destination": "192.0.2.1:443", "name": "evil.example", "reason": "name evil.example not on the allow list"}}}, agentTok)

	icon := filepath.Join(t.TempDir(), "icon.png")
	pngBytes := writeIcon(t, icon)
	runConsole(t, "settings", map[string]any{"url": s.URL, "container": container, "userEmail": email, "userPassword": controltest.GoodPW,
		"adminEmail": controltest.AdminEmail, "adminPassword": controltest.AdminPass,
		"serverName": "gpu-1", "serverPrice": "12.50", "imageAlias": "iconic-1", "icon": icon, "outDir": artifacts(t, "settings")})

	n := controltest.Data(s.MustDo(200, "GET", net, nil, token))
	if n["status"] != "running" || fmt.Sprint(n["allow"]) != "[example.com *.example.org]" {
		t.Fatalf("the network after the console: %v", n)
	}
	methods := s.MustDo(200, "GET", "/api/v1/wallet/payment-methods", nil, token).Body["data"].([]any)
	state := map[string]string{}
	for _, m := range methods {
		m := m.(map[string]any)
		state[m["name"].(string)] = fmt.Sprint(m["status"], " ", m["is_default"])
	}
	if len(state) != 2 || state["Bank EU"] != "active true" || state["Visa 4242"] != "inactive false" {
		t.Fatalf("payment methods after the console: %v", state)
	}
	mine := s.MustDo(200, "GET", "/api/v1/servers", nil, token).Body["data"].([]any)
	if len(mine) != 1 || mine[0].(map[string]any)["name"] != "gpu-1" {
		t.Fatalf("rented servers: %v", mine)
	}
	if bal := controltest.Data(s.MustDo(200, "GET", "/api/v1/wallet/balances", nil, token)); bal["general_balance"] != "37.50" {
		t.Fatalf("balance after renting: %v", bal)
	}
	if me := controltest.Data(s.MustDo(200, "GET", "/api/v1/users/auth/me", nil, token)); me["two_factor_enabled"] != false {
		t.Fatalf("2FA still on after the console turned it off: %v", me)
	}
	toks := s.MustDo(200, "GET", "/api/v1/auth/tokens", nil, token)
	if !strings.Contains(string(toks.Raw), `"gated token"`) {
		t.Fatalf("the token made under the gate is missing: %s", toks.Raw)
	}
	// The icon the admin chose is the one the catalog serves.
	imgs := controltest.Data(s.MustDo(200, "GET", "/api/v1/images/public?search=iconic-1", nil, token))["images"].([]any)
	if len(imgs) != 1 {
		t.Fatalf("images: %v", imgs)
	}
	got := s.Call("GET", imgs[0].(map[string]any)["icon_url"].(string), nil, token)
	if got.Status != 200 || !bytes.Equal(got.Raw, pngBytes) {
		t.Fatalf("icon: %d, %d bytes, want the %d uploaded", got.Status, len(got.Raw), len(pngBytes))
	}
}

// writeIcon writes a 32x32 PNG and answers its bytes.
func writeIcon(t *testing.T, path string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for y := 0; y < 32; y++ {
		for x := 0; x < 32; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x * 8), G: uint8(y * 8), B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
