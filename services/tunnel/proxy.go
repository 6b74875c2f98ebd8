package tunnel

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// The reverse proxy: /proxy/{port}/rest goes to http://<port's address>/rest.
// Only the /proxy/{port} prefix is taken off the path (X-Forwarded-Prefix
// says what was taken, after any prefix the gateway took), Host is the
// app's own address (localhost:{port}) and the client's host and scheme
// go in X-Forwarded-Host and -Proto; the query, the body and every
// response header and body pass untouched, so nothing the app did not ask
// for is rewritten. The credential the gateway consumed never arrives
// here (the gateway drops it). WebSocket upgrades pass
// through (httputil.ReverseProxy hijacks the client connection), so a dev
// server's hot reload works. Every upstream connection is a session of kind
// "proxy" (keep-alive is off upstream: one request, one connection, so a
// session is exactly what one request or one upgraded socket forwards).

type proxyCtxKey struct{}

// proxyReq is what the transport's dialler and the rewrite need of the
// request.
type proxyReq struct {
	port   int
	client string
	// viaGateway: the agent's gateway sent the request (platform.ViaGateway),
	// so its X-Forwarded-* describe the client.
	viaGateway bool
	err        error // why the dial failed, for the error handler
	code       int   // the upstream's status
}

func (s *Service) newProxy() *httputil.ReverseProxy {
	tr := &http.Transport{
		DialContext:           s.proxyDial,
		DisableKeepAlives:     true,
		DisableCompression:    true, // pass Accept-Encoding and bodies as they are
		ResponseHeaderTimeout: 0,
		ForceAttemptHTTP2:     false,
		MaxIdleConnsPerHost:   -1,
	}
	return &httputil.ReverseProxy{
		Transport:     tr,
		FlushInterval: -1, // stream (server-sent events, chunked hot-reload channels)
		Rewrite: func(pr *httputil.ProxyRequest) {
			pq, _ := pr.In.Context().Value(proxyCtxKey{}).(*proxyReq)
			// The client's host and scheme go in X-Forwarded-Host and
			// -Proto: behind the gateway its own account of the client
			// (the request reached this service with the service's
			// address as Host), else this request's.
			pr.SetXForwarded()
			if pq != nil && pq.viaGateway {
				for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
					if v := pr.In.Header.Get(h); v != "" {
						pr.Out.Header.Set(h, v)
					}
				}
			}
			pr.Out.Header.Del(platform.AuthorizedPortHeader) // the gateway's word to this service
			// Host is the app's own address, as a browser on the
			// machine would send it: dev servers check it against their
			// allowed hosts (localhost passes), and the client's host
			// is in X-Forwarded-Host.
			if pq != nil {
				pr.Out.Host = "localhost:" + strconv.Itoa(pq.port)
			}
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "upstream" // the dialler picks the address
			pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath
		},
		ModifyResponse: func(resp *http.Response) error {
			if pq, _ := resp.Request.Context().Value(proxyCtxKey{}).(*proxyReq); pq != nil {
				pq.code = resp.StatusCode
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if pq, _ := r.Context().Value(proxyCtxKey{}).(*proxyReq); pq != nil && pq.err != nil {
				reqpolicy.WriteHTTPError(w, pq.err)
				return
			}
			if errors.Is(err, context.Canceled) {
				return // the client went away
			}
			reqpolicy.WriteHTTPErrorStatus(w, http.StatusBadGateway,
				fault.Errorf(fault.CodeBackend, "the upstream answered no valid HTTP response"))
		},
	}
}

// serveProxyRoot answers /proxy/{port} with a 308 to /proxy/{port}/ (the
// router also sends /proxy/{port}/ here: it ignores a trailing slash).
func (s *Service) serveProxyRoot(w http.ResponseWriter, r *http.Request, in ProxyRoot) {
	if strings.HasSuffix(r.URL.Path, "/") {
		if _, err := proxyPort(in.Port); err != nil {
			reqpolicy.WriteHTTPError(w, err)
			return
		}
		s.serveProxy(w, r, ProxyRequest{Port: in.Port})
		return
	}
	prefix := r.Header.Get("X-Forwarded-Prefix")
	if !strings.HasPrefix(prefix, "/") || strings.HasPrefix(prefix, "//") || strings.ContainsAny(prefix, "\\\r\n") {
		prefix = "" // a path only: never a redirect to another host
	}
	loc := strings.TrimSuffix(prefix, "/") + r.URL.EscapedPath() + "/"
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusPermanentRedirect)
}

// serveProxy strips /proxy/{port} and hands the request to the reverse proxy.
func (s *Service) serveProxy(w http.ResponseWriter, r *http.Request, in ProxyRequest) {
	s.forwardTo(w, r, in, "/proxy/", true)
}

// servePreview strips /preview/{port}: the app is at the root of the
// client's host, so no prefix is added for it.
func (s *Service) servePreview(w http.ResponseWriter, r *http.Request, in ProxyRequest) {
	s.forwardTo(w, r, in, "/preview/", false)
}

// forwardTo takes route and the port off the path and hands the request to
// the reverse proxy; addPrefix says whether the app learns what was taken.
func (s *Service) forwardTo(w http.ResponseWriter, r *http.Request, in ProxyRequest, route string, addPrefix bool) {
	portStr := in.Port
	port, _ := proxyPort(portStr) // checked by ValidateParams
	// The path as it came (not in.Path, which the router unescaped): the
	// app gets the request's own bytes.
	rest, ok := strings.CutPrefix(r.URL.Path, route)
	if !ok {
		reqpolicy.WriteHTTPError(w, fault.NotFound("route", r.URL.Path))
		return
	}
	_, path, _ := strings.Cut(rest, "/")
	if err := s.checkAdmitted(r, port); err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	if err := s.checkPort(port); err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	prefix := route + portStr
	pq := &proxyReq{port: port, client: s.clientAddr(r), viaGateway: platform.ViaGateway(r.Context())}
	// A context of our own, not the request's: the host's request context
	// is recycled once an upgrade hijacks the connection, while the proxy
	// goes on copying.
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), proxyCtxKey{}, pq))
	defer cancel()
	out := r.Clone(ctx)
	out.URL.Path = "/" + path
	if r.URL.RawPath != "" {
		if raw, ok := strings.CutPrefix(r.URL.RawPath, prefix); ok {
			out.URL.RawPath = cmp.Or(raw, "/")
		}
	}
	if addPrefix {
		out.Header.Set("X-Forwarded-Prefix", strings.TrimSuffix(r.Header.Get("X-Forwarded-Prefix"), "/")+prefix)
	}
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	s.proxy.ServeHTTP(rec, out)
	code := rec.status()
	if pq.code == http.StatusSwitchingProtocols {
		code = pq.code
	}
	s.metrics.proxySeconds.WithLabelValues(portStr, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
}

// proxyDial connects the transport to the request's port and records the
// connection as a session.
func (s *Service) proxyDial(ctx context.Context, _, _ string) (net.Conn, error) {
	pq, _ := ctx.Value(proxyCtxKey{}).(*proxyReq)
	if pq == nil {
		return nil, errors.New("tunnel: proxy dial without a request")
	}
	conn, target, err := s.dial(ctx, pq.port)
	if err != nil {
		pq.err = err
		return nil, err
	}
	pc := &proxyConn{Conn: conn}
	ss, err := s.open("proxy", pq.port, target, pq.client, func(string) { _ = conn.Close() })
	if err != nil {
		_ = conn.Close()
		pq.err = err
		return nil, err
	}
	pc.ss, pc.svc = ss, s
	return pc, nil
}

// proxyConn counts an upstream connection's bytes into its session and
// ends the session when it closes.
type proxyConn struct {
	net.Conn
	ss   *session
	svc  *Service
	once sync.Once
}

func (c *proxyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.ss.addOut(n)
	}
	return n, err
}

func (c *proxyConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.ss.addIn(n)
	}
	return n, err
}

func (c *proxyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.svc.finish(c.ss) })
	return err
}

// CloseWrite lets the proxy half-close an upgraded connection.
func (c *proxyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

func (r *statusRecorder) status() int { return cmp.Or(r.code, http.StatusOK) }

// Unwrap lets http.ResponseController reach Flush and Hijack beneath.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
