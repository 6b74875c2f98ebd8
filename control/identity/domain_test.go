package identity_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/control/identity"
	"deckhand/control/mail"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Identity's flows are domain methods: these tests call them with a
// context and typed inputs, with no HTTP server, router or request.

// newDomainEnv is identity on a temp store with mail in a temp directory,
// and nothing listening.
func newDomainEnv(t *testing.T, limits *identity.Limits) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "control.db"))
	if err != nil {
		t.Fatal(err)
	}
	mailDir := filepath.Join(dir, "mail")
	m, err := mail.New(mail.Config{Dir: mailDir})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	clock := clockpkg.NewFakeClock(time.Now().UTC())
	svc, err := identity.New(identity.Deps{DB: db, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Mailer: m, Sealer: sealer, Signups: true, PublicURL: "http://127.0.0.1:1", Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); db.Close() })
	return &env{t: t, svc: svc, mailDir: mailDir, clock: clock, db: db, sealer: sealer}
}

// from is the context of a request from 192.0.2.7, acting as credential's
// principal when one is given.
func (e *env) from(credential string) context.Context {
	e.t.Helper()
	ctx := auth.WithClientIP(context.Background(), "192.0.2.7")
	if credential == "" {
		return ctx
	}
	p, err := e.svc.Resolve(credential, "192.0.2.7")
	if err != nil {
		e.t.Fatalf("resolve: %v", err)
	}
	return auth.NewContext(ctx, p)
}

func code(err error) string {
	if err == nil {
		return ""
	}
	return fault.AsError(err).Code
}

// signedUp runs signup and the mailed verification through the domain.
func (e *env) signedUp(email string) *identity.User {
	e.t.Helper()
	if _, err := e.svc.Signup(e.from(""), identity.SignupInput{Email: email, Password: goodPassword}); err != nil {
		e.t.Fatal(err)
	}
	u, err := e.svc.VerifyEmail(e.from(""), identity.TokenInput{Token: e.mailToken(email)})
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

func TestAccountFlowsAsDomainMethods(t *testing.T) {
	t.Parallel()
	e := newDomainEnv(t, nil)
	u := e.signedUp("ada@example.com")
	if !u.EmailVerified {
		t.Fatalf("verified user %+v", u)
	}
	if _, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "ada@example.com", Password: "Wrong-pass1"}); code(err) != fault.CodeUnauthorized {
		t.Fatalf("wrong password: %v", err)
	}
	res, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "ADA@example.com", Password: goodPassword})
	if err != nil || res.Body.Token == "" || res.Body.RefreshToken == "" || res.Body.User.ID != u.ID {
		t.Fatalf("login: %+v %v", res, err)
	}
	me, err := e.svc.Me(e.from(res.Body.Token))
	if err != nil || me.Email != "ada@example.com" {
		t.Fatalf("me: %+v %v", me, err)
	}
	if _, err := e.svc.Me(e.from("")); code(err) != fault.CodeUnauthorized {
		t.Fatalf("me without a caller: %v", err)
	}

	// Tokens: created with the session, usable as a credential, never
	// able to mint another one.
	tok, err := e.svc.CreateToken(e.from(res.Body.Token), identity.CreateTokenRequest{Body: identity.CreateTokenInput{Alias: "ci", IPWhitelist: []string{"192.0.2.0/24"}}})
	if err != nil || tok.Token == "" {
		t.Fatalf("create token: %+v %v", tok, err)
	}
	if _, err := e.svc.CreateToken(e.from(tok.Token), identity.CreateTokenRequest{Body: identity.CreateTokenInput{Alias: "again"}}); code(err) != fault.CodeForbidden {
		t.Fatalf("token minting a token: %v", err)
	}
	if _, err := e.svc.Resolve(tok.Token, "198.51.100.1"); code(err) != fault.CodeUnauthorized {
		t.Fatalf("token outside its allow-list: %v", err)
	}
	list, err := e.svc.ListTokens(e.from(tok.Token))
	if err != nil || len(list) != 1 || list[0].Token != "" || list[0].LastUsedIP == nil || *list[0].LastUsedIP != "192.0.2.7" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := e.svc.CreateToken(e.from(res.Body.Token), identity.CreateTokenRequest{Body: identity.CreateTokenInput{Alias: "bad/alias"}}); code(err) != fault.CodeInvalid {
		t.Fatalf("bad alias: %v", err)
	}

	// Refresh rotates; the header and body copies must agree.
	if _, err := e.svc.Refresh(e.from(""), identity.RefreshRequest{Bearer: identity.Bearer{Authorization: "Bearer " + res.Body.RefreshToken + "x"}, Body: identity.RefreshInput{RefreshToken: res.Body.RefreshToken}}); code(err) != fault.CodeUnauthorized {
		t.Fatalf("mismatched refresh: %v", err)
	}
	next, err := e.svc.Refresh(e.from(""), identity.RefreshRequest{Bearer: identity.Bearer{Authorization: "Bearer " + res.Body.RefreshToken}, Body: identity.RefreshInput{RefreshToken: res.Body.RefreshToken}})
	if err != nil || next.RefreshToken == res.Body.RefreshToken {
		t.Fatalf("refresh: %+v %v", next, err)
	}
	if err := e.svc.Logout(e.from(next.Token), struct{}{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Resolve(next.Token, "192.0.2.7"); code(err) != fault.CodeUnauthorized {
		t.Fatalf("access token after logout: %v", err)
	}
	if got := e.events(tok.ID); len(got) != 1 || got[0] != "auth.token.created" {
		t.Fatalf("events %v", got)
	}
}

func TestTwoFactorLoginAsDomainMethods(t *testing.T) {
	t.Parallel()
	e := newDomainEnv(t, nil)
	e.signedUp("bo@example.com")
	first, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "bo@example.com", Password: goodPassword})
	if err != nil {
		t.Fatal(err)
	}
	session := e.from(first.Body.Token)
	setup, err := e.svc.SetupTwoFactor(session)
	if err != nil {
		t.Fatal(err)
	}
	backup, err := e.svc.ConfirmTwoFactor(session, identity.CodeInput{Code: e.oathtool(setup.Secret)})
	if err != nil || len(backup.BackupCodes) != 10 {
		t.Fatalf("confirm: %+v %v", backup, err)
	}
	step, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "bo@example.com", Password: goodPassword})
	if err != nil || !step.Body.Requires2FA || step.Body.TempToken == "" || step.Body.Token != "" || !strings.Contains(step.Message, "two-factor code required") {
		t.Fatalf("login with 2FA on: %+v %v", step, err)
	}
	if _, err := e.svc.VerifyTwoFactor(e.from(""), identity.Verify2FARequest{Body: identity.Verify2FAInput{TempToken: step.Body.TempToken, Code: "000000"}}); code(err) != fault.CodeUnauthorized {
		t.Fatalf("wrong code: %v", err)
	}
	done, err := e.svc.VerifyTwoFactor(e.from(""), identity.Verify2FARequest{Body: identity.Verify2FAInput{TempToken: step.Body.TempToken, Code: backup.BackupCodes[0]}})
	if err != nil || done.Token == "" {
		t.Fatalf("backup code: %+v %v", done, err)
	}
	if _, err := e.svc.VerifyTwoFactor(e.from(""), identity.Verify2FARequest{Body: identity.Verify2FAInput{TempToken: step.Body.TempToken, Code: backup.BackupCodes[1]}}); code(err) != fault.CodeUnauthorized {
		t.Fatalf("used temp_token: %v", err)
	}
	st, err := e.svc.TwoFactorStatus(e.from(done.Token))
	if err != nil || !st.Enabled || st.BackupCodesRemaining != 9 {
		t.Fatalf("status: %+v %v", st, err)
	}
}

// The limits a domain applies by value (failed logins per account) hold
// for domain callers too, through the same limiter the host uses.
func TestLoginLimitWithoutHTTP(t *testing.T) {
	t.Parallel()
	e := newDomainEnv(t, &identity.Limits{LoginPerAccount: identity.Rule{N: 2, Per: 15 * time.Minute}})
	u := e.signedUp("cy@example.com")
	for i := 0; i < 2; i++ {
		if _, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "cy@example.com", Password: "Wrong-pass1"}); code(err) != fault.CodeUnauthorized {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	_, err := e.svc.Login(e.from(""), identity.LoginInput{Username: u.Username, Password: goodPassword})
	if err != nil {
		t.Fatalf("another identifier has its own budget: %v", err)
	}
	_, err = e.svc.Login(e.from(""), identity.LoginInput{Email: "cy@example.com", Password: goodPassword})
	if pe := fault.AsError(err); pe.Code != fault.CodeTooManyRequests || pe.Headers["Retry-After"] == "" {
		t.Fatalf("locked account: %v", err)
	}
	e.clock.Advance(16 * time.Minute)
	if _, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "cy@example.com", Password: goodPassword}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

func TestAdminMethodsNeedTheAdminRole(t *testing.T) {
	t.Parallel()
	e := newDomainEnv(t, nil)
	if _, err := e.svc.EnsureAdmin("root@example.com", goodPassword); err != nil {
		t.Fatal(err)
	}
	e.signedUp("dee@example.com")
	admin, _ := e.svc.Login(e.from(""), identity.LoginInput{Email: "root@example.com", Password: goodPassword})
	user, _ := e.svc.Login(e.from(""), identity.LoginInput{Email: "dee@example.com", Password: goodPassword})
	in := identity.AdminCreateInput{Email: "new@example.com", Password: goodPassword, Verified: true}
	if _, err := e.svc.CreateUser(e.from(user.Body.Token), in); code(err) != fault.CodeForbidden {
		t.Fatalf("user creating a user: %v", err)
	}
	if _, err := e.svc.CreateUser(e.from(""), in); code(err) != fault.CodeUnauthorized {
		t.Fatalf("nobody creating a user: %v", err)
	}
	u, err := e.svc.CreateUser(e.from(admin.Body.Token), in)
	if err != nil || u.Role != identity.RoleUser || !u.EmailVerified {
		t.Fatalf("admin creating a user: %+v %v", u, err)
	}
	banned := true
	if _, err := e.svc.UpdateUser(e.from(admin.Body.Token), identity.UserUpdate{UserRef: identity.UserRef{ID: u.ID}, Body: identity.AdminPatchInput{IsBanned: &banned}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Login(e.from(""), identity.LoginInput{Email: "new@example.com", Password: goodPassword}); code(err) != fault.CodeForbidden {
		t.Fatalf("banned login: %v", err)
	}
	if got := e.events(u.ID); len(got) != 2 || got[1] != "user.banned" {
		t.Fatalf("events %v", got)
	}
}

func TestInputsValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		in    interface{ Validate() error }
		field string // "" means valid
	}{
		{"signup ok", &identity.SignupInput{Email: "a@example.com", Password: goodPassword}, ""},
		{"signup weak password", &identity.SignupInput{Email: "a@example.com", Password: "short"}, "password"},
		{"signup bad email", &identity.SignupInput{Email: "nope", Password: goodPassword}, "email"},
		{"signup bad region", &identity.SignupInput{Email: "a@example.com", Password: goodPassword, Region: "EU 1"}, "region"},
		{"login neither", &identity.LoginInput{Password: goodPassword}, "username"},
		{"login both", &identity.LoginInput{Username: "a", Email: "a@example.com", Password: goodPassword}, "username"},
		{"login intent without challenge", &identity.LoginInput{Username: "abc", Password: goodPassword, ResponseMode: "intent"}, "code_challenge"},
		{"login bad mode", &identity.LoginInput{Username: "abc", Password: goodPassword, ResponseMode: "cookie"}, "response_mode"},
		{"exchange short verifier", &identity.ExchangeInput{Code: "c", CodeVerifier: "short"}, "code_verifier"},
		{"token alias", &identity.CreateTokenInput{Alias: ""}, "alias"},
		{"token ips", &identity.CreateTokenInput{Alias: "a", IPWhitelist: []string{"not-an-ip"}}, "ip_whitelist"},
		{"admin role", &identity.AdminCreateInput{Email: "a@example.com", Password: goodPassword, Role: "root"}, "role"},
		{"code empty", &identity.CodeInput{Code: " - "}, "code"},
		{"launch state", &identity.LaunchInput{Provider: "webid", CodeChallenge: rfcChallenge, StateID: "nope"}, "state_id"},
	}
	for _, tc := range cases {
		err := tc.in.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if pe := fault.AsError(err); err == nil || pe.Code != fault.CodeInvalid || pe.Field != tc.field {
			t.Errorf("%s: %v, want INVALID on %s", tc.name, err, tc.field)
		}
	}
}

// TestListTokensIsTheCallersInCreationOrder: a user's token list holds
// that user's tokens only, oldest first, however the other users' tokens
// interleave with them.
func TestListTokensIsTheCallersInCreationOrder(t *testing.T) {
	t.Parallel()
	e := newDomainEnv(t, nil)
	session := map[string]string{}
	for _, email := range []string{"ada@example.com", "bob@example.com"} {
		e.signedUp(email)
		res, err := e.svc.Login(e.from(""), identity.LoginInput{Email: email, Password: goodPassword})
		if err != nil {
			t.Fatal(err)
		}
		session[email] = res.Body.Token
	}
	want := map[string][]string{}
	for i, who := range []string{"bob@example.com", "ada@example.com", "bob@example.com", "ada@example.com", "ada@example.com"} {
		alias := fmt.Sprintf("t%d", i)
		if _, err := e.svc.CreateToken(e.from(session[who]), identity.CreateTokenRequest{Body: identity.CreateTokenInput{Alias: alias}}); err != nil {
			t.Fatal(err)
		}
		want[who] = append(want[who], alias)
		e.clock.Advance(time.Second)
	}
	for who, aliases := range want {
		list, err := e.svc.ListTokens(e.from(session[who]))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tok := range list {
			got = append(got, tok.Alias)
		}
		if strings.Join(got, ",") != strings.Join(aliases, ",") {
			t.Errorf("%s lists %v, want %v", who, got, aliases)
		}
	}
}
