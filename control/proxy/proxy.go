// Package proxy is the platform proxy: it serves every container's
// per-service URL, `<project_id>-<container_id>-<service>-<n>.<server_name>.<domain>`,
// and its port previews (service `p<port>`), by handing the request to that
// container's agent gateway over the runtime's network with the Host kept,
// so the agent's own routing and proxy permissions judge it. It reads the
// Host with the same parser the agent uses (platform/hostroute), wakes a
// stopped container whose autostart is on, and bounds what one container
// or one client can hold.
//
// On plain HTTP a lean front (front.go) forwards the plain requests (a
// GET or HEAD without a body to a running container) in the goroutine
// that reads the client, and hands everything else, with the rest of its
// connection, to a net/http server around httputil.ReverseProxy, which
// also serves TLS. Either way WebSockets, server-sent events, streamed
// bodies and Range pass through unbuffered, hop-by-hop headers are
// dropped and X-Forwarded-For/Host/Proto set.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"deckhand/control/agentservices"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/hostroute"
)

// Container is what the proxy needs to know of a container.
type Container struct {
	ID        string
	ProjectID string
	// Status is the record's lifecycle state (running, stopped, paused,
	// creating, failed, deleting).
	Status string
	Reason string
	// Autostart lets a request wake the container when it is stopped
	// or paused.
	Autostart bool
	// Addr is where the agent's gateway answers (host:port) while it runs.
	Addr string
}

// Catalog is the proxy's view of the containers.
type Catalog interface {
	// Find answers the container a Host prefix `<project_id>-<container_id>`
	// names on server, or a fault.NotFound.
	Find(ctx context.Context, prefix, server string) (Container, error)
	// Wake starts (or resumes) the container and returns once it asked
	// the engine; Find then shows it running when its agent answers.
	Wake(ctx context.Context, id string) error
}

// Changes is what a Catalog may add: a channel that receives when
// container id's record changes in this process, and its release. A
// woken container's wait then reads the record when it changes, and only
// now and then otherwise (for a change another replica makes).
type Changes interface {
	Changed(id string) (<-chan struct{}, func())
}

// Schedules of a wake's wait: without Changes the record is read every
// wakePoll, with them every wakeRecheck.
const (
	wakePoll    = 25 * time.Millisecond
	wakeRecheck = 250 * time.Millisecond
)

// Config is the proxy's settings.
type Config struct {
	// Domain is --container-domain.
	Domain string
	// WakeTimeout bounds how long a request waits for a woken container.
	WakeTimeout time.Duration
	// MaxConnsPerContainer bounds the connections to one container's
	// agent at once (0: 256); requests past it wait, then get 503.
	MaxConnsPerContainer int
	// MaxRequestsPerSecond bounds the requests per second to one
	// container (0: no bound); past it, 429 with Retry-After.
	MaxRequestsPerSecond int
	// HeaderTimeout and IdleTimeout of the client side.
	HeaderTimeout time.Duration
	IdleTimeout   time.Duration
	Logger        *slog.Logger
}

// Proxy serves the container hosts.
type Proxy struct {
	cfg   Config
	cat   Catalog
	known []string

	found *foundCache // nil when the catalog signals no changes

	mu   sync.Mutex
	pool map[string]*upstream // container id → its transport
}

// upstream is one container's pooled transport and its limits.
type upstream struct {
	addr  string
	tr    *agentTransport
	rp    *httputil.ReverseProxy
	limit *rateWindow
}

// New makes a proxy over cat.
func New(cfg Config, cat Catalog) *Proxy {
	if cfg.WakeTimeout <= 0 {
		cfg.WakeTimeout = 30 * time.Second
	}
	if cfg.MaxConnsPerContainer <= 0 {
		cfg.MaxConnsPerContainer = 256
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = platform.DefaultHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 120 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	known := slices.Clone(agentservices.Names)
	// Longest first, so a service whose name ends another's wins.
	slices.SortFunc(known, func(a, b string) int { return len(b) - len(a) })
	p := &Proxy{cfg: cfg, cat: cat, known: known, pool: map[string]*upstream{}}
	if ch, ok := cat.(Changes); ok {
		p.found = &foundCache{changes: ch, m: map[foundKey]*foundEntry{}}
	}
	return p
}

// Server is an http.Server for the proxy with its timeouts; the caller
// serves it on its own listener: plain HTTP through Serve, TLS with the
// Server's own Serve.
func (p *Proxy) Server() *http.Server {
	return &http.Server{Handler: p, ConnContext: withConn, ReadHeaderTimeout: p.cfg.HeaderTimeout, IdleTimeout: p.cfg.IdleTimeout,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(p.cfg.Logger.Handler(), slog.LevelDebug)}
}

// ServeHTTP routes one request by its Host.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hr, ok := hostroute.Parse(r.Host, p.cfg.Domain, p.known)
	if !ok {
		writeError(w, http.StatusNotFound, "no container answers at "+strconv.Quote(hostroute.HostOnly(r.Host))+
			": use <project_id>-<container_id>-<service>-1.<server_name>."+p.cfg.Domain)
		return
	}
	if hr.Instance != 1 {
		writeError(w, http.StatusNotFound, "instance "+strconv.Itoa(hr.Instance)+" of service "+hr.Service+
			" does not exist (1 is the only instance)")
		return
	}
	ctx := r.Context()
	c, err := p.found.find(ctx, p.cat, hr.Prefix, hr.Server)
	if err != nil {
		p.writeFault(w, err)
		return
	}
	switch c.Status {
	case "running":
	case "stopped", "paused", "creating":
		if c.Status != "creating" && !c.Autostart {
			writeError(w, http.StatusServiceUnavailable, "container "+c.ID+" is "+c.Status+
				" and autostart is off: start it (deckhand containers start "+c.ID+")")
			return
		}
		if c, ok = p.wake(w, r, c, hr.Server); !ok {
			return
		}
		defer func(woke time.Time) {
			p.cfg.Logger.Debug("platform proxy: answered after the wake", "container", c.ID,
				"ms", time.Since(woke).Milliseconds())
		}(time.Now())
	case "failed":
		reason := c.Reason
		if reason == "" {
			reason = "no reason recorded"
		}
		writeError(w, http.StatusBadGateway, "container "+c.ID+" failed: "+reason)
		return
	default:
		writeError(w, http.StatusNotFound, "container "+c.ID+" is "+c.Status)
		return
	}
	if c.Addr == "" {
		writeError(w, http.StatusBadGateway, "container "+c.ID+" is running but the engine gives no address for its agent")
		return
	}
	u := p.upstream(c)
	if u.limit != nil && !u.limit.allow(time.Now()) {
		p.tooMany(w, c)
		return
	}
	u.rp.ServeHTTP(w, withWriter(w, r))
}

// wake starts a stopped container and waits for it, bounded. A browser
// navigation gets a page that retries instead of a held request.
func (p *Proxy) wake(w http.ResponseWriter, r *http.Request, c Container, server string) (Container, bool) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.WakeTimeout)
	defer cancel()
	var changed <-chan struct{}
	every := wakePoll
	if ch, ok := p.cat.(Changes); ok && !navigation(r) {
		var release func()
		changed, release = ch.Changed(c.ID)
		defer release()
		every = wakeRecheck
	}
	if c.Status != "creating" {
		// The connections kept to the agent before it stopped lead
		// nowhere now: the first request after the wake dials.
		p.Forget(c.ID)
		if err := p.cat.Wake(ctx, c.ID); err != nil {
			p.writeFault(w, err)
			return c, false
		}
	}
	asked := time.Since(begin)
	if navigation(r) {
		// The page itself is the wait: it reloads until the agent answers.
		waitingPage(w, c.ID)
		return c, false
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		got, err := p.cat.Find(ctx, c.ProjectID+"-"+c.ID, server)
		if err == nil {
			switch got.Status {
			case "running":
				// Where a wake's time goes, for the debug log.
				p.cfg.Logger.Debug("platform proxy: woke", "container", c.ID, "asked_ms", asked.Milliseconds(),
					"running_ms", time.Since(begin).Milliseconds())
				return got, true
			case "failed":
				writeError(w, http.StatusBadGateway, "container "+c.ID+" failed while starting: "+got.Reason)
				return c, false
			}
		}
		select {
		case <-ctx.Done():
			if r.Context().Err() != nil {
				return c, false // the client went away
			}
			w.Header().Set("Retry-After", "2")
			writeError(w, http.StatusServiceUnavailable, "container "+c.ID+" did not start within "+
				p.cfg.WakeTimeout.String()+"; retry")
			return c, false
		case <-changed:
		case <-tick.C:
		}
	}
}

// navigation says whether r is a browser loading a page.
func navigation(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" {
		return m == "navigate"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func waitingPage(w http.ResponseWriter, id string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "1")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="1">` +
		`<title>Starting…</title><p>Container ` + html.EscapeString(id) + ` is starting; this page reloads by itself.</p>`))
}

// upstream is c's transport, made on first use and replaced when its
// agent's address changes (a restart on another address).
func (p *Proxy) upstream(c Container) *upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u := p.pool[c.ID]; u != nil && u.addr == c.Addr {
		return u
	} else if u != nil {
		u.tr.close()
	}
	tr := newAgentTransport(c.Addr, p.cfg.MaxConnsPerContainer, connWait)
	addr := c.Addr
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = addr
			// The Host names the container and service: the agent routes
			// and judges by it.
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: bufferPool{},
		// Event streams and bodies of unknown length reach the client as
		// they come (ReverseProxy flushes those at once); a body of known
		// length goes out in full writes, or spliced when large.
		FlushInterval: 0,
		ErrorLog:      slog.NewLogLogger(p.cfg.Logger.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			p.agentFailed(w, c, err)
		},
	}
	u := &upstream{addr: addr, tr: tr, rp: rp}
	if p.cfg.MaxRequestsPerSecond > 0 {
		u.limit = &rateWindow{max: p.cfg.MaxRequestsPerSecond}
	}
	p.pool[c.ID] = u
	return u
}

// tooMany answers 429: c is past its requests a second.
func (p *Proxy) tooMany(w http.ResponseWriter, c Container) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusTooManyRequests, "container "+c.ID+" takes at most "+
		strconv.Itoa(p.cfg.MaxRequestsPerSecond)+" requests a second through the proxy")
}

// agentFailed answers an exchange with c's agent that failed before its
// answer: 503 when every connection is taken, else 502.
func (p *Proxy) agentFailed(w http.ResponseWriter, c Container, err error) {
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "container "+c.ID+" has "+strconv.Itoa(p.cfg.MaxConnsPerContainer)+
			" connections open through the proxy, the most it may; retry")
		return
	}
	// The next request reads the record again: the container may have
	// stopped or moved.
	p.found.forget(c.ID)
	writeError(w, http.StatusBadGateway, "the agent of container "+c.ID+" did not answer; retry, or see its status")
}

// bufferPool lends the copy buffers of bodies: 256 KiB, so a bulk
// download costs a few large reads and writes instead of many 32 KiB ones.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

// Forget drops a container's pooled connections (after it is deleted).
func (p *Proxy) Forget(id string) {
	p.found.forget(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if u := p.pool[id]; u != nil {
		u.tr.close()
		delete(p.pool, id)
	}
}

// Close drops every container's pooled connections and kept record.
func (p *Proxy) Close() {
	p.found.close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, u := range p.pool {
		u.tr.close()
		delete(p.pool, id)
	}
}

// rateWindow counts requests in the current second.
type rateWindow struct {
	mu    sync.Mutex
	max   int
	sec   int64
	count int
}

func (l *rateWindow) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := now.Unix(); s != l.sec {
		l.sec, l.count = s, 0
	}
	if l.count >= l.max {
		return false
	}
	l.count++
	return true
}

func (p *Proxy) writeFault(w http.ResponseWriter, err error) {
	e := fault.AsError(err)
	if e.Code == fault.CodeInternal || e.Status() >= 500 && e.Status() != http.StatusServiceUnavailable {
		p.cfg.Logger.Error("platform proxy", "err", err)
	}
	writeError(w, e.Status(), e.Message)
}

// writeError answers the control plane's error envelope.
func writeError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(fault.ErrorEnvelope{StatusCode: status, Error: http.StatusText(status), Message: msg})
}
