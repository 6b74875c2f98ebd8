package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"deckhand/platform"
)

// dial connects to port inside the container, after the deny list. A port
// nothing listens on is refused at once by the kernel, so the 502 is quick;
// a filtered one waits at most --tunnel-dial-timeout.
func (s *Service) dial(ctx context.Context, port int) (net.Conn, string, error) {
	if err := s.checkPort(port); err != nil {
		return nil, "", err
	}
	target := s.scanner.target(port)
	d := net.Dialer{Timeout: s.set.DialTimeout}
	start := time.Now()
	conn, err := d.DialContext(ctx, "tcp", target)
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
		return nil, target, &platform.Error{Code: CodeUpstreamUnreachable, Field: "port", Details: "port", Cause: err,
			Message: fmt.Sprintf("port: cannot connect to %s: %s", target, why)}
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return conn, target, nil
}

// clientAddr is the caller as the session records it: the peer, or the
// right-most X-Forwarded-For hop from a trusted local proxy.
func (s *Service) clientAddr(r *http.Request) string {
	peer := r.RemoteAddr
	if !s.deps.Common.TrustProxyHeaders {
		return peer
	}
	host, _, err := net.SplitHostPort(peer)
	if err != nil {
		host = peer
	}
	if ip := net.ParseIP(host); ip == nil || !(ip.IsLoopback() || ip.IsPrivate()) {
		return peer
	}
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		last := xff[len(xff)-1]
		for i := len(last) - 1; i >= 0; i-- {
			if last[i] == ',' {
				last = last[i+1:]
				break
			}
		}
		if ip := net.ParseIP(trimSpace(last)); ip != nil {
			return ip.String()
		}
	}
	return peer
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
