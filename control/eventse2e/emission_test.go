package eventse2e_test

import (
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"deckhand/control/controltest"
)

// walker is the state the emission drivers share on one server: the
// admin, a user, and what earlier rows created.
type walker struct {
	s              *controltest.Server
	admin, adminID string
	user, userID   string
	managedID      string // the user admin-create-user made
	tokenID        string
	notificationID string
}

// emitted is what a driver expects in the log after its operation.
type emitted struct {
	kind, resourceType, resourceID, actor string
}

// drivers perform each operation of the emission table (docs/design/events.md) over
// HTTP. A row without a driver, or a driver without a row, fails the test:
// adding an emitting operation is one table row and one entry here.
var drivers = map[string]func(w *walker) emitted{
	"signup": func(w *walker) emitted {
		tok, id := w.s.Account("walker@example.com")
		w.user, w.userID = tok, id
		return emitted{"user.created", "user", id, ""}
	},
	"admin-create-user": func(w *walker) emitted {
		d := controltest.Data(w.s.MustDo(201, "POST", "/api/v1/admin/users", map[string]any{"email": "managed@example.com",
			"password": controltest.GoodPW, "verified": true}, w.admin))
		w.managedID = d["id"].(string)
		return emitted{"user.created", "user", w.managedID, w.adminID}
	},
	"admin-ban-user": func(w *walker) emitted {
		w.s.MustDo(200, "PATCH", "/api/v1/admin/users/"+w.managedID, map[string]any{"is_banned": true}, w.admin)
		return emitted{"user.banned", "user", w.managedID, w.adminID}
	},
	"admin-unban-user": func(w *walker) emitted {
		w.s.MustDo(200, "PATCH", "/api/v1/admin/users/"+w.managedID, map[string]any{"is_banned": false}, w.admin)
		return emitted{"user.unbanned", "user", w.managedID, w.adminID}
	},
	"admin-change-role": func(w *walker) emitted {
		w.s.MustDo(200, "PATCH", "/api/v1/admin/users/"+w.managedID, map[string]any{"role": "admin"}, w.admin)
		return emitted{"user.role_changed", "user", w.managedID, w.adminID}
	},
	"token-create": func(w *walker) emitted {
		w.tokenID = controltest.Data(w.s.MustDo(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "walker"}, w.user))["id"].(string)
		return emitted{"auth.token.created", "auth_token", w.tokenID, w.userID}
	},
	"token-update": func(w *walker) emitted {
		w.s.MustDo(200, "PATCH", "/api/v1/auth/tokens/"+w.tokenID, map[string]any{"alias": "walker two"}, w.user)
		return emitted{"auth.token.updated", "auth_token", w.tokenID, w.userID}
	},
	"token-disable": func(w *walker) emitted {
		w.s.MustDo(200, "PATCH", "/api/v1/auth/tokens/"+w.tokenID, map[string]any{"is_enabled": false}, w.user)
		return emitted{"auth.token.disabled", "auth_token", w.tokenID, w.userID}
	},
	"token-enable": func(w *walker) emitted {
		w.s.MustDo(200, "PATCH", "/api/v1/auth/tokens/"+w.tokenID, map[string]any{"is_enabled": true}, w.user)
		return emitted{"auth.token.enabled", "auth_token", w.tokenID, w.userID}
	},
	"token-delete": func(w *walker) emitted {
		w.s.MustDo(200, "DELETE", "/api/v1/auth/tokens/"+w.tokenID, nil, w.user)
		return emitted{"auth.token.deleted", "auth_token", w.tokenID, w.userID}
	},
	"notification-create": func(w *walker) emitted {
		w.notificationID = controltest.Data(w.s.MustDo(201, "POST", "/api/v1/admin/notifications",
			map[string]any{"title": "Hello", "body": "World"}, w.admin))["id"].(string)
		return emitted{"activity.logged", "notification", w.notificationID, w.adminID}
	},
	"notification-read": func(w *walker) emitted {
		w.s.MustDo(200, "PUT", "/api/v1/notifications/"+w.notificationID+"/read", nil, w.user)
		return emitted{"notification.read", "notification", w.notificationID, w.userID}
	},
	"notification-read-all": func(w *walker) emitted {
		id := controltest.Data(w.s.MustDo(201, "POST", "/api/v1/admin/notifications",
			map[string]any{"title": "Second", "body": "one", "user_id": w.userID}, w.admin))["id"].(string)
		w.s.MustDo(200, "PUT", "/api/v1/notifications/read-all", nil, w.user)
		return emitted{"notification.read", "notification", id, w.userID}
	},
	"agent-ingest": func(w *walker) emitted {
		tok := controltest.Data(w.s.MustDo(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "agent"}, w.admin))["token"].(string)
		w.s.MustDo(201, "POST", "/api/v1/events/ingest", map[string]any{"event_type": "container.snapshot.created", "container_id": "walk-c1"}, tok)
		return emitted{"container.snapshot.created", "container", "walk-c1", w.adminID}
	},
	"admin-report": func(w *walker) emitted {
		w.s.MustDo(201, "POST", "/api/v1/admin/events", map[string]any{"event_type": "storage.share.mount_changed", "resource_id": "share-1"}, w.admin)
		return emitted{"storage.share.mount_changed", "storage_share", "share-1", w.adminID}
	},
}

type row struct{ op, kind string }

// emissionTable reads the rows of the emission table in docs/design/events.md.
func emissionTable(t *testing.T) []row {
	t.Helper()
	raw, err := os.ReadFile("../../docs/design/events.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "<!-- emission table -->")
	end := strings.Index(text, "<!-- end emission table -->")
	if start < 0 || end < start {
		t.Fatal("docs/design/events.md has no emission table between its markers")
	}
	cell := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|[^|]*\\| ([^|]+) \\|")
	var rows []row
	for _, line := range strings.Split(text[start:end], "\n") {
		if m := cell.FindStringSubmatch(line); m != nil {
			rows = append(rows, row{op: m[1], kind: strings.TrimSpace(m[2])})
		}
	}
	if len(rows) == 0 {
		t.Fatal("emission table has no rows")
	}
	return rows
}

func TestEveryOperationEmitsItsEvent(t *testing.T) {
	rows := emissionTable(t)
	seen := map[string]bool{}
	for _, r := range rows {
		if drivers[r.op] == nil {
			t.Fatalf("emission table row %q has no driver in emission_test.go", r.op)
		}
		seen[r.op] = true
	}
	for op := range drivers {
		if !seen[op] {
			t.Fatalf("driver %q has no emission table row", op)
		}
	}
	s := controltest.Start(t)
	login := s.LoginData(controltest.AdminEmail, controltest.AdminPass)
	w := &walker{s: s, admin: login["token"].(string), adminID: login["user"].(map[string]any)["id"].(string)}
	for _, r := range rows {
		want := drivers[r.op](w)
		if !strings.HasPrefix(r.kind, "the reported kind") && r.kind != want.kind {
			t.Fatalf("%s: the emission table names %s, the driver expects %s", r.op, r.kind, want.kind)
		}
		q := url.Values{"event_type": {want.kind}, "resource_id": {want.resourceID}}
		d := controltest.Data(s.MustDo(200, "GET", "/api/v1/events?"+q.Encode(), nil, w.admin))
		evs := d["events"].([]any)
		if len(evs) != 1 {
			t.Fatalf("%s: %d %s events about %s, want 1: %v", r.op, len(evs), want.kind, want.resourceID, evs)
		}
		ev := evs[0].(map[string]any)
		actor, _ := ev["actor_id"].(string)
		if ev["resource_type"] != want.resourceType || actor != want.actor {
			t.Fatalf("%s: event %v, want resource type %s and actor %q", r.op, ev, want.resourceType, want.actor)
		}
	}
}
