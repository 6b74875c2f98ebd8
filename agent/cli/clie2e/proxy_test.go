package clie2e_test

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy stands between the CLI and a server and misbehaves on request: it
// alters one byte of an answer, or stalls or breaks one transfer after a
// number of bytes. It counts what it sees.
type proxy struct {
	srv *httptest.Server
	rp  *httputil.ReverseProxy

	mu       sync.Mutex
	upstream *url.URL
	tamper   map[string]bool // paths whose answers get a byte changed
	paths    []string        // every request path, in order
	ranges   []string        // Range headers of requests that had one

	// At most one fault is armed at a time; it fires once.
	fault     *fault
	triggered chan struct{} // closed when the armed fault fires
}

// fault describes one misbehaviour: after `after` bytes of request bodies
// (upload) or of answers (download) to paths under pathPrefix, counted
// across requests (an upload is several PATCHes), stall until the test
// releases it, or break the connection.
type fault struct {
	pathPrefix string
	request    bool // the request body, else the answer's
	after      int64
	stall      bool // else break
	released   chan struct{}
	fired      atomic.Bool
	n          atomic.Int64 // bytes passed so far
}

func newProxy(t testing.TB, upstream string) *proxy {
	p := &proxy{tamper: map[string]bool{}}
	p.setUpstream(t, upstream)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p.mu.Lock()
			u := p.upstream
			p.mu.Unlock()
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: p.modify,
		ErrorLog:       log.New(io.Discard, "", 0), // the faults are on purpose
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.release()
		p.srv.Close()
	})
	return p
}

func (p *proxy) URL() string { return p.srv.URL }

func (p *proxy) setUpstream(t testing.TB, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.upstream = u
	p.mu.Unlock()
}

// alter makes every answer to path arrive with one byte changed.
func (p *proxy) alter(path string, on bool) {
	p.mu.Lock()
	p.tamper[path] = on
	p.mu.Unlock()
}

// arm sets the fault; the channel it answers closes when it fires.
func (p *proxy) arm(f *fault) <-chan struct{} {
	f.released = make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
	p.triggered = make(chan struct{})
	return p.triggered
}

// release lets a stalled transfer go on (to its end, or to the error the
// departed client leaves) and disarms the fault.
func (p *proxy) release() {
	p.mu.Lock()
	f := p.fault
	p.fault = nil
	p.mu.Unlock()
	if f != nil {
		select {
		case <-f.released:
		default:
			close(f.released)
		}
	}
}

// count is how many requests went to path.
func (p *proxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range p.paths {
		if q == path {
			n++
		}
	}
	return n
}

func (p *proxy) rangesSeen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ranges...)
}

// armed answers the fault for r, if one is armed for it and has not fired.
func (p *proxy) armed(path string, request bool) (*fault, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fault
	if f == nil || !strings.HasPrefix(path, f.pathPrefix) || f.request != request || f.fired.Load() {
		return nil, nil
	}
	return f, p.triggered
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.paths = append(p.paths, r.URL.Path)
	if h := r.Header.Get("Range"); h != "" {
		p.ranges = append(p.ranges, h)
	}
	p.mu.Unlock()
	if f, trig := p.armed(r.URL.Path, true); f != nil && r.Body != nil {
		r.Body = &faultyReader{r: r.Body, f: f, trig: trig}
	}
	p.rp.ServeHTTP(w, r)
}

func (p *proxy) modify(resp *http.Response) error {
	path := resp.Request.URL.Path
	p.mu.Lock()
	tamper := p.tamper[path]
	p.mu.Unlock()
	if tamper {
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		raw = flipLetter(raw)
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		resp.ContentLength = int64(len(raw))
		return nil
	}
	if f, trig := p.armed(path, false); f != nil {
		resp.Body = &faultyReader{r: resp.Body, f: f, trig: trig}
	}
	return nil
}

// flipLetter changes the case of the last ASCII letter of b, so the body
// stays as well-formed as it was (JSON stays JSON) but is not the body
// that was signed.
func flipLetter(b []byte) []byte {
	for i := len(b) - 1; i >= 0; i-- {
		if c := b[i]; (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			b[i] ^= 0x20
			return b
		}
	}
	if len(b) > 0 {
		b[len(b)/2] ^= 1
	}
	return b
}

var errBroken = errors.New("proxy: connection broken on purpose")

// faultyReader passes bytes until the fault's count reaches `after`, then
// stalls until released (and then fails: the client is gone by then) or
// fails at once.
type faultyReader struct {
	r    io.ReadCloser
	f    *fault
	trig chan struct{}
}

func (fr *faultyReader) Read(b []byte) (int, error) {
	left := fr.f.after - fr.f.n.Load()
	if left <= 0 {
		if fr.f.fired.CompareAndSwap(false, true) {
			close(fr.trig)
		}
		if fr.f.stall {
			<-fr.f.released
		}
		return 0, errBroken
	}
	if int64(len(b)) > left {
		b = b[:left]
	}
	n, err := fr.r.Read(b)
	fr.f.n.Add(int64(n))
	return n, err
}

func (fr *faultyReader) Close() error { return fr.r.Close() }
