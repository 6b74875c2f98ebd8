package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"deckhand/platform/connlimit"
	"deckhand/platform/netconf"
	"deckhand/platform/procnet"
	"deckhand/platform/splice"
)

func (e *Engine) acceptLoop(l net.Listener) {
	var b connlimit.Backoff
	for {
		c, err := l.Accept()
		if err != nil {
			select {
			case <-e.stopped:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of fds and the like: back off, never stop serving.
			e.warnEvery("egress forwarder accept failing; retrying", map[string]any{"error": err.Error()})
			if !b.Wait(e.stopped) {
				return
			}
			continue
		}
		b.Reset()
		if !e.track(c) {
			c.Close()
			return
		}
		e.conns.Go(func() {
			defer e.untrack(c)
			e.forward(c.(*net.TCPConn), l.Addr())
		})
	}
}

// reset closes c with an RST, so the client fails at once instead of
// seeing a clean end of stream.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// forward carries one redirected connection to its original destination
// through the upstream in force, or refuses it.
func (e *Engine) forward(c *net.TCPConn, self net.Addr) {
	a := e.cur.Load()
	dst, err := originalDst(c)
	if err != nil || a == nil || a.up == nil {
		// Not redirected (someone connected to the forwarder itself) or
		// the rules were just removed: nothing to carry.
		reset(c)
		return
	}
	if sa, ok := self.(*net.TCPAddr); ok && dst.Addr() == sa.AddrPort().Addr().Unmap() && dst.Port() == sa.AddrPort().Port() {
		reset(c)
		return
	}
	// The local user who connected (the client socket's owner, read
	// from the kernel's socket table): one user cannot take every
	// descriptor the agent has, nor every slot.
	key := ""
	if uid, ok, err := procnet.Owner(c.RemoteAddr().(*net.TCPAddr).AddrPort(), dst); err == nil && ok {
		key = strconv.FormatUint(uint64(uid), 10)
	}
	if !e.fwdLimit.Acquire(key) {
		e.warnEvery("egress connection cap reached; new connections are reset", map[string]any{
			"uid": key, "cap": e.fwdLimit.Total, "cap_per_user": e.fwdLimit.PerKey})
		reset(c)
		return
	}
	defer e.fwdLimit.Release(key)
	d := netconf.Decision{Protocol: "tcp", Destination: dst.String(), Via: a.up.Via()}
	now := e.opt.Clock.Now()
	resolved := e.names.lookup(now, dst.Addr())
	if len(resolved) > 0 {
		d.Name = resolved[0]
	}
	var head []byte
	if a.c.Lists.Active() {
		h := Sniff(c, e.opt.SniffWait)
		head = h.Raw
		if h.Name != "" {
			d.Name = h.Name
		}
		v := a.c.Lists.Decide(dst.Addr(), h.Name, resolved)
		if h.Unreadable {
			// What a server would read there is unknown: never fall
			// back to the address.
			v = netconf.Verdict{Allowed: false, Reason: h.Kind + " start whose name cannot be read"}
		}
		if !v.Allowed {
			d.Outcome, d.Reason = netconf.OutcomeDenied, v.Reason
			e.decide(d)
			reset(c)
			return
		}
		d.Reason = v.Reason
	}
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	go func() {
		select {
		case <-e.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	up, err := a.up.Dial(ctx, dst.String())
	cancel()
	if err != nil {
		d.Outcome, d.Reason = netconf.OutcomeDenied, err.Error()
		e.decide(d)
		e.setStatus(func(s *netconf.Status) { s.Error = err.Error() })
		reset(c)
		return
	}
	if d.Via != "" {
		d.Outcome = netconf.OutcomeProxied
	} else {
		d.Outcome = netconf.OutcomeAllowed
	}
	e.decide(d)
	if !e.track(up) {
		up.Close()
		reset(c)
		return
	}
	defer e.untrack(up)
	if len(head) > 0 {
		if _, err := up.Write(head); err != nil {
			up.Close()
			reset(c)
			return
		}
	}
	pipe(c, up)
}

type closeWriter interface{ CloseWrite() error }

// pipe copies both ways until both ends finished (half-closes passed on),
// then closes both. Between two *net.TCPConn the copy splices (platform/splice).
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, err := splice.Copy(dst, src)
		if cw, ok := dst.(closeWriter); ok && err == nil {
			_ = cw.CloseWrite()
		} else {
			// An error one way ends both.
			_ = dst.Close()
			_ = src.Close()
		}
	}
	go cp(a, b)
	cp(b, a)
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
}

// attribute records a DNS answer's addresses against the question.
func (e *Engine) attribute(name string, addrs []netip.Addr, ttl time.Duration) {
	now := e.opt.Clock.Now()
	for _, a := range addrs {
		e.names.add(now, a, name, ttl)
	}
}
