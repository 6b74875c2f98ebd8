package clie2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
)

// oathtool computes the TOTP code of secret at time at, as an
// authenticator app would.
func oathtool(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	out, err := exec.Command("oathtool", "--totp", "-b", "-N", fmt.Sprintf("@%d", at.Unix()), secret).Output()
	if err != nil {
		t.Fatalf("oathtool (apt-get install oathtool): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// A password login without two-factor: the config is private, whoami -o
// json is the server's profile, a wrong password fails with the server's
// message, and logout ends the session on the server too.
func TestLoginWithoutTwoFactor(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	email := "plain@example.com"
	_, token := s.User(s.Admin(), email)
	_ = token
	u := newUser(t)

	u.fails("not logged in", "whoami")
	r := u.run("Wrong-pass-123\n", "login", s.URL, "--email", email, "--password-stdin")
	if r.err == nil || !strings.Contains(r.stderr, "Invalid") || r.stdout != "" {
		t.Fatalf("a wrong password: %s", r)
	}
	out := u.login(s.URL, email, controltest.GoodPW)
	if !strings.Contains(out, "Logged in to "+s.URL+" as "+email) {
		t.Fatalf("login said %q", out)
	}
	fi, err := os.Stat(u.configPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config %v %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(u.configPath())); di.Mode().Perm() != 0o700 {
		t.Fatalf("config dir mode %v", di.Mode())
	}
	me := u.jsonOf("whoami")
	if me["email"] != email || me["two_factor_enabled"] != false {
		t.Fatalf("whoami: %v", me)
	}
	if got := jq(t, ".email", u.ok("", "whoami", "-o", "json")); got != email {
		t.Fatalf("jq .email = %q", got)
	}
	var cfg struct {
		ControlURL string `json:"control_url"`
		Credential struct {
			Kind, Token string
		} `json:"credential"`
	}
	raw, _ := os.ReadFile(u.configPath())
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.ControlURL != s.URL || cfg.Credential.Kind != "session" {
		t.Fatalf("config %s", raw)
	}
	session := cfg.Credential.Token

	// A config others may read is refused, not used.
	if err := os.Chmod(u.configPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	u.fails("chmod 600", "whoami")
	if err := os.Chmod(u.configPath(), 0o600); err != nil {
		t.Fatal(err)
	}

	u.ok("", "logout")
	u.fails("not logged in", "whoami")
	s.MustDo(401, "GET", "/api/v1/users/auth/me", nil, session)
}

// With two-factor on, a login in a pipe needs --totp-code and says so; on
// a terminal the CLI asks for the password and the code.
func TestLoginWithTwoFactor(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	email := "twofa@example.com"
	_, access := s.User(s.Admin(), email)
	setup := controltest.Data(s.MustDo(200, "POST", "/api/v1/users/auth/2fa/setup", nil, access))
	secret := setup["secret"].(string)
	// Each code is used once (the server refuses a step already used):
	// setup uses the previous step, the piped login the current one, the
	// terminal login the next one; all are within the accepted skew.
	s.MustDo(200, "POST", "/api/v1/users/auth/2fa/verify-setup",
		map[string]any{"code": oathtool(t, secret, time.Now().Add(-30*time.Second))}, access)

	u := newUser(t)
	r := u.run(controltest.GoodPW+"\n", "login", s.URL, "--email", email, "--password-stdin")
	if r.err == nil || !strings.Contains(r.stderr, "--totp-code") {
		t.Fatalf("a 2FA login without a code in a pipe: %s", r)
	}
	u.fails("not logged in", "whoami")
	u.login(s.URL, email, controltest.GoodPW, "--totp-code", oathtool(t, secret, time.Now()))
	if me := u.jsonOf("whoami"); me["email"] != email || me["two_factor_enabled"] != true {
		t.Fatalf("whoami: %v", me)
	}

	// On a terminal: both prompts, the password not echoed.
	v := newUser(t)
	cmd := exec.Command(bin, "login", s.URL, "--email", email)
	cmd.Env = v.env
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen := &platformtest.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			_, _ = screen.Write(buf[:n])
			if err != nil {
				done <- cmd.Wait()
				return
			}
		}
	}()
	waitFor(t, "the password prompt", func() bool { return strings.Contains(screen.String(), "Password: ") })
	if _, err := tty.Write([]byte(controltest.GoodPW + "\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the two-factor prompt", func() bool { return strings.Contains(screen.String(), "Two-factor code: ") })
	if _, err := tty.Write([]byte(oathtool(t, secret, time.Now().Add(30*time.Second)) + "\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(screen.String(), "Logged in to") {
			t.Fatalf("terminal login: %v\n%s", err, screen)
		}
	case <-time.After(time.Minute):
		t.Fatalf("terminal login did not finish:\n%s", screen)
	}
	if strings.Contains(screen.String(), controltest.GoodPW) {
		t.Fatalf("the password was echoed:\n%s", screen)
	}
	if me := v.jsonOf("whoami"); me["email"] != email {
		t.Fatalf("whoami after the terminal login: %v", me)
	}
}

// `login --token` keeps an auth token; logout forgets it locally (it is
// revoked with tokens revoke, not by logout).
func TestLoginWithToken(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	email := "auto@example.com"
	s.User(s.Admin(), email)
	u := newUser(t)
	u.login(s.URL, email, controltest.GoodPW)
	tok := jq(t, ".token", u.ok("", "tokens", "create", "automation", "-o", "json"))
	if !strings.HasPrefix(tok, "svc_") {
		t.Fatalf("token %q", tok)
	}
	bot := newUser(t)
	bot.fails("svc_", "login", s.URL, "--token", "agt_not-a-control-token")
	bot.ok("", "login", s.URL, "--token", tok)
	if me := bot.jsonOf("whoami"); me["email"] != email {
		t.Fatalf("whoami with the token: %v", me)
	}
	// DECKHAND_TOKEN is the flag's variable.
	env := newUser(t, "DECKHAND_TOKEN="+tok)
	env.ok("", "login", s.URL)
	if me := env.jsonOf("whoami"); me["email"] != email {
		t.Fatalf("whoami with DECKHAND_TOKEN: %v", me)
	}
	bot.ok("", "logout")
	bot.fails("not logged in", "whoami")
	s.MustDo(200, "GET", "/api/v1/users/auth/me", nil, tok)
}
