package mail_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dmail "deckhand/control/mail"
)

func TestDirMailerWritesRFC5322(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "mail")
	var logged bytes.Buffer
	m, err := dmail.New(dmail.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	msg := dmail.Message{To: "ada@example.com", Subject: "Verify\r\nBcc: evil@example.com", Text: "Hello\n\nhttp://x/verify?token=abc_DEF-1\n"}
	for i := 0; i < 3; i++ {
		if err := m.Send(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("%d files, want 3", len(entries))
	}
	for _, en := range entries {
		if !strings.HasSuffix(en.Name(), ".eml") {
			t.Fatalf("stray file %s", en.Name())
		}
		f, _ := os.Open(filepath.Join(dir, en.Name()))
		parsed, err := mail.ReadMessage(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if parsed.Header.Get("To") != "ada@example.com" || parsed.Header.Get("Bcc") != "" || parsed.Header.Get("Message-Id") == "" ||
			!strings.HasPrefix(parsed.Header.Get("Subject"), "Verify") {
			t.Fatalf("headers: %v", parsed.Header)
		}
		if _, err := parsed.Header.Date(); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 200)
		n, _ := parsed.Body.Read(body)
		if !strings.Contains(string(body[:n]), "token=abc_DEF-1\r\n") {
			t.Fatalf("body: %q", body[:n])
		}
	}
	if err := m.Send(context.Background(), dmail.Message{To: "nobody", Subject: "x"}); err == nil {
		t.Fatal("invalid recipient accepted")
	}
	// One log line per mail says which file it is, never its body.
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 3 || strings.Contains(logged.String(), "abc_DEF-1") || strings.Contains(logged.String(), "ada@example.com") {
		t.Fatalf("log: %s", logged.String())
	}
	for _, en := range entries {
		if !strings.Contains(logged.String(), "path="+filepath.Join(dir, en.Name())+" ") {
			t.Fatalf("no log line names %s: %s", en.Name(), logged.String())
		}
	}
}

// fakeSMTP is a minimal relay stand-in that records one conversation.
type fakeSMTP struct {
	ln   net.Listener
	mu   sync.Mutex
	auth string
	from string
	to   []string
	data string
}

func newFakeSMTP(t *testing.T) *fakeSMTP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSMTP{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

func (s *fakeSMTP) serve(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	say := func(l string) { conn.Write([]byte(l + "\r\n")) }
	say("220 fake ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			say("250-fake")
			say("250 AUTH PLAIN")
		case strings.HasPrefix(cmd, "AUTH PLAIN"):
			raw, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(line[len("AUTH PLAIN"):]))
			s.mu.Lock()
			s.auth = string(raw)
			s.mu.Unlock()
			say("235 ok")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			s.mu.Lock()
			s.from = line[10:]
			s.mu.Unlock()
			say("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			s.mu.Lock()
			s.to = append(s.to, line[8:])
			s.mu.Unlock()
			say("250 ok")
		case cmd == "DATA":
			say("354 go")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			s.mu.Lock()
			s.data = b.String()
			s.mu.Unlock()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

func TestSMTPMailerSendsThroughRelay(t *testing.T) {
	t.Parallel()
	relay := newFakeSMTP(t)
	var logged bytes.Buffer
	m, err := dmail.New(dmail.Config{SMTPURL: "smtp://mailer:s3cret@" + relay.ln.Addr().String(), Dir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Send(context.Background(), dmail.Message{To: "bob@example.com", Subject: "Reset", Text: "token=xyz\n.dot line\n"}); err != nil {
		t.Fatal(err)
	}
	// The log names the relay, never the credentials, the body or the token.
	if l := logged.String(); !strings.Contains(l, "relay="+relay.ln.Addr().String()) || strings.Contains(l, "s3cret") || strings.Contains(l, "xyz") {
		t.Fatalf("log: %s", l)
	}
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if relay.auth != "\x00mailer\x00s3cret" || !strings.Contains(relay.from, "no-reply@localhost") || len(relay.to) != 1 || !strings.Contains(relay.to[0], "bob@example.com") {
		t.Fatalf("relay saw auth %q from %q to %q", relay.auth, relay.from, relay.to)
	}
	if !strings.Contains(relay.data, "Subject: Reset\r\n") || !strings.Contains(relay.data, "token=xyz\r\n") || !strings.Contains(relay.data, "\r\n..dot line\r\n") {
		t.Fatalf("data: %q", relay.data)
	}
	if _, err := dmail.New(dmail.Config{SMTPURL: "http://x"}); err == nil {
		t.Fatal("bad smtp url accepted")
	}
}

// A recipient with invalid UTF-8, U+FFFD or invisible
// characters is refused, never written into To:.
func TestRenderRefusesUnclearRecipients(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"adm\xffin@example.com", "adm\ufffdin@example.com", "ad\u200bmin@example.com", "\u202eadmin@example.com", "a\x00b@example.com"} {
		if _, err := dmail.Render("deckhand <no-reply@localhost>", dmail.Message{To: to, Subject: "s", Text: "t"}, time.Now()); err == nil || !strings.Contains(err.Error(), "invalid recipient") {
			t.Errorf("%q: %v", to, err)
		}
	}
	raw, err := dmail.Render("deckhand <no-reply@localhost>", dmail.Message{To: "jos\u00e9@xn--caf-dma.example", Subject: "s", Text: "t"}, time.Now())
	if err != nil || !strings.Contains(string(raw), "\r\nTo: jos\u00e9@xn--caf-dma.example\r\n") {
		t.Fatalf("%v\n%s", err, raw)
	}
}
