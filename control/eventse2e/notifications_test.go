package eventse2e_test

import (
	"net/url"
	"testing"

	"deckhand/control/controltest"
)

func TestNotificationReadStateIsPerUser(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	admin := s.Admin()
	ann, annID := s.Account("ann@example.com")
	bob, _ := s.Account("bob@example.com")
	g1 := controltest.Data(s.MustDo(201, "POST", "/api/v1/admin/notifications", map[string]any{"title": "Maintenance", "body": "Sunday 02:00", "level": "maintenance"}, admin))
	s.MustDo(201, "POST", "/api/v1/admin/notifications", map[string]any{"title": "New images", "body": "Debian 13"}, admin)
	mine := controltest.Data(s.MustDo(201, "POST", "/api/v1/admin/notifications", map[string]any{"title": "Your server", "body": "rental ends", "user_id": annID, "level": "warning"}, admin))
	for _, bad := range []map[string]any{{"title": "", "body": "x"}, {"title": "x", "body": "y", "level": "loud"}, {"title": "x", "body": "y", "extra": 1}} {
		s.MustDo(400, "POST", "/api/v1/admin/notifications", bad, admin)
	}
	s.MustDo(403, "POST", "/api/v1/admin/notifications", map[string]any{"title": "x", "body": "y"}, ann)

	list := func(tok string) (map[string]map[string]any, float64) {
		d := controltest.Data(s.MustDo(200, "GET", "/api/v1/notifications/", nil, tok))
		out := map[string]map[string]any{}
		for _, n := range d["notifications"].([]any) {
			m := n.(map[string]any)
			out[m["id"].(string)] = m
		}
		return out, d["unread"].(float64)
	}
	a, unread := list(ann)
	if len(a) != 3 || unread != 3 || a[mine["id"].(string)]["is_read"] != false {
		t.Fatalf("ann: %d notifications, %v unread: %v", len(a), unread, a)
	}
	// An authenticated read carries read_at, null while unread.
	if at, ok := a[mine["id"].(string)]["read_at"]; !ok || at != nil {
		t.Fatalf("unread notification's read_at: %v (present %v), want null", at, ok)
	}
	b, _ := list(bob)
	if len(b) != 2 || b[mine["id"].(string)] != nil {
		t.Fatalf("bob sees ann's notification or misses a global one: %v", b)
	}
	s.MustDo(404, "PUT", "/api/v1/notifications/"+mine["id"].(string)+"/read", nil, bob)
	s.MustDo(404, "PUT", "/api/v1/notifications/ntf_nope/read", nil, bob)

	r := controltest.Data(s.MustDo(200, "PUT", "/api/v1/notifications/"+g1["id"].(string)+"/read", nil, ann))
	if r["is_read"] != true || r["read_at"] == nil {
		t.Fatalf("mark read: %v", r)
	}
	again := controltest.Data(s.MustDo(200, "PUT", "/api/v1/notifications/"+g1["id"].(string)+"/read", nil, ann))
	if again["read_at"] != r["read_at"] {
		t.Fatalf("read_at moved: %v then %v", r["read_at"], again["read_at"])
	}
	a, unread = list(ann)
	b, bobUnread := list(bob)
	if a[g1["id"].(string)]["is_read"] != true || unread != 2 || b[g1["id"].(string)]["is_read"] != false || bobUnread != 2 {
		t.Fatalf("after ann read g1: ann %v (%v unread), bob %v (%v unread)", a, unread, b, bobUnread)
	}
	if d := controltest.Data(s.MustDo(200, "PUT", "/api/v1/notifications/read-all", nil, ann)); d["marked"].(float64) != 2 {
		t.Fatalf("read-all: %v", d)
	}
	if _, unread = list(ann); unread != 0 {
		t.Fatalf("ann unread after read-all: %v", unread)
	}
	if _, bobUnread = list(bob); bobUnread != 2 {
		t.Fatalf("bob unread after ann's read-all: %v", bobUnread)
	}

	// Public: global only, without read state.
	pub := controltest.Data(s.MustDo(200, "GET", "/api/v1/notifications/public", nil, ""))
	ns := pub["notifications"].([]any)
	if len(ns) != 2 {
		t.Fatalf("public: %v", pub)
	}
	for _, n := range ns {
		if _, ok := n.(map[string]any)["is_read"]; ok {
			t.Fatalf("public notification with read state: %v", n)
		}
		if _, ok := n.(map[string]any)["read_at"]; ok {
			t.Fatalf("public notification with read_at: %v", n)
		}
	}
	s.MustDo(401, "GET", "/api/v1/notifications/", nil, "")

	// Each first read is a notification.read event of ann's; bob has none.
	if _, n := listAll(t, s, ann, url.Values{"event_type": {"notification.read"}}, 100); n != 3 {
		t.Fatalf("ann's notification.read events: %d, want 3", n)
	}
	if _, n := listAll(t, s, bob, url.Values{"event_type": {"notification.read"}}, 100); n != 0 {
		t.Fatalf("bob's notification.read events: %d", n)
	}
}

func TestIngestTakesAnAgentTokenScopedToItsContainer(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	admin := s.Admin()
	user, userID := s.Account("agent-owner@example.com")
	stranger, _ := s.Account("stranger@example.com")
	// c1 is a container of the owner's project (the projects domain's
	// container.access check admits its owner).
	project := controltest.Data(s.MustDo(201, "POST", "/api/v1/admin/projects", map[string]any{"owner_id": userID, "name": "agents"}, admin))
	s.MustDo(201, "POST", "/api/v1/admin/containers", map[string]any{"project_id": project["id"], "name": "one", "id": "c1"}, admin)
	userTok := controltest.Data(s.MustDo(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "agent"}, user))["token"].(string)
	strangerTok := controltest.Data(s.MustDo(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "agent"}, stranger))["token"].(string)
	adminTok := controltest.Data(s.MustDo(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "fleet agent"}, admin))["token"].(string)
	ev := map[string]any{"event_type": "container.running", "container_id": "c1", "payload": map[string]any{"pid": 1}}
	// A session is no agent; a token whose owner may not act on c1 is
	// refused; an unknown container is not found; the owner's token reports.
	s.MustDo(403, "POST", "/api/v1/events/ingest", ev, admin)
	s.MustDo(403, "POST", "/api/v1/events/ingest", ev, strangerTok)
	s.MustDo(404, "POST", "/api/v1/events/ingest", map[string]any{"event_type": "container.running", "container_id": "nope"}, userTok)
	if own := controltest.Data(s.MustDo(201, "POST", "/api/v1/events/ingest", ev, userTok)); own["container_id"] != "c1" {
		t.Fatalf("owner's report: %v", own)
	}
	got := controltest.Data(s.MustDo(201, "POST", "/api/v1/events/ingest", ev, adminTok))
	if got["resource_type"] != "container" || got["resource_id"] != "c1" || got["container_id"] != "c1" {
		t.Fatalf("ingested: %v", got)
	}
	for _, bad := range []map[string]any{
		{"event_type": "container.running"},                                                  // no container
		{"event_type": "user.banned", "container_id": "c1"},                                  // not ingestible
		{"event_type": "firewall.rule.added", "container_id": "c1", "resource_type": "pool"}, // wrong type
		{"event_type": "container.running", "container_id": "c1", "payload": "text"},
		{"event_type": "container.running", "container_id": "c1", "created_at": "2999-01-01T00:00:00Z"},
		{"event_type": "container.running", "container_id": "c\x01"},
	} {
		s.MustDo(400, "POST", "/api/v1/events/ingest", bad, adminTok)
	}
	s.MustDo(400, "POST", "/api/v1/admin/events", map[string]any{"event_type": "server.health_changed", "resource_id": "s1"}, admin)
}
