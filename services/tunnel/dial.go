package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"deckhand/platform/clientip"
	"deckhand/platform/fault"
)

// dial connects to port inside the container, after the deny list. A port
// nothing listens on is refused at once by the kernel, so the 502 is quick;
// a filtered one waits at most --tunnel-dial-timeout.
func (s *Service) dial(ctx context.Context, port int) (net.Conn, string, error) {
	if err := s.checkPort(port); err != nil {
		return nil, "", err
	}
	targets := s.scanner.target(port)
	d := net.Dialer{Timeout: s.set.DialTimeout}
	start := time.Now()
	var conn net.Conn
	var err error
	var target string
	for _, target = range targets {
		if conn, err = d.DialContext(ctx, "tcp", target); err == nil || ctx.Err() != nil {
			break
		}
	}
	s.metrics.dialSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		reason := "other"
		why := "the connection failed"
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			reason, why = "refused", "nothing listens there (connection refused)"
		case errors.As(err, &ne) && ne.Timeout():
			reason, why = "timeout", "no answer within "+s.set.DialTimeout.String()
		case errors.Is(err, context.Canceled):
			reason, why = "other", "the request was cancelled"
		}
		s.metrics.dialErrors.WithLabelValues(strconv.Itoa(port), reason).Inc()
		return nil, target, &fault.Error{Code: CodeUpstreamUnreachable, Field: "port", Details: "port", Cause: err,
			Message: fmt.Sprintf("port: cannot connect to %s: %s", target, why)}
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return conn, target, nil
}

// clientAddr is the caller as the session records it: the peer, or under
// --trust-proxy-headers the client by the rule of package clientip.
func (s *Service) clientAddr(r *http.Request) string {
	if !s.deps.Common.TrustProxyHeaders {
		return r.RemoteAddr
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if ip := clientip.Resolve(peer.Addr(), r.Header.Values(clientip.Header)); ip != peer.Addr().Unmap() {
		return ip.String()
	}
	return r.RemoteAddr
}
