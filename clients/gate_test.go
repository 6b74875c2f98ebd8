package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"deckhand/agent"
	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
)

func TestMain(m *testing.M) { controltest.MainOnce(m) }

// answer is a live request whose answer must validate against the schema
// its document gives the operation (operationId) for the answer's status.
type answer struct {
	op, method, path string
	body             any
	status           int
}

// gateDoc is one document of the gate. call is the body of
//
//	func(ctx context.Context, c *<name>.ClientWithResponses) (any, error)
//
// in the generated program: one live call through the generated client
// that must decode a non-empty typed answer (it fails when a required part
// is empty). answers are checked against the document by the harness.
type gateDoc struct {
	name    string
	call    string
	answers []answer
}

// healthCall is the live call of a document whose routes are not typed
// operations yet: the typed health record.
func healthCall(name string) string {
	return `r, err := c.GetHealthWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.Service != "` + name + `" {
		return nil, fmt.Errorf("health %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`
}

func health(name string) []answer {
	return []answer{{op: "getHealth", method: "GET", path: "/health", status: 200}}
}

var docs = []gateDoc{
	{name: "control", call: `r, err := c.GetBalancesWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.Data.GeneralBalance == nil || *r.JSON200.Data.GeneralBalance != "10.00" || r.JSON200.Message != "Balances" {
		return nil, fmt.Errorf("balances %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "getBalances", method: "GET", path: "/api/v1/wallet/balances", status: 200},
		{op: "transferToAI", method: "POST", path: "/api/v1/wallet/transfer-to-ai", body: map[string]any{"amount": "2.50", "idempotency_key": "gate"}, status: 200},
		{op: "transferToAI", method: "POST", path: "/api/v1/wallet/transfer-to-ai", body: map[string]any{"amount": "-1"}, status: 400},
		{op: "getGeneralBalance", method: "GET", path: "/api/v1/wallet/balances/general", status: 200},
		{op: "getAIBalance", method: "GET", path: "/api/v1/wallet/balances/ai", status: 200},
		{op: "listTransactions", method: "GET", path: "/api/v1/wallet/transactions?limit=5", status: 200},
		{op: "listAIFees", method: "GET", path: "/api/v1/wallet/ai-fees", status: 200},
		{op: "listInvoices", method: "GET", path: "/api/v1/wallet/invoices", status: 200},
		{op: "createPaymentMethod", method: "POST", path: "/api/v1/wallet/payment-methods", body: map[string]any{"type": "paypal", "name": "PayPal"}, status: 201},
		{op: "listPaymentMethods", method: "GET", path: "/api/v1/wallet/payment-methods", status: 200},
		{op: "getTransaction", method: "GET", path: "/api/v1/wallet/transactions/txn_none", status: 404},
		{op: "getTransferFee", method: "GET", path: "/api/v1/wallet/transfer-fee", status: 200},
		{op: "getConsoleSession", method: "GET", path: "/api/v1/console/session", status: 200},
		{op: "consoleLogin", method: "POST", path: "/api/v1/console/session", body: map[string]any{"email": "gate@example.com"}, status: 400},
		{op: "refreshConsoleSession", method: "POST", path: "/api/v1/console/session/refresh", status: 401},
		{op: "consoleLogout", method: "DELETE", path: "/api/v1/console/session", status: 200},
	}},
	{name: "cron", call: `r, err := c.CreateEntryWithResponse(ctx, &cron.CreateEntryParams{}, cron.CreateEntryJSONRequestBody{Schedule: "*/5 * * * *", Command: "true"})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Id == "" || r.HTTPResponse.Header.Get("ETag") == "" {
		return nil, fmt.Errorf("create %d: %s", r.StatusCode(), r.Body)
	}
	l, err := c.ListEntriesWithResponse(ctx, &cron.ListEntriesParams{})
	if err != nil {
		return nil, err
	}
	if l.JSON200 == nil || len(l.JSON200.Entries) == 0 || l.JSON200.Entries[0].NextRuns == nil {
		return nil, fmt.Errorf("list %d: %s", l.StatusCode(), l.Body)
	}
	return l.JSON200, nil`, answers: []answer{
		{op: "listEntries", method: "GET", path: "/api/v1/cron/entries", status: 200},
		{op: "createEntry", method: "POST", path: "/api/v1/cron/entries", body: map[string]any{"schedule": "@daily", "command": "date", "comment": "gate"}, status: 201},
		{op: "createEntry", method: "POST", path: "/api/v1/cron/entries", body: map[string]any{"schedule": "61 * * * *", "command": "date"}, status: 400},
		{op: "listRuns", method: "GET", path: "/api/v1/cron/runs", status: 200},
		{op: "validateSchedule", method: "POST", path: "/api/v1/cron/validate", body: map[string]any{"schedule": "0 3 * * 1"}, status: 200},
	}},
	{name: "curl", call: `value := "v"
	r, err := c.AddCookiesWithResponse(ctx, "gate", curl.AddCookiesJSONRequestBody{Cookies: []curl.NewCookie{{Domain: "example.com", Name: "sid", Value: &value}}})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Cookies != 1 || r.JSON201.Path == "" {
		return nil, fmt.Errorf("add %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON201, nil`, answers: []answer{
		{op: "listSessions", method: "GET", path: "/api/v1/curl/sessions", status: 200},
		{op: "getSession", method: "GET", path: "/api/v1/curl/sessions/gate", status: 200},
		{op: "listCookies", method: "GET", path: "/api/v1/curl/sessions/gate/cookies", status: 200},
		{op: "addCookies", method: "POST", path: "/api/v1/curl/sessions/gate/cookies", body: map[string]any{"cookies": []any{map[string]any{"domain": "example.org", "name": "a", "value": "b"}}}, status: 200},
	}},
	{name: "daemon", call: `r, err := c.PutProgramWithResponse(ctx, "gate", daemon.PutProgramJSONRequestBody{Command: "/bin/sleep", Args: &[]string{"300"}, Autostart: new(bool)})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Command != "/bin/sleep" || r.JSON201.Status.State == "" {
		return nil, fmt.Errorf("put %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON201, nil`, answers: []answer{
		{op: "listPrograms", method: "GET", path: "/api/v1/daemon/programs", status: 200},
		{op: "getProgram", method: "GET", path: "/api/v1/daemon/programs/gate", status: 200},
		{op: "putProgram", method: "PUT", path: "/api/v1/daemon/programs/gate", body: map[string]any{"command": "/bin/sleep", "args": []string{"301"}, "autostart": false}, status: 200},
		{op: "disableProgram", method: "POST", path: "/api/v1/daemon/programs/gate/disable", status: 200},
	}},
	{name: "exec", call: `r, err := c.ListSchedulesWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.File == "" {
		return nil, fmt.Errorf("list %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "listSchedules", method: "GET", path: "/api/v1/exec/schedules/list", status: 200},
		{op: "listScheduleRuns", method: "GET", path: "/api/v1/exec/schedules/history?limit=3", status: 200},
		{op: "triggerSchedule", method: "POST", path: "/api/v1/exec/schedules/trigger", body: map[string]any{"name": "none"}, status: 404},
	}},
	{name: "journal", call: `r, err := c.GetJournalStatsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.MaxBytes == 0 {
		return nil, fmt.Errorf("stats %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "getJournalStats", method: "GET", path: "/api/v1/journal/stats", status: 200},
		{op: "flushJournal", method: "POST", path: "/api/v1/journal/flush", status: 200},
	}},
	{name: "notes", call: `title := "gate"
	r, err := c.PutDocumentWithResponse(ctx, "nb", "n1", &notes.PutDocumentParams{}, notes.PutDocumentJSONRequestBody{Title: &title,
		Blocks: []notes.Block{{Id: &title, Type: notes.Text, Text: &title}}})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Version != 1 || r.HTTPResponse.Header.Get("ETag") != "\"1\"" {
		return nil, fmt.Errorf("put %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON201, nil`, answers: []answer{
		{op: "getDocument", method: "GET", path: "/api/v1/notes/notebooks/nb/nodes/n1/document", status: 200},
		{op: "patchDocument", method: "PATCH", path: "/api/v1/notes/notebooks/nb/nodes/n1/document", body: map[string]any{"title": "again"}, status: 200},
		{op: "createExportTicket", method: "POST", path: "/api/v1/notes/notebooks/nb/nodes/n1/export-ticket", body: map[string]any{}, status: 201},
		{op: "getDocument", method: "GET", path: "/api/v1/notes/notebooks/-x/nodes/n1/document", status: 400},
	}},
	{name: "notifications", call: `r, err := c.ListOpenNotificationsWithResponse(ctx, "agent")
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.Display != "agent" || r.JSON200.Notifications == nil {
		return nil, fmt.Errorf("list %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "listOpenNotifications", method: "GET", path: "/api/v1/notifications/agent", status: 200},
		{op: "clearNotifications", method: "DELETE", path: "/api/v1/notifications/dismiss", status: 200},
		{op: "dismissNotifications", method: "POST", path: "/api/v1/notifications/dismiss", body: map[string]any{"all": true}, status: 200},
	}},
	{name: "process", call: `r, err := c.RunProcessWithResponse(ctx, process.RunProcessJSONRequestBody{Cmd: &[]string{"echo", "gate"}})
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.Stdout != "gate\n" || r.JSON200.ExitCode == nil || *r.JSON200.ExitCode != 0 {
		return nil, fmt.Errorf("run %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "runProcess", method: "POST", path: "/api/v1/process/run", body: map[string]any{"shell": "echo out; echo err >&2", "tag": "gate"}, status: 200},
		{op: "startProcess", method: "POST", path: "/api/v1/process", body: map[string]any{"cmd": []string{"true"}, "client_token": "gate"}, status: 201},
		{op: "startProcess", method: "POST", path: "/api/v1/process", body: map[string]any{"cmd": []string{"true"}, "client_token": "gate"}, status: 200},
		{op: "startProcess", method: "POST", path: "/api/v1/process", body: map[string]any{"cmd": []string{"true"}, "shell": "true"}, status: 400},
		{op: "listProcesses", method: "GET", path: "/api/v1/process?tag=gate", status: 200},
		{op: "getProcess", method: "GET", path: "/api/v1/process/none", status: 404},
	}},
	{name: "files", call: `r, err := c.StatFileWithResponse(ctx, &files.StatFileParams{Path: "/"})
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.Path != "/" || r.JSON200.Type != "dir" {
		return nil, fmt.Errorf("stat %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "getVersion", method: "GET", path: "/api/v1/version", status: 200},
		{op: "makeDirectory", method: "POST", path: "/api/v1/files/mkdir", body: map[string]any{"path": "/gate"}, status: 201},
		{op: "listFiles", method: "GET", path: "/api/v1/files?path=/", status: 200},
		{op: "statFile", method: "GET", path: "/api/v1/files/stat?path=/gate", status: 200},
		{op: "searchFiles", method: "GET", path: "/api/v1/files/search?path=/&name=gate", status: 200},
		{op: "statFile", method: "GET", path: "/api/v1/files/stat?path=/none", status: 404},
	}},
	{name: "run", call: `r, err := c.CreateProfileWithResponse(ctx, run.CreateProfileJSONRequestBody{Name: "gate"})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Name != "gate" || r.JSON201.Version != 1 {
		return nil, fmt.Errorf("create %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON201, nil`, answers: []answer{
		{op: "createProfile", method: "POST", path: "/api/v1/run/profiles", body: map[string]any{"name": "gate2"}, status: 201},
		{op: "listProfiles", method: "GET", path: "/api/v1/run/profiles", status: 200},
		{op: "listSources", method: "GET", path: "/api/v1/run/sources", status: 200},
		{op: "deleteProfile", method: "DELETE", path: "/api/v1/run/profiles/none", status: 404},
	}},
	{name: "terminal", call: `r, err := c.CreateTerminalWithResponse(ctx, terminal.CreateTerminalJSONRequestBody{Shell: new(string)})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Id == "" || r.JSON201.Pid == 0 {
		return nil, fmt.Errorf("create %d: %s", r.StatusCode(), r.Body)
	}
	d, err := c.DeleteTerminalWithResponse(ctx, r.JSON201.Id)
	if err != nil {
		return nil, err
	}
	if d.JSON200 == nil || d.JSON200.Id != r.JSON201.Id {
		return nil, fmt.Errorf("delete %d: %s", d.StatusCode(), d.Body)
	}
	return d.JSON200, nil`, answers: []answer{
		{op: "listTerminals", method: "GET", path: "/api/v1/terminal/sessions", status: 200},
		{op: "getTerminal", method: "GET", path: "/api/v1/terminal/sessions/none", status: 404},
	}},
	{name: "tunnel", call: `r, err := c.ListTunnelSessionsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil {
		return nil, fmt.Errorf("sessions %d: %s", r.StatusCode(), r.Body)
	}
	b, err := c.ListBindingsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if b.JSON200 == nil || b.JSON200.Bindings == nil || len(*b.JSON200.Bindings) == 0 {
		return nil, fmt.Errorf("bindings %d: %s", b.StatusCode(), b.Body)
	}
	return b.JSON200, nil`, answers: []answer{
		{op: "listBindings", method: "GET", path: "/api/v1/tunnel/bindings", status: 200},
		{op: "listTunnels", method: "GET", path: "/api/v1/tunnel/tunnels", status: 200},
		{op: "cutTunnelSession", method: "DELETE", path: "/api/v1/tunnel/sessions/none", status: 404},
	}},
	{name: "vault", call: `r, err := c.GetVaultStatsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil || r.JSON200.Encryption == "" || r.JSON200.KeyId == "" {
		return nil, fmt.Errorf("stats %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON200, nil`, answers: []answer{
		{op: "putKey", method: "PUT", path: "/api/v1/vault/keys/gate", body: map[string]any{"value": map[string]any{"a": 1}}, status: 201},
		{op: "putKey", method: "PUT", path: "/api/v1/vault/keys/gate", body: map[string]any{"value": 2}, status: 200},
		{op: "getKey", method: "GET", path: "/api/v1/vault/keys/gate", status: 200},
		{op: "listKeys", method: "GET", path: "/api/v1/vault/keys", status: 200},
		{op: "getKey", method: "GET", path: "/api/v1/vault/keys/none", status: 404},
		{op: "putKey", method: "PUT", path: "/api/v1/vault/keys/gate", body: map[string]any{}, status: 400},
	}},
	{name: "workspace", call: `r, err := c.PutBlockWithResponse(ctx, "gate", "persona", workspace.PutBlockJSONRequestBody{Value: "a careful engineer"})
	if err != nil {
		return nil, err
	}
	if r.JSON201 == nil || r.JSON201.Label != "persona" || r.JSON201.Limit == 0 {
		return nil, fmt.Errorf("put %d: %s", r.StatusCode(), r.Body)
	}
	return r.JSON201, nil`, answers: []answer{
		{op: "listBlocks", method: "GET", path: "/api/v1/workspaces/gate/memory/blocks", status: 200},
		{op: "appendJournalEntry", method: "POST", path: "/api/v1/workspaces/gate/memory/journal", body: map[string]any{"content": "typed endpoints", "tags": []string{"gate"}}, status: 201},
		{op: "listJournalEntries", method: "GET", path: "/api/v1/workspaces/gate/memory/journal", status: 200},
		{op: "searchJournal", method: "POST", path: "/api/v1/workspaces/gate/memory/journal/search", body: map[string]any{"query": "typed"}, status: 200},
		{op: "listMemoryChanges", method: "GET", path: "/api/v1/workspaces/gate/memory/history", status: 200},
		{op: "getMemoryConfig", method: "GET", path: "/api/v1/workspaces/gate/memory/config", status: 200},
		{op: "getConfig", method: "GET", path: "/api/v1/workspaces/gate/config", status: 200},
		{op: "listProviders", method: "GET", path: "/api/v1/workspaces/gate/providers", status: 200},
		{op: "listTools", method: "GET", path: "/api/v1/workspaces/gate/tools", status: 200},
		{op: "listPermissions", method: "GET", path: "/api/v1/workspaces/gate/permissions", status: 200},
		{op: "askQuestion", method: "POST", path: "/api/v1/workspaces/gate/questions", body: map[string]any{"text": "ready?", "options": []string{"yes", "no"}}, status: 201},
		{op: "listQuestions", method: "GET", path: "/api/v1/workspaces/gate/questions", status: 200},
		{op: "putSkill", method: "PUT", path: "/api/v1/workspaces/gate/skills/review", body: map[string]any{"description": "reviews", "content": "read it twice"}, status: 201},
		{op: "listSkills", method: "GET", path: "/api/v1/workspaces/gate/skills", status: 200},
		{op: "getBlock", method: "GET", path: "/api/v1/workspaces/-bad/memory/blocks/persona", status: 400},
	}},
}

func TestClientGate(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	codegen := filepath.Join(tmp, "oapi-codegen")
	build := exec.Command("go", "build", "-o", codegen, "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen")
	build.Dir = filepath.Join(root, "tools")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build oapi-codegen from tools/go.mod: %v\n%s", err, out)
	}
	tsBin := filepath.Join(root, "clients", "ts", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(tsBin, "openapi-typescript")); err != nil {
		t.Fatal("openapi-typescript is not installed: run scripts/setup.sh (npm ci in clients/ts)")
	}

	// Every document is gated: a service without its own entry in docs
	// (its routes are not typed operations yet) by a compiling client and
	// its typed health record.
	all := append([]gateDoc{}, docs...)
	served := append([]string{"control"}, agent.Registered()...)
	for _, n := range served {
		if !slices.ContainsFunc(docs, func(d gateDoc) bool { return d.name == n }) {
			all = append(all, gateDoc{name: n, call: healthCall(n), answers: health(n)})
		}
	}
	if len(all) != len(served) {
		t.Fatalf("the gate names documents no one serves: %v, served %v", all, served)
	}

	// The control plane, with a user who has 10.00, and an agent.
	cp := controltest.Start(t)
	admin := cp.Admin()
	userID, token := cp.User(admin, "gate@example.com")
	cp.MustDo(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": userID, "amount": "10.00", "reason": "gate"}, admin)
	base := startAgent(t, root)
	url := func(name string) string {
		if name == "control" {
			return cp.URL
		}
		return "http://127.0.0.1:" + strconv.Itoa(agent.Port(base, name))
	}
	bearer := func(name string) string {
		if name == "control" {
			return token
		}
		return ""
	}

	// The generated clients live in one module made from tools/go.mod, so
	// they build against the pinned runtime.
	gen := filepath.Join(tmp, "gen")
	mod, err := os.ReadFile(filepath.Join(root, "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "tools", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.MkdirAll(filepath.Join(gen, "cmd"), 0o755))
	must(t, os.WriteFile(filepath.Join(gen, "go.mod"), regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module gate")), 0o644))
	must(t, os.WriteFile(filepath.Join(gen, "go.sum"), sum, 0o644))
	must(t, os.MkdirAll(filepath.Join(tmp, "ts"), 0o755))

	raw := map[string][]byte{}
	for _, d := range all {
		raw[d.name] = fetch(t, url(d.name)+"/openapi.json")
		must(t, os.WriteFile(filepath.Join(tmp, d.name+".json"), raw[d.name], 0o644))
	}

	built := map[string]bool{}
	for _, d := range all {
		t.Run("go/"+d.name, func(t *testing.T) {
			dir := filepath.Join(gen, d.name)
			must(t, os.MkdirAll(dir, 0o755))
			run(t, gen, codegen, "-generate", "types,client", "-package", d.name, "-o", filepath.Join(dir, "client.gen.go"), filepath.Join(tmp, d.name+".json"))
			run(t, gen, "go", "build", "./"+d.name)
			built[d.name] = true
		})
	}
	// One program makes every document's live call.
	must(t, os.WriteFile(filepath.Join(gen, "cmd", "main.go"), []byte(gateMain), 0o644))
	for _, d := range all {
		if built[d.name] {
			src := fmt.Sprintf(gateCall, d.name, d.name, d.name, d.name, d.name, d.call)
			must(t, os.WriteFile(filepath.Join(gen, "cmd", d.name+".go"), []byte(src), 0o644))
		}
	}
	gate := filepath.Join(tmp, "gate")
	if out, err := command(gen, "go", "build", "-o", gate, "./cmd"); err != nil {
		t.Fatalf("the live-call program does not build: %v\n%s", err, out)
	}
	for _, d := range all {
		t.Run("live/"+d.name, func(t *testing.T) {
			if !built[d.name] {
				t.Fatal("no client")
			}
			out, err := command(tmp, gate, d.name, url(d.name), bearer(d.name))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var v any
			if err := json.Unmarshal(out, &v); err != nil || isEmpty(v) {
				t.Fatalf("the typed answer is empty: %s", out)
			}
		})
	}

	for _, d := range all {
		t.Run("schema/"+d.name, func(t *testing.T) {
			doc, err := openapi3.NewLoader().LoadFromData(raw[d.name])
			if err != nil {
				t.Fatalf("the document does not load: %v", err)
			}
			if err := doc.Validate(context.Background()); err != nil {
				t.Fatalf("the document is not valid OpenAPI: %v", err)
			}
			checkDocument(t, doc)
			for _, a := range d.answers {
				checkAnswer(t, doc, url(d.name), bearer(d.name), a)
			}
		})
	}

	// TypeScript: types for every document, then one tsc over all.
	for _, d := range all {
		t.Run("ts/"+d.name, func(t *testing.T) {
			run(t, tmp, filepath.Join(tsBin, "openapi-typescript"), filepath.Join(tmp, d.name+".json"), "-o", filepath.Join(tmp, "ts", d.name+".ts"))
		})
	}
	must(t, os.WriteFile(filepath.Join(tmp, "ts", "tsconfig.json"),
		[]byte(`{"extends": "`+filepath.Join(root, "clients", "ts", "tsconfig.json")+`", "include": ["*.ts"]}`), 0o644))
	out, tscErr := command(filepath.Join(tmp, "ts"), filepath.Join(tsBin, "tsc"), "-p", "tsconfig.json")
	for _, d := range all {
		t.Run("tsc/"+d.name, func(t *testing.T) {
			if tscErr == nil {
				return
			}
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, d.name+".ts") {
					t.Error(l)
				}
			}
			if !strings.Contains(string(out), ".ts(") {
				t.Fatalf("tsc: %v\n%s", tscErr, out)
			}
		})
	}
}

// gateMain is the live-call program's main: gate NAME BASE-URL TOKEN.
const gateMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"
)

var calls = map[string]func(ctx context.Context, base, token string) (any, error){}

func bearer(token string) func(context.Context, *http.Request) error {
	return func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := calls[os.Args[1]](ctx, os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
`

// gateCall is one document's call: name (package), name (import path),
// name (map key), name, name (client constructor) and the call's body.
const gateCall = `package main

import (
	"context"
	"fmt"

	%s "gate/%s"
)

func init() {
	calls[%q] = func(ctx context.Context, base, token string) (any, error) {
		c, err := %s.NewClientWithResponses(base, %s.WithRequestEditorFn(bearer(token)))
		if err != nil {
			return nil, err
		}
		_ = fmt.Sprint
		%s
	}
}
`

// checkDocument holds every document to what a client generator needs:
// servers, unique operation ids, named schemas, tagged operations.
func checkDocument(t *testing.T, doc *openapi3.T) {
	t.Helper()
	if len(doc.Servers) == 0 {
		t.Error("no servers")
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s is both %s and %s", op.OperationID, other, where)
			}
			ids[op.OperationID] = where
			if len(op.Tags) == 0 {
				t.Errorf("%s has no tag", where)
			}
		}
	}
	if len(doc.Components.Schemas) < 2 {
		t.Errorf("only %d named schemas", len(doc.Components.Schemas))
	}
}

// checkAnswer sends a and validates the answer against the schema the
// document gives its operation and status.
func checkAnswer(t *testing.T, doc *openapi3.T, base, token string, a answer) {
	t.Helper()
	var body io.Reader
	if a.body != nil {
		b, _ := json.Marshal(a.body)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(a.method, base+a.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if a.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	where := a.method + " " + a.path
	if resp.StatusCode != a.status {
		t.Errorf("%s: %d, want %d: %s", where, resp.StatusCode, a.status, raw)
		return
	}
	var op *openapi3.Operation
	for _, item := range doc.Paths.Map() {
		for _, o := range item.Operations() {
			if o.OperationID == a.op {
				op = o
			}
		}
	}
	if op == nil {
		t.Errorf("%s: no operation %s in the document", where, a.op)
		return
	}
	r := op.Responses.Status(resp.StatusCode)
	if r == nil {
		r = op.Responses.Default()
	}
	if r == nil || r.Value.Content.Get("application/json") == nil {
		t.Errorf("%s: the document gives %s no JSON answer for %d", where, a.op, resp.StatusCode)
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("%s: not JSON: %s", where, raw)
		return
	}
	if err := r.Value.Content.Get("application/json").Schema.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		t.Errorf("%s: the answer does not validate against %s's schema for %d: %v\n%s", where, a.op, resp.StatusCode, err, raw)
	}
}

// startAgent runs `deckhand run` on a fresh data directory, its crontab
// and file root inside it, and waits until every service answers.
func startAgent(t *testing.T, root string) int {
	t.Helper()
	bin, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	data := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(data, "files"), 0o755))
	base := platformtest.FreePortBase(t, 64)
	cmd := exec.Command(bin, "run", "--data", data, "--listen", "127.0.0.1:"+strconv.Itoa(base), "--port-base", strconv.Itoa(base),
		"--crontab", filepath.Join(data, "crontab"), "--files-root", filepath.Join(data, "files"), "--log-level", "warn")
	cmd.Env = append(os.Environ(), "DISPLAY=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			if t.Failed() {
				t.Logf("agent output:\n%s", out.String())
			}
		})
	})
	for _, name := range agent.Registered() {
		u := "http://127.0.0.1:" + strconv.Itoa(agent.Port(base, name)) + "/health"
		for deadline := time.Now().Add(60 * time.Second); ; {
			select {
			case <-done:
				t.Fatalf("the agent exited:\n%s", out.String())
			default:
			}
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never answered:\n%s", name, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return base
}

func fetch(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", u, resp.StatusCode, raw)
	}
	return raw
}

func command(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	if out, err := command(dir, name, args...); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// isEmpty: nothing was decoded (null, {} or a struct of zero values).
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !isEmpty(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	}
	return false
}
