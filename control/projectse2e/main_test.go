package projectse2e_test

import (
	"testing"

	"deckhand/control/controltest"
	"deckhand/control/events"
	"deckhand/platform/store"
)

// TestMain runs every test twice: on the embedded store, then on PostgreSQL.
func TestMain(m *testing.M) { controltest.Main(m) }

type server struct {
	*controltest.Server
	t     *testing.T
	admin string
}

const userPass = "User-pass-1234"

// start serves a fresh instance and logs the admin in.
func start(t *testing.T) *server {
	t.Helper()
	s := &server{Server: controltest.Start(t), t: t}
	s.admin = s.Login(controltest.AdminEmail, controltest.AdminPass)
	return s
}

type resp = controltest.Resp

func (s *server) call(method, path string, body any, bearer string, hdrs ...string) resp {
	s.t.Helper()
	return s.Call(method, path, body, bearer, hdrs...)
}

// must is call that demands status.
func (s *server) must(status int, method, path string, body any, bearer string, hdrs ...string) resp {
	s.t.Helper()
	r := s.call(method, path, body, bearer, hdrs...)
	if r.Status != status {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

var data = controltest.Data

// user creates a verified account through the admin API and logs it in.
func (s *server) user(name string) (id, token string) {
	s.t.Helper()
	email := name + "@example.com"
	r := s.must(201, "POST", "/api/v1/admin/users", map[string]any{"email": email, "password": userPass, "verified": true}, s.admin)
	return data(r)["id"].(string), s.Login(email, userPass)
}

// events stops the server and reads its event log from the store.
func (s *server) events() []events.Event {
	s.t.Helper()
	var out []events.Event
	if err := s.Store().View(func(tx *store.Tx) error {
		var err error
		out, err = events.List(tx)
		return err
	}); err != nil {
		s.t.Fatal(err)
	}
	return out
}

// storedCredentials stops the server and reads what its store holds for
// container id's proxy credentials.
func (s *server) storedCredentials(id string) string {
	s.t.Helper()
	var raw string
	if err := s.Store().View(func(tx *store.Tx) error {
		raw = string(tx.GetRaw("projects_network_creds", id))
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
	return raw
}
