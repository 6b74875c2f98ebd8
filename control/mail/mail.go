// Package mail owns how the control plane sends email: by default every
// message is written as one RFC 5322 .eml file into a directory (operators
// and tests read them there); with an smtp:// URL it goes through a relay
// with net/smtp instead. Replicas share no mail directory, so several
// replicas send through a relay (docs/operating/mail.md). Each delivery is
// logged with where it went (the file's path or the relay's host:port)
// and its subject, never its body or the tokens in it.
package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/smtp"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"deckhand/platform/atomicfile"
)

// Message is one plain-text email.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Mailer delivers messages.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Config selects the transport: SMTPURL when set, else Dir.
type Config struct {
	Dir     string
	SMTPURL string
	// From is the sender address (default "deckhand <no-reply@localhost>").
	From string
	// Logger gets one line per delivered message: where it went (path or
	// relay) and its subject. Nil logs nothing.
	Logger *slog.Logger
}

// New builds the mailer Config asks for.
func New(cfg Config) (Mailer, error) {
	if cfg.From == "" {
		cfg.From = "deckhand <no-reply@localhost>"
	}
	if cfg.SMTPURL != "" {
		m, err := NewSMTP(cfg.SMTPURL, cfg.From)
		if err != nil {
			return nil, err
		}
		m.Logger = cfg.Logger
		return m, nil
	}
	if cfg.Dir == "" {
		return nil, errors.New("mail: a mail directory or an SMTP URL is required")
	}
	m, err := NewDir(cfg.Dir, cfg.From)
	if err != nil {
		return nil, err
	}
	m.Logger = cfg.Logger
	return m, nil
}

// Render formats m as an RFC 5322 message with CRLF line endings. The body
// is 7bit text so links stay greppable (no quoted-printable `=3D`).
func Render(from string, m Message, now time.Time) ([]byte, error) {
	if err := checkRecipient(m.To); err != nil {
		return nil, err
	}
	to, subject := clean(m.To), clean(m.Subject)
	if to == "" || !strings.Contains(to, "@") {
		return nil, fmt.Errorf("mail: invalid recipient")
	}
	var b bytes.Buffer
	host := "localhost"
	if i := strings.LastIndexByte(from, '@'); i >= 0 {
		host = strings.Trim(from[i+1:], "> ")
	}
	hdr := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	hdr("From", clean(from))
	hdr("To", to)
	hdr("Subject", subject)
	hdr("Date", now.UTC().Format(time.RFC1123Z))
	hdr("Message-ID", "<"+randHex(16)+"@"+host+">")
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "8bit")
	b.WriteString("\r\n")
	body := strings.ReplaceAll(m.Text, "\r\n", "\n")
	for _, line := range strings.Split(body, "\n") {
		b.WriteString(line + "\r\n")
	}
	return b.Bytes(), nil
}

// checkRecipient refuses an address a reader could misread or a relay
// could mangle: invalid UTF-8, U+FFFD (what a decoder made of invalid
// bytes), control and format characters (zero-width, bidi overrides).
// identity never hands such an address over; this is the last guard.
func checkRecipient(to string) error {
	if !utf8.ValidString(to) || strings.ContainsRune(to, utf8.RuneError) {
		return errors.New("mail: invalid recipient: not valid UTF-8")
	}
	for _, r := range to {
		if unicode.In(r, unicode.Cc, unicode.Cf) {
			return fmt.Errorf("mail: invalid recipient: holds control or format character U+%04X", r)
		}
	}
	return nil
}

// clean drops CR and LF so a header value cannot inject headers.
func clean(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(s))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// DirMailer writes each message to Dir/<time>-<random>.eml.
type DirMailer struct {
	dir, from string
	// Logger, when set, gets the path of each message written.
	Logger *slog.Logger
}

// NewDir creates dir (0700) and returns a mailer writing into it.
func NewDir(dir, from string) (*DirMailer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail: create %s: %w", dir, err)
	}
	return &DirMailer{dir: dir, from: from}, nil
}

// Dir is where the files go.
func (d *DirMailer) Dir() string { return d.dir }

// Send writes the message atomically (temp file, then rename) so a reader
// never sees half a mail.
func (d *DirMailer) Send(_ context.Context, m Message) error {
	now := time.Now()
	raw, err := Render(d.from, m, now)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%s.eml", now.UTC().Format("20060102T150405.000000000"), randHex(4))
	path := filepath.Join(d.dir, name)
	if err := atomicfile.Write(path, raw, 0o600); err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	if d.Logger != nil {
		d.Logger.Info("mail written", "path", path, "subject", clean(m.Subject))
	}
	return nil
}

// SMTPMailer sends through a relay given as smtp://user:pass@host:port.
type SMTPMailer struct {
	addr, host, from, envelopeFrom string
	auth                           smtp.Auth
	implicitTLS                    bool
	// TLSConfig overrides the TLS settings of smtps:// (tests).
	TLSConfig *tls.Config
	// Logger, when set, gets the relay each message was handed to.
	Logger *slog.Logger
}

// NewSMTP parses the relay URL.
func NewSMTP(raw, from string) (*SMTPMailer, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
		return nil, errors.New("mail: --smtp-url must look like smtp://user:pass@host:port (or smtps:// for implicit TLS)")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "25"
		if u.Scheme == "smtps" {
			port = "465"
		}
	}
	m := &SMTPMailer{addr: net.JoinHostPort(host, port), host: host, from: from, envelopeFrom: addrOf(from), implicitTLS: u.Scheme == "smtps"}
	if u.User != nil {
		pass, _ := u.User.Password()
		m.auth = smtp.PlainAuth("", u.User.Username(), pass, host)
	}
	return m, nil
}

// addrOf extracts the bare address from "Name <a@b>".
func addrOf(from string) string {
	if i := strings.IndexByte(from, '<'); i >= 0 {
		return strings.TrimSuffix(from[i+1:], ">")
	}
	return from
}

// Send delivers one message; net/smtp upgrades to STARTTLS when offered and
// refuses PLAIN auth over cleartext except to localhost.
func (s *SMTPMailer) Send(ctx context.Context, m Message) error {
	raw, err := Render(s.from, m, time.Now())
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		if s.implicitTLS {
			done <- s.sendTLS(clean(m.To), raw)
			return
		}
		done <- smtp.SendMail(s.addr, s.auth, s.envelopeFrom, []string{clean(m.To)}, raw)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("mail: smtp: %w", err)
		}
		if s.Logger != nil {
			s.Logger.Info("mail relayed", "relay", s.addr, "subject", clean(m.Subject))
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendTLS speaks SMTP inside an implicit TLS connection (smtps://, 465).
func (s *SMTPMailer) sendTLS(to string, raw []byte) error {
	cfg := s.TLSConfig
	if cfg == nil {
		cfg = &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 15 * time.Second}, "tcp", s.addr, cfg)
	if err != nil {
		return err
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if s.auth != nil {
		if err := c.Auth(s.auth); err != nil {
			return err
		}
	}
	if err := c.Mail(s.envelopeFrom); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
