package deckhand_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
)

// middle is a man in the middle for the control plane: it keeps the
// last genuine answer to a path ending in suffix and, once told, serves
// that answer again in place of asking, or passes answers on with
// another status.
type middle struct {
	srv    *httptest.Server
	suffix string

	mu       sync.Mutex
	last     *recorded
	replay   bool
	relabel  int // pass answers on with this status (0: as they came)
	tampered int
}

type recorded struct {
	status int
	header http.Header
	body   []byte
}

func newMiddle(t *testing.T, target, suffix string) *middle {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	m := &middle{suffix: suffix}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if !strings.HasSuffix(r.Request.URL.Path, suffix) {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.mu.Lock()
		m.last = &recorded{status: r.StatusCode, header: r.Header.Clone(), body: body}
		if m.relabel != 0 {
			r.StatusCode, r.Status = m.relabel, ""
			m.tampered++
		}
		m.mu.Unlock()
		return nil
	}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		a := m.last
		replay := m.replay && a != nil && strings.HasSuffix(r.URL.Path, suffix)
		if replay {
			m.tampered++
		}
		m.mu.Unlock()
		if !replay {
			rp.ServeHTTP(w, r)
			return
		}
		for k, v := range a.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// An answer signed for an earlier request to the same path, replayed
// within the replay window, carries a valid X-Service-Signature: only the
// binding to this request's nonce tells it apart. So does an answer
// passed on with another status than the one signed.
func TestAReplayedOrRelabelledAnswerIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := signedIn(t, "binding@example.com", "")
	m := newMiddle(t, control.URL, "/users/auth/me")
	c, err := deckhand.New(m.srv.URL, deckhand.Options{Token: good.Token()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Me(ctx); err != nil {
		t.Fatalf("through an honest middle: %v", err)
	}
	m.mu.Lock()
	m.replay = true
	m.mu.Unlock()
	me, err := c.Me(ctx)
	var se *deckhand.SignatureError
	if !errors.As(err, &se) || !errors.Is(err, deckhand.ErrBadSignature) || me != nil {
		t.Fatalf("a replayed answer: %v %+v", err, me)
	}

	// A genuine 404 passed on as 200.
	m.mu.Lock()
	m.replay, m.relabel = false, http.StatusOK
	m.mu.Unlock()
	var out map[string]any
	err = c.Call(ctx, http.MethodGet, "/api/v1/nothing-here/users/auth/me", nil, nil, &out)
	if !errors.As(err, &se) || !errors.Is(err, deckhand.ErrStatusMismatch) {
		t.Fatalf("a 404 relabelled 200: %v %v", err, out)
	}
	m.mu.Lock()
	n := m.tampered
	m.mu.Unlock()
	if n != 2 {
		t.Fatalf("the middle tampered %d times, want 2", n)
	}
}
