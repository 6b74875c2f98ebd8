package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"deckhand/platform/connlimit"

	"deckhand/platform/netconf"
)

// dnsTimeout bounds one upstream exchange.
const dnsTimeout = 5 * time.Second

// startResolver serves DNS on loopback (UDP and TCP, v4 and v6 when the
// forwarder has v6) on one port the rules redirect port 53 to.
func (e *Engine) startResolver() error {
	var lastErr error
	for try := 0; try < 20; try++ {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("egress: resolver: %w", err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		addrs := []string{"127.0.0.1"}
		if e.v6 {
			addrs = append(addrs, "::1")
		}
		servers, err := e.listenDNS(pc, addrs, port)
		if err != nil {
			lastErr = err
			continue
		}
		e.dnsPort = uint16(port)
		e.dns = servers
		return nil
	}
	return fmt.Errorf("egress: resolver: no free port: %w", lastErr)
}

func (e *Engine) listenDNS(pc net.PacketConn, addrs []string, port int) ([]io.Closer, error) {
	var servers []io.Closer
	fail := func(err error) ([]io.Closer, error) {
		pc.Close()
		for _, s := range servers {
			s.Close()
		}
		return nil, err
	}
	h := dns.HandlerFunc(e.serveDNS)
	for i, host := range addrs {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if i > 0 {
			var err error
			if pc, err = net.ListenPacket("udp", addr); err != nil {
				return fail(err)
			}
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fail(err)
		}
		ln = connlimit.Listener(ln, &e.dnsLimit, func(msg string, err error) {
			e.journal("warn", "egress resolver (TCP): "+msg, map[string]any{"error": errString(err), "cap": e.dnsLimit.Total})
		})
		u := &dns.Server{PacketConn: pc, Handler: h}
		t := &dns.Server{Listener: ln, Handler: h}
		servers = append(servers, shutdown{u}, shutdown{t})
		e.conns.Go(func() { _ = u.ActivateAndServe() })
		e.conns.Go(func() { _ = t.ActivateAndServe() })
	}
	return servers, nil
}

type shutdown struct{ s *dns.Server }

func (s shutdown) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.s.ShutdownContext(ctx)
}

func (e *Engine) isExempt(name string) bool {
	for _, n := range e.opt.ExemptNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// serveDNS answers one question: refused when the configuration does not
// let the name out, else the first configured server's answer.
func (e *Engine) serveDNS(w dns.ResponseWriter, q *dns.Msg) {
	if len(q.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeFormatError)
		_ = w.WriteMsg(m)
		return
	}
	qname, _ := netconf.NormalizeName(q.Question[0].Name)
	if qname == "" {
		qname = strings.ToLower(strings.TrimSuffix(q.Question[0].Name, "."))
	}
	a := e.cur.Load()
	exempt := e.isExempt(qname)
	d := netconf.Decision{Protocol: "dns", Name: qname}
	refuse := func(reason string) {
		d.Outcome, d.Reason = netconf.OutcomeDenied, reason
		e.decide(d)
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeRefused)
		if opt := q.IsEdns0(); opt != nil {
			m.SetEdns0(opt.UDPSize(), false)
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeBlocked, ExtraText: reason})
		}
		_ = w.WriteMsg(m)
	}
	switch {
	case a == nil:
		refuse("no configuration in force")
		return
	case exempt:
	case a.up == nil:
		refuse("network type block")
		return
	default:
		if v := a.c.Lists.NameAllowed(qname); !v.Allowed {
			refuse(v.Reason)
			return
		}
	}
	if len(a.c.DNS) == 0 {
		refuse("no dns_servers configured")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dnsTimeout)
	defer cancel()
	_, isTCP := w.RemoteAddr().(*net.TCPAddr)
	var resp *dns.Msg
	var err error
	for _, srv := range a.c.DNS {
		d.Destination = srv.String()
		if a.up != nil && a.up.Via() != "" && !exempt {
			d.Via = a.up.Via()
			resp, err = e.exchangeVia(ctx, a.up, q, srv)
		} else {
			d.Via = ""
			resp, err = e.exchangeDirect(ctx, q, srv, isTCP)
		}
		if err == nil {
			break
		}
	}
	if err != nil {
		d.Outcome, d.Reason = netconf.OutcomeDenied, "no DNS server answered: "+err.Error()
		e.decide(d)
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeServerFailure)
		_ = w.WriteMsg(m)
		return
	}
	var addrs []netip.Addr
	var ttl uint32
	for _, rr := range resp.Answer {
		var ip net.IP
		switch r := rr.(type) {
		case *dns.A:
			ip = r.A
		case *dns.AAAA:
			ip = r.AAAA
		default:
			continue
		}
		if ad, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, ad.Unmap())
			if ttl == 0 || rr.Header().Ttl < ttl {
				ttl = rr.Header().Ttl
			}
		}
	}
	e.attribute(qname, addrs, time.Duration(ttl)*time.Second)
	d.Outcome = netconf.OutcomeAllowed
	if d.Via != "" {
		d.Outcome = netconf.OutcomeProxied
	}
	e.decide(d)
	resp.Id = q.Id
	if !isTCP {
		// Over UDP the answer must fit what the client takes.
		size := dns.MinMsgSize
		if opt := q.IsEdns0(); opt != nil && int(opt.UDPSize()) > size {
			size = int(opt.UDPSize())
		}
		resp.Truncate(size)
	}
	_ = w.WriteMsg(resp)
}

// exchangeVia asks srv over TCP through the proxy: DNS takes the same way
// out as every other connection.
func (e *Engine) exchangeVia(ctx context.Context, up Upstream, q *dns.Msg, srv netip.AddrPort) (*dns.Msg, error) {
	c, err := up.Dial(ctx, srv.String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	co := &dns.Conn{Conn: c}
	if err := co.WriteMsg(q); err != nil {
		return nil, err
	}
	return co.ReadMsg()
}

// exchangeDirect asks srv from a marked socket: UDP, TCP when the answer
// was truncated or the client asked over TCP.
func (e *Engine) exchangeDirect(ctx context.Context, q *dns.Msg, srv netip.AddrPort, tcp bool) (*dns.Msg, error) {
	netw := "udp"
	if tcp {
		netw = "tcp"
	}
	for {
		cl := &dns.Client{Net: netw, Dialer: e.base, Timeout: dnsTimeout}
		r, _, err := cl.ExchangeContext(ctx, q, srv.String())
		if err != nil {
			return nil, err
		}
		if r.Truncated && netw == "udp" {
			netw = "tcp"
			continue
		}
		if r == nil {
			return nil, errors.New("empty answer")
		}
		return r, nil
	}
}
