package identity

import (
	"context"
	"crypto/subtle"
	"net/url"
	"regexp"
	"strings"
	"time"

	"deckhand/control/mail"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// SignupResult is data of a successful signup.
type SignupResult struct {
	Email string `json:"email"`
}

// SignupInput is the body of signup.
type SignupInput struct {
	Email    string `json:"email" required:"true"`
	Password string `json:"password" required:"true"`
	Region   string `json:"region,omitempty"`
}

var regionRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Validate normalizes the email and checks the password rule.
func (r *SignupInput) Validate() error {
	e, err := normalizeEmail("email", r.Email)
	if err != nil {
		return err
	}
	r.Email = e
	if err := checkSignupPassword("password", r.Password); err != nil {
		return err
	}
	if r.Region != "" && !regionRe.MatchString(r.Region) {
		return fault.Invalid("region", "must be a region id (lowercase letters, digits and `-`)")
	}
	return nil
}

// EmailInput is the body of forgot-password.
type EmailInput struct {
	Email string `json:"email" required:"true"`
}

// Validate normalizes the email.
func (r *EmailInput) Validate() error {
	e, err := normalizeEmail("email", r.Email)
	r.Email = e
	return err
}

// TokenInput carries a one-time token (verify-email).
type TokenInput struct {
	Token string `json:"token" required:"true"`
}

// Validate demands the token.
func (r *TokenInput) Validate() error {
	if r.Token == "" {
		return fault.Invalid("token", "is required")
	}
	return nil
}

// ResetInput is the body of reset-password.
type ResetInput struct {
	Token    string `json:"token" required:"true"`
	Password string `json:"password" required:"true"`
}

// Validate demands the token and checks the password rule.
func (r *ResetInput) Validate() error {
	if r.Token == "" {
		return fault.Invalid("token", "is required")
	}
	return checkSignupPassword("password", r.Password)
}

// LoginInput is the body of login.
type LoginInput struct {
	Username            string `json:"username,omitempty"`
	Email               string `json:"email,omitempty"`
	Password            string `json:"password" required:"true"`
	ResponseMode        string `json:"response_mode,omitempty"`
	CodeChallenge       string `json:"code_challenge,omitempty"`
	CodeChallengeMethod string `json:"code_challenge_method,omitempty"`
}

// Validate checks the login rules and fills the default response_mode.
func (r *LoginInput) Validate() error {
	switch {
	case r.Username == "" && r.Email == "":
		return fault.Invalid("username", "username or email is required")
	case r.Username != "" && r.Email != "":
		return fault.Invalid("username", "send either username or email, not both")
	case len(r.Username) > 254 || len(r.Email) > 254:
		return fault.Invalid("username", "must be at most 254 characters")
	}
	if r.Email != "" {
		e, err := normalizeEmail("email", r.Email)
		if err != nil {
			return err
		}
		r.Email = e
	}
	// Only presence and the length cap: the password's shape is the
	// account's business at sign-up, and answering a wrong short password
	// with the rules would tell a guesser which passwords cannot exist.
	if err := checkPasswordGiven(r.Password); err != nil {
		return err
	}
	switch r.ResponseMode {
	case "", "tokens":
		r.ResponseMode = "tokens"
	case "intent":
		if err := validChallenge("code_challenge", r.CodeChallenge); err != nil {
			if r.CodeChallenge == "" {
				return fault.Invalid("code_challenge", "is required when response_mode is intent")
			}
			return err
		}
	default:
		return fault.Invalid("response_mode", "must be tokens or intent")
	}
	if r.CodeChallengeMethod != "" && r.CodeChallengeMethod != "S256" {
		return fault.Invalid("code_challenge_method", "must be S256")
	}
	return nil
}

// ExchangeInput is the body of intent exchange.
type ExchangeInput struct {
	AuthIntentToken string `json:"auth_intent_token,omitempty"`
	Code            string `json:"code,omitempty"`
	CodeVerifier    string `json:"code_verifier" required:"true"`
}

// Validate checks that exactly one secret and a verifier are given.
func (r *ExchangeInput) Validate() error {
	if r.AuthIntentToken == "" && r.Code == "" {
		return fault.Invalid("auth_intent_token", "is required (or `code` from an OAuth completion)")
	}
	if r.AuthIntentToken != "" && r.Code != "" {
		return fault.Invalid("auth_intent_token", "send either auth_intent_token or code, not both")
	}
	if r.CodeVerifier == "" {
		return fault.Invalid("code_verifier", "is required")
	}
	if len(r.CodeVerifier) < 43 || len(r.CodeVerifier) > 128 {
		return fault.Invalid("code_verifier", "must be 43 to 128 characters")
	}
	return nil
}

// RefreshInput is the body of refresh; Bearer is the Authorization
// header's token, which must be the same bytes.
type RefreshInput struct {
	RefreshToken string `json:"refreshToken" required:"true"`
	Bearer       string `json:"-"`
}

// sendMail delivers m, logging (never returning) the address on failure.
func (s *Service) sendMail(ctx context.Context, m mail.Message) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.mailer.Send(ctx, m); err != nil {
		return fault.Internal("send the email", err)
	}
	return nil
}

func (s *Service) link(path, token string) string {
	return s.publicURL + path + "?token=" + url.QueryEscape(token)
}

func (s *Service) verificationMail(to, token string) mail.Message {
	return mail.Message{To: to, Subject: "Verify your email address",
		Text: "Welcome to deckhand.\n\nConfirm this address to activate your account:\n\n" +
			s.link("/auth/verify-email", token) + "\n\n" +
			"Or send the token to POST /api/v1/auth/verify-email:\n\ntoken=" + token + "\n\n" +
			"The link is valid for 24 hours. If you did not sign up, ignore this mail.\n"}
}

func (s *Service) pickRegion(asked string) (string, error) {
	if s.regions == nil {
		return asked, nil
	}
	avail := s.regions()
	if asked == "" {
		if len(avail) > 0 {
			return avail[0], nil
		}
		return "", nil
	}
	for _, r := range avail {
		if r == asked {
			return asked, nil
		}
	}
	return "", fault.Invalid("region", "must be one of the available regions (GET /api/v1/auth/available-regions)")
}

// Signup creates an inactive account and mails its verification link (or,
// for an address with a verified account, a notice), answering the same
// either way.
func (s *Service) Signup(ctx context.Context, in SignupInput) (*SignupResult, error) {
	if !s.signups {
		return nil, forbidden("signups are disabled on this server")
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	// Signup mails an address whether or not it has an account, so it
	// shares the per-address mail budget's rule (counted for every
	// address alike, it reveals nothing).
	if err := s.limiter.Allow(ctx, s.rules.signupAddress.On(in.Email)); err != nil {
		return nil, err
	}
	region, err := s.pickRegion(in.Region)
	if err != nil {
		return nil, err
	}
	// Hash before the write transaction: argon2 must not hold the store lock.
	h, err := secrets.HashPassword(in.Password)
	if err != nil {
		return nil, fault.Internal("hash the password", err)
	}
	var msg mail.Message
	err = s.update(func(tx *store.Tx) error {
		existing, err := userByIndex(tx, bucketEmails, in.Email)
		if err != nil {
			return err
		}
		if existing != nil {
			if existing.EmailVerified {
				msg = mail.Message{To: in.Email, Subject: "Someone tried to sign up with your address",
					Text: "An account already exists for this address. If this was you, log in or reset your password at\n\n" +
						s.publicURL + "/auth/forgot-password\n"}
				return nil
			}
			// Signing up again before verifying re-sends the link. The new
			// token carries this signup's password, so whoever proves the
			// mailbox also fixes the password: a stranger who registered
			// the address first cannot keep a password on it.
			tok, err := s.issueOnce(tx, onceRec{Kind: onceVerify, UserID: existing.ID, PasswordHash: h})
			msg = s.verificationMail(in.Email, tok)
			return err
		}
		u, err := s.createUser(tx, newUser{Email: in.Email, Region: region, Source: "signup", IP: auth.ClientIP(ctx)})
		if err != nil {
			return err
		}
		u.PasswordHash = h
		if err := putUser(tx, u); err != nil {
			return err
		}
		tok, err := s.issueOnce(tx, onceRec{Kind: onceVerify, UserID: u.ID, PasswordHash: h})
		msg = s.verificationMail(in.Email, tok)
		return err
	})
	if err != nil {
		return nil, fault.Wrap("create the account", err)
	}
	if err := s.sendMail(ctx, msg); err != nil {
		return nil, err
	}
	return &SignupResult{Email: in.Email}, nil
}

var errBadToken = fault.Invalid("token", "is invalid or has expired")

// VerifyEmail activates the account of a verification token.
func (s *Service) VerifyEmail(ctx context.Context, in TokenInput) (*User, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var view User
	err := s.update(func(tx *store.Tx) error {
		rec, u, err := s.takeOnceUser(tx, onceVerify, in.Token)
		if err != nil {
			return err
		}
		// A stale link of another signup must not change the password of
		// an account that is already verified.
		if rec.PasswordHash != "" && !u.EmailVerified {
			u.PasswordHash = rec.PasswordHash
		}
		u.EmailVerified = true
		u.UpdatedAt = s.now()
		view = u.view()
		return putUser(tx, u)
	})
	if err != nil {
		return nil, fault.Wrap("verify the email", err)
	}
	return &view, nil
}

const sameAnswer = "If an account exists for this address, we have sent it an email"

// ForgotPassword mails a reset link when the address has an account; the
// caller cannot tell whether it has.
func (s *Service) ForgotPassword(ctx context.Context, in EmailInput) error {
	if err := in.Validate(); err != nil {
		return err
	}
	if err := s.limiter.Allow(ctx, s.rules.recoveryAddress.On(in.Email)); err != nil {
		return err
	}
	var msg *mail.Message
	err := s.update(func(tx *store.Tx) error {
		msg = nil
		u, err := userByIndex(tx, bucketEmails, in.Email)
		if err != nil || u == nil || u.IsBanned {
			return err
		}
		tok, err := s.issueOnce(tx, onceRec{Kind: onceReset, UserID: u.ID})
		msg = &mail.Message{To: u.Email, Subject: "Reset your password",
			Text: "Someone asked to reset the password of your deckhand account.\n\nSet a new one here:\n\n" +
				s.link("/auth/reset-password", tok) + "\n\n" +
				"Or send the token with your new password to POST /api/v1/auth/reset-password:\n\ntoken=" + tok + "\n\n" +
				"The link is valid for 1 hour. If you did not ask for this, ignore this mail: your password stays as it is.\n"}
		return err
	})
	if err != nil {
		return fault.Wrap("start the password reset", err)
	}
	if msg != nil {
		// A mail failure must not answer differently from "no such account".
		if err := s.sendMail(ctx, *msg); err != nil {
			s.log.Error("password reset mail failed", "err", err)
		}
	}
	return nil
}

// ResetPassword sets a new password with a reset token and ends every
// session of the account.
func (s *Service) ResetPassword(ctx context.Context, in ResetInput) error {
	if err := in.Validate(); err != nil {
		return err
	}
	h, err := secrets.HashPassword(in.Password)
	if err != nil {
		return fault.Internal("hash the password", err)
	}
	err = s.update(func(tx *store.Tx) error {
		_, u, err := s.takeOnceUser(tx, onceReset, in.Token)
		if err != nil {
			return err
		}
		u.PasswordHash, u.EmailVerified, u.UpdatedAt = h, true, s.now()
		if err := putUser(tx, u); err != nil {
			return err
		}
		return s.revokeUserSessions(tx, u.ID, "password reset")
	})
	return fault.Wrap("reset the password", err)
}

var errBadLogin = unauthorized("Invalid login credentials")

// Login checks a password login. It answers session tokens, an intent
// token (response_mode intent) or the two-factor step.
func (s *Service) Login(ctx context.Context, in LoginInput) (*LoginAnswer, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	ident := strings.ToLower(strings.TrimSpace(in.Username + in.Email))
	acct := s.rules.loginAccount.On(ident)
	if err := s.limiter.Check(ctx, acct); err != nil {
		return nil, err
	}
	var u *userRec
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		if in.Email != "" {
			u, err = userByIndex(tx, bucketEmails, ident)
		} else {
			u, err = userByIndex(tx, bucketNames, ident)
		}
		return err
	})
	if err != nil {
		return nil, fault.Internal("look up the account", err)
	}
	hash := s.dummy
	if u != nil && u.PasswordHash != "" {
		hash = u.PasswordHash
	}
	if ok := secrets.CheckPassword(hash, in.Password); !ok || u == nil || u.PasswordHash == "" {
		if err := s.limiter.Add(ctx, acct); err != nil {
			s.log.Warn("failed login not counted", "err", err)
		}
		return nil, errBadLogin
	}
	if u.IsBanned {
		return nil, forbidden("this account is banned")
	}
	if !u.EmailVerified {
		return nil, forbidden("email address not verified: follow the link in the verification email first")
	}
	res, err := s.completeLogin(ctx, u.ID, "password", in.ResponseMode, in.CodeChallenge, true)
	if err != nil {
		return nil, err
	}
	out := &LoginAnswer{Body: res}
	if res.Requires2FA {
		out.Message = msgSecondFactor
	}
	return out, nil
}

// LoginAnswer is the login result with its envelope message, which says
// when the login still needs its second factor.
type LoginAnswer struct {
	Message string
	Body    *LoginResult
}

const msgSecondFactor = "Password accepted: two-factor code required; send it with the temp_token to POST /api/v1/users/auth/2fa/verify"

// completeLogin is the common end of every login path once the user is
// known: the 2FA step when enabled (and not done yet), an intent token in
// intent mode, or a new session.
func (s *Service) completeLogin(ctx context.Context, userID, method, mode, challenge string, needSecondFactor bool) (*LoginResult, error) {
	var res *LoginResult
	ip := auth.ClientIP(ctx)
	err := s.update(func(tx *store.Tx) error {
		u, err := activeUser(tx, userID, errBadLogin)
		if err != nil {
			return err
		}
		exp := func(kind string) string { return s.now().Add(onceTTL[kind]).Format(time.RFC3339) }
		if needSecondFactor && u.TOTPSecret != "" {
			tok, err := s.issueOnce(tx, onceRec{Kind: onceTemp, UserID: u.ID, Mode: mode, Challenge: challenge, Method: method})
			res = &LoginResult{Requires2FA: true, TempToken: tok, ExpiresAt: exp(onceTemp)}
			return err
		}
		if mode == "intent" {
			tok, err := s.issueOnce(tx, onceRec{Kind: onceIntent, UserID: u.ID, Challenge: challenge, Method: method})
			res = &LoginResult{AuthIntentToken: tok, ExpiresAt: exp(onceIntent)}
			return err
		}
		res, err = s.startSession(tx, u, method, ip)
		return err
	})
	if err != nil {
		return nil, fault.Wrap("start the session", err)
	}
	return res, nil
}

// ExchangeIntent trades an intent token (or OAuth completion code) and its
// PKCE verifier for session tokens, once.
func (s *Service) ExchangeIntent(ctx context.Context, in ExchangeInput) (*LoginResult, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	secret := in.AuthIntentToken + in.Code
	var res *LoginResult
	err := s.update(func(tx *store.Tx) error {
		rec, err := s.takeOnce(tx, onceIntent, secret)
		if err != nil {
			return err
		}
		if rec == nil {
			return unauthorized("auth intent token is invalid, used or expired")
		}
		if !checkPKCE(rec.Challenge, in.CodeVerifier) {
			return errBadVerifier
		}
		u, err := activeUser(tx, rec.UserID, unauthorized("auth intent token is invalid, used or expired"))
		if err != nil {
			return err
		}
		res, err = s.startSession(tx, u, rec.Method, auth.ClientIP(ctx))
		return err
	})
	if err == errBadVerifier {
		// The failed attempt still burns the token (a guessed verifier gets one try).
		_ = s.update(func(tx *store.Tx) error { return s.dropOnce(tx, onceIntent, secret) })
	}
	if err != nil {
		return nil, fault.Wrap("exchange the intent token", err)
	}
	return res, nil
}

var errBadVerifier = unauthorized("code_verifier does not match the code_challenge")

// Bearer is a request's Authorization: Bearer credential, for the routes
// that take a one-time token there rather than a signed-in caller.
type Bearer struct {
	Authorization string `header:"Authorization" doc:"Bearer <token>"`
}

// Token is the bearer credential ("" when none).
func (b Bearer) Token() string {
	tok, _ := platform.BearerOf(b.Authorization)
	return tok
}

// CancelIntent drops an intent token, OAuth completion code or 2FA
// temp_token; unknown ones are already cancelled.
func (s *Service) CancelIntent(_ context.Context, in Bearer) error {
	token := in.Token()
	if token == "" {
		return errNoCredential
	}
	err := s.update(func(tx *store.Tx) error {
		if err := s.dropOnce(tx, onceIntent, token); err != nil {
			return err
		}
		return s.dropOnce(tx, onceTemp, token)
	})
	if err != nil {
		return fault.Internal("cancel the intent", err)
	}
	return nil
}

// RefreshRequest is POST /api/v1/users/auth/refresh.
type RefreshRequest struct {
	Bearer
	Body RefreshInput
}

// Refresh rotates a session's tokens; the body's refresh token must be
// the same bytes as the Authorization header's.
func (s *Service) Refresh(ctx context.Context, req RefreshRequest) (*LoginResult, error) {
	in := req.Body
	in.Bearer = req.Token()
	if in.Bearer == "" || in.RefreshToken == "" || subtle.ConstantTimeCompare([]byte(in.Bearer), []byte(in.RefreshToken)) != 1 {
		return nil, errBadRefresh
	}
	return s.refresh(ctx, in.Bearer)
}

// Me is the caller's profile.
func (s *Service) Me(ctx context.Context) (*User, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if u := s.cachedProfile(p.CredentialID(), p.UserID); u != nil {
		return u, nil
	}
	return readUser(s, p, "read the profile", (*userRec).view)
}

// Logout ends the caller's session. It takes no input: a body (clients
// often send the refresh token along) is ignored.
func (s *Service) Logout(ctx context.Context, _ struct{}) error {
	p, err := platform.Caller(ctx)
	if err != nil {
		return err
	}
	if p.Kind != KindSession {
		return fault.Errorf(fault.CodeBadRequest, "logout ends a session; revoke an auth token with DELETE /api/v1/auth/tokens/{id}")
	}
	if err := s.revokeSession(p.SessionID, "logout"); err != nil {
		return fault.Internal("end the session", err)
	}
	return nil
}
