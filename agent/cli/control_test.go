package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"

	"deckhand/platform/platformtest"
	"deckhand/platform/signing"
)

// fakeControl is a control plane that signs and binds its answers like
// the real one, with one session whose access token has expired.
func fakeControl(t *testing.T) *httptest.Server {
	t.Helper()
	ks := platformtest.SigningKeys(t)
	reply := func(w http.ResponseWriter, r *http.Request, status int, env map[string]any) {
		env["statusCode"] = status
		body, _ := json.Marshal(env)
		now := time.Now().Unix()
		kid, sig := ks.Sign(signing.SignedData(now, body))
		w.Header().Set(signing.Header, signing.FormatHeader(now, kid, r.URL.Path, sig))
		if nonce := r.Header.Get(signing.NonceHeader); nonce != "" {
			kid, sig := ks.Sign(signing.BindingData(now, signing.Binding{Status: status, Method: r.Method, Path: r.URL.Path, Nonce: nonce, Body: body}))
			w.Header().Set(signing.BindingHeader, signing.FormatBinding(now, kid, status, sig))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+signing.PublicKeyPath, func(w http.ResponseWriter, r *http.Request) {
		reply(w, r, 200, map[string]any{"message": "keys", "data": ks.PublicSet()})
	})
	mux.HandleFunc("GET /api/v1/users/auth/me", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer access-2" {
			reply(w, r, 401, map[string]any{"error": "Unauthorized", "message": "Token expired"})
			return
		}
		reply(w, r, 200, map[string]any{"message": "User profile", "data": map[string]any{"id": "u1", "email": "a@example.com"}})
	})
	mux.HandleFunc("POST /api/v1/users/auth/refresh", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			RefreshToken string `json:"refreshToken"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.RefreshToken != "refresh-1" || r.Header.Get("Authorization") != "Bearer "+in.RefreshToken {
			reply(w, r, 401, map[string]any{"error": "Unauthorized", "message": "Invalid refresh token"})
			return
		}
		reply(w, r, 200, map[string]any{"message": "Refreshed", "data": map[string]any{"token": "access-2", "refreshToken": "refresh-2"}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		reply(w, r, 404, map[string]any{"error": "Not Found", "message": "no route " + r.URL.Path})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// An expired access token is refreshed once (the refresh token in the
// header and the body), the call is sent again, and the new pair is saved;
// a refresh that fails asks for a new login.
func TestRefreshOnExpiredSession(t *testing.T) {
	t.Parallel()
	srv := fakeControl(t)
	for _, tc := range []struct {
		name, refresh, wantErr string
	}{
		{"refreshed", "refresh-1", ""},
		{"refresh refused", "refresh-0", "run `deckhand login"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config.json")
			cfg := &Config{ControlURL: srv.URL, Credential: &Credential{Kind: KindSession, Token: "access-1", RefreshToken: tc.refresh}}
			c, err := newControl(srv.URL, path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.send(context.Background(), deckhand.Request{Method: "GET", Path: "/api/v1/users/auth/me"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%v", err)
				}
				return
			}
			if err != nil || !strings.Contains(string(resp.Data), `"u1"`) {
				t.Fatalf("%v %v", resp, err)
			}
			saved, err := LoadConfig(path)
			if err != nil || saved.Credential.Token != "access-2" || saved.Credential.RefreshToken != "refresh-2" {
				t.Fatalf("saved %+v %v", saved.Credential, err)
			}
		})
	}
}

// The error envelope is shown with the server's message, code and status,
// and stays a *deckhand.Error underneath; a bad URL is refused.
func TestErrorEnvelope(t *testing.T) {
	t.Parallel()
	srv := fakeControl(t)
	c, err := newControl(srv.URL+"/", filepath.Join(t.TempDir(), "config.json"), &Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.send(context.Background(), deckhand.Request{Method: "GET", Path: "/api/v1/nothing"})
	var apiErr *deckhand.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Message != "no route /api/v1/nothing" ||
		err.Error() != "no route /api/v1/nothing (Not Found, HTTP 404)" {
		t.Fatalf("%#v", err)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://h/?q=1", "localhost:8080"} {
		if _, err := newControl(bad, filepath.Join(t.TempDir(), "config.json"), &Config{}); err == nil {
			t.Errorf("control URL %q accepted", bad)
		}
	}
}
