package egress_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"deckhand/agent/egress"
)

// sniffOf runs client against one end of a TCP pair and sniffs the other.
func sniffOf(t *testing.T, client func(c net.Conn)) egress.Hello {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		client(c)
		time.Sleep(50 * time.Millisecond)
	}()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return egress.Sniff(s, 5*time.Second)
}

func TestSniffFindsTheName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, kind, want string
		client           func(net.Conn)
	}{
		{"TLS SNI", "tls", "api.example.com", func(c net.Conn) {
			_ = tls.Client(c, &tls.Config{ServerName: "API.Example.com", InsecureSkipVerify: true}).Handshake()
		}},
		{"TLS without SNI (IP literal)", "tls", "", func(c net.Conn) {
			_ = tls.Client(c, &tls.Config{ServerName: "192.0.2.1", InsecureSkipVerify: true}).Handshake()
		}},
		{"HTTP Host with port", "http", "www.example.org", func(c net.Conn) {
			_, _ = c.Write([]byte("GET /x HTTP/1.1\r\nHost: www.example.org:8080\r\nUser-Agent: t\r\n\r\n"))
		}},
		{"HTTP head in pieces", "http", "a.example", func(c net.Conn) {
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHo"))
			time.Sleep(20 * time.Millisecond)
			_, _ = c.Write([]byte("st: a.example\r\n\r\n"))
		}},
		{"other protocol", "", "", func(c net.Conn) { _, _ = c.Write([]byte{0x00, 0x01, 0x02}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := sniffOf(t, c.client)
			if h.Kind != c.kind || h.Name != c.want {
				t.Fatalf("kind %q name %q, want %q %q", h.Kind, h.Name, c.kind, c.want)
			}
			if len(h.Raw) == 0 {
				t.Fatal("the bytes read were not kept to pass on")
			}
		})
	}
	// The bytes are kept exactly as sent.
	req := "GET / HTTP/1.1\r\nHost: k.example\r\n\r\n"
	if h := sniffOf(t, func(c net.Conn) { _, _ = c.Write([]byte(req)) }); string(h.Raw) != req {
		t.Fatalf("raw %q", h.Raw)
	}
	// A server-first protocol: nothing arrives, the wait ends.
	h := sniffOf(t, func(c net.Conn) { time.Sleep(300 * time.Millisecond) })
	if h.Kind != "" || h.Name != "" {
		t.Fatalf("%+v", h)
	}
}
