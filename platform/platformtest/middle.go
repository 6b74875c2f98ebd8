package platformtest

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Middle is a man in the middle for tests: a reverse proxy to a server
// that passes everything on until told to tamper with the answers to the
// paths ending in a suffix. It keeps the last answer of each status it
// passed on for those paths (headers and body as they came), so a test
// can replay a genuine, signed answer later or elsewhere.
type Middle struct {
	URL string

	suffix   string
	tampered atomic.Int64

	mu     sync.Mutex
	last   map[int]*Answer
	from   int     // relabel answers of this status...
	to     int     // ...as this one; 0: no relabelling
	replay *Answer // serve this instead of asking; nil: ask
}

// Answer is one HTTP answer as it came.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// NewMiddle starts a middle in front of target (a base URL) watching the
// paths that end in suffix; it stops with the test.
func NewMiddle(t testing.TB, target, suffix string) *Middle {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	m := &Middle{suffix: suffix, last: map[int]*Answer{}}
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
		m.last[r.StatusCode] = &Answer{Status: r.StatusCode, Header: r.Header.Clone(), Body: body}
		if m.to != 0 && r.StatusCode == m.from {
			r.StatusCode, r.Status = m.to, ""
			m.tampered.Add(1)
		}
		m.mu.Unlock()
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		a := m.replay
		if !strings.HasSuffix(r.URL.Path, suffix) {
			a = nil
		}
		m.mu.Unlock()
		if a == nil {
			rp.ServeHTTP(w, r)
			return
		}
		m.tampered.Add(1)
		maps.Copy(w.Header(), a.Header)
		w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)))
		w.WriteHeader(a.Status)
		_, _ = w.Write(a.Body)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// Last is a copy of the last answer of status passed on for the watched
// paths, nil when none was.
func (m *Middle) Last(status int) *Answer {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.last[status]
	if a == nil {
		return nil
	}
	return &Answer{Status: a.Status, Header: a.Header.Clone(), Body: bytes.Clone(a.Body)}
}

// Relabel passes answers of status from on as status to, headers and
// body unchanged.
func (m *Middle) Relabel(from, to int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.from, m.to, m.replay = from, to, nil
}

// Replay answers the watched paths with a, without asking the server.
func (m *Middle) Replay(a *Answer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replay, m.to = a, 0
}

// Pass stops tampering.
func (m *Middle) Pass() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replay, m.to = nil, 0
}

// Tampered counts the answers relabelled or replayed so far.
func (m *Middle) Tampered() int64 { return m.tampered.Load() }
