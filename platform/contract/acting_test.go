package contract_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"deckhand/platform/contract"
)

// TestActingOf: a request the gateway did not send reaches every service
// with no allow-list, whatever headers it carries; the gateway's lists are
// read as it wrote them, an empty allow-list allowing nothing.
func TestActingOf(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set(contract.ReachHeader, "files")
	r.Header.Set(contract.ToolsHeader, "files_read")
	contract.MarkLocal(r) // not through the gateway: its headers are a client's
	local := contract.ActingOf(r.Header)
	if !local.May("process") || !local.MayUse("process_run") {
		t.Fatalf("a local caller: %+v", local)
	}
	for _, c := range []struct {
		reach, tools     string
		service, tool    string
		mayReach, mayUse bool
	}{
		{"files, mcp", "", "files", "files_read", true, false},
		{"files,mcp", "files_*", "process", "files_read", false, true},
		{"", "files_read", "files", "files_write", false, false},
	} {
		h := http.Header{contract.ReachHeader: {c.reach}}
		if c.tools != "" || c.tool == "files_read" {
			h.Set(contract.ToolsHeader, c.tools)
		}
		a := contract.ActingOf(h)
		if a.May(c.service) != c.mayReach || a.MayUse(c.tool) != c.mayUse {
			t.Errorf("reach %q tools %q: may %s %v, use %s %v", c.reach, c.tools, c.service, a.May(c.service), c.tool, a.MayUse(c.tool))
		}
	}
	h := http.Header{contract.IdentitySubjectHeader: {"ci"}, "Other": {"x"}}
	if f := contract.ActingOf(h).Forward(nil); f.Get(contract.IdentitySubjectHeader) != "ci" || f.Get("Other") != "" {
		t.Fatalf("forwarded %v", f)
	}
	for _, c := range []struct {
		patterns []string
		tool     string
		want     bool
	}{
		{[]string{"files_*"}, "files_read", true},
		{[]string{"files_*"}, "files", false},
		{[]string{"files_*"}, "process_run", false},
		{[]string{"files_read"}, "files_read", true},
		{[]string{"files_read"}, "files_readx", false},
		{[]string{"*"}, "anything", true},
		{[]string{"a", "process_*"}, "process_run", true},
		{[]string{}, "files_read", false},
	} {
		if got := (contract.Acting{Tools: c.patterns}).MayUse(c.tool); got != c.want {
			t.Errorf("MayUse of %v, %s = %v, want %v", c.patterns, c.tool, got, c.want)
		}
	}
}
