package identity

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/mail"
	"deckhand/platform"
	"deckhand/platform/store"
)

func (s *Service) accountRoutes() []platform.Route {
	tag := []string{"auth"}
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/auth/signup", Public: true, Tags: tag, Handler: s.handleSignup,
			Summary: "Create an account (inactive until its email is verified)",
			Description: "Password rule: at least 12 characters with an uppercase letter, a lowercase letter, a digit and a special character. " +
				"`region` defaults to the first available region. A verification mail with a link whose query carries `token=<token>` is sent; " +
				"signing up again before verifying re-sends the link (the password of the signup whose link is used wins); " +
				"an address with a verified account gets a notice mail instead, and the answer is the same, so signup never reveals whether an email exists. " +
				"403 when signups are disabled; 429 with Retry-After past 30 signups per IP per 5 minutes or 3 per address per hour. " +
				emailRule,
			Body: signupReq{}, Response: emailData{}},
		{Method: http.MethodPost, Path: "/api/v1/auth/verify-email", Public: true, Tags: tag, Handler: s.handleVerifyEmail,
			Summary: "Activate an account with the token from its verification mail (single use, valid 24 hours)",
			Body:    tokenReq{}, Response: User{}},
		{Method: http.MethodPost, Path: "/api/v1/auth/forgot-password", Public: true, Tags: tag, Handler: s.handleForgot,
			Summary:     "Mail a password reset link (token valid 1 hour)",
			Description: "Always answers 200 with the same message whether or not the address has an account. 429 past 3 mails per address per hour or 30 per IP per hour.",
			Body:        emailReq{}},
		{Method: http.MethodPost, Path: "/api/v1/auth/reset-password", Public: true, Tags: tag, Handler: s.handleReset,
			Summary:     "Set a new password with a reset token",
			Description: "The new password follows the signup rule. Every session of the account ends; the address counts as verified.",
			Body:        resetReq{}},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/login", Public: true, Tags: tag, Handler: s.handleLogin,
			Summary: "Log in with username or email and password",
			Description: "Password rule: at least 8 characters with an uppercase letter, a lowercase letter and a digit. " +
				"`email` is looked up in its canonical form (see signup): any spelling of the address finds the account. " +
				"`response_mode=tokens` (default) answers the login result (access token 1 day, refresh token 7 days). " +
				"`response_mode=intent` needs `code_challenge` (base64url SHA-256 of a 43-128 character `code_verifier`) and answers `auth_intent_token`, " +
				"valid 5 minutes, exchanged once at POST /api/v1/auth/intent/exchange. " +
				"When the account has two-factor on, the answer is `requires_2fa: true` and a `temp_token` (5 minutes) for POST /api/v1/users/auth/2fa/verify. " +
				"401 for wrong credentials (the same whether or not the account exists); 403 for banned or unverified accounts; " +
				"429 with Retry-After past 30 attempts per IP per 5 minutes or 10 failures per account per 15 minutes.",
			Body: loginReq{}, Response: LoginResult{}},
		{Method: http.MethodPost, Path: "/api/v1/auth/intent/exchange", Public: true, Tags: tag, Handler: s.handleIntentExchange,
			Summary:     "Exchange an auth_intent_token (or an OAuth completion code) and its code_verifier for session tokens",
			Description: "Single use: a wrong verifier also consumes the token. Answers the login result.",
			Body:        exchangeReq{}, Response: LoginResult{}},
		{Method: http.MethodPost, Path: "/api/v1/auth/intent/cancel", Public: true, Tags: tag, Handler: s.handleIntentCancel, Status: http.StatusNoContent,
			Summary:     "Cancel an auth intent token, OAuth completion code or 2FA temp_token sent as Bearer",
			Description: "Idempotent: an unknown or already used token also answers 204. 401 without a Bearer credential."},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/refresh", Public: true, Tags: tag, Handler: s.handleRefresh,
			Summary: "Rotate the session's access and refresh tokens",
			Description: "The refresh token must be byte-identical in `Authorization: Bearer` and in body `refreshToken`, else 401 `Invalid refresh token`. " +
				"Replaying a refresh token that was already rotated revokes the whole session, except within 10 seconds of its rotation " +
				"(two tabs refreshing at once both get the current pair). 429 past 150 refreshes per IP or per account per 5 minutes.",
			Body: refreshReq{}, Response: LoginResult{}},
		{Method: http.MethodGet, Path: "/api/v1/users/auth/me", Tags: tag, Handler: s.handleMe,
			Summary: "The authenticated user's profile", Response: User{}},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/logout", Tags: tag, Handler: s.handleLogout,
			Summary:     "End the current session: its access and refresh tokens stop working at once",
			Description: "Needs a session token; auth tokens are revoked with DELETE /api/v1/auth/tokens/{id}."},
	}
}

type emailData struct {
	Email string `json:"email"`
}

type signupReq struct {
	Email    string `json:"email" required:"true"`
	Password string `json:"password" required:"true"`
	Region   string `json:"region,omitempty"`
}

var regionRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

func (r *signupReq) Validate() error {
	e, err := normalizeEmail("email", r.Email)
	if err != nil {
		return err
	}
	r.Email = e
	if err := checkSignupPassword("password", r.Password); err != nil {
		return err
	}
	if r.Region != "" && !regionRe.MatchString(r.Region) {
		return platform.Invalid("region", "must be a region id (lowercase letters, digits and `-`)")
	}
	return nil
}

type emailReq struct {
	Email string `json:"email" required:"true"`
}

func (r *emailReq) Validate() error {
	e, err := normalizeEmail("email", r.Email)
	r.Email = e
	return err
}

type tokenReq struct {
	Token string `json:"token" required:"true"`
}

func (r *tokenReq) Validate() error {
	if r.Token == "" {
		return platform.Invalid("token", "is required")
	}
	return nil
}

type resetReq struct {
	Token    string `json:"token" required:"true"`
	Password string `json:"password" required:"true"`
}

func (r *resetReq) Validate() error {
	if r.Token == "" {
		return platform.Invalid("token", "is required")
	}
	return checkSignupPassword("password", r.Password)
}

type loginReq struct {
	Username            string `json:"username,omitempty"`
	Email               string `json:"email,omitempty"`
	Password            string `json:"password" required:"true"`
	ResponseMode        string `json:"response_mode,omitempty"`
	CodeChallenge       string `json:"code_challenge,omitempty"`
	CodeChallengeMethod string `json:"code_challenge_method,omitempty"`
}

func (r *loginReq) Validate() error {
	switch {
	case r.Username == "" && r.Email == "":
		return platform.Invalid("username", "username or email is required")
	case r.Username != "" && r.Email != "":
		return platform.Invalid("username", "send either username or email, not both")
	case len(r.Username) > 254 || len(r.Email) > 254:
		return platform.Invalid("username", "must be at most 254 characters")
	}
	if r.Email != "" {
		e, err := normalizeEmail("email", r.Email)
		if err != nil {
			return err
		}
		r.Email = e
	}
	if err := checkLoginPassword(r.Password); err != nil {
		return err
	}
	switch r.ResponseMode {
	case "", "tokens":
		r.ResponseMode = "tokens"
	case "intent":
		if err := validChallenge("code_challenge", r.CodeChallenge); err != nil {
			if r.CodeChallenge == "" {
				return platform.Invalid("code_challenge", "is required when response_mode is intent")
			}
			return err
		}
	default:
		return platform.Invalid("response_mode", "must be tokens or intent")
	}
	if r.CodeChallengeMethod != "" && r.CodeChallengeMethod != "S256" {
		return platform.Invalid("code_challenge_method", "must be S256")
	}
	return nil
}

type exchangeReq struct {
	AuthIntentToken string `json:"auth_intent_token,omitempty"`
	Code            string `json:"code,omitempty"`
	CodeVerifier    string `json:"code_verifier" required:"true"`
}

func (r *exchangeReq) Validate() error {
	if r.AuthIntentToken == "" && r.Code == "" {
		return platform.Invalid("auth_intent_token", "is required (or `code` from an OAuth completion)")
	}
	if r.AuthIntentToken != "" && r.Code != "" {
		return platform.Invalid("auth_intent_token", "send either auth_intent_token or code, not both")
	}
	if r.CodeVerifier == "" {
		return platform.Invalid("code_verifier", "is required")
	}
	if len(r.CodeVerifier) < 43 || len(r.CodeVerifier) > 128 {
		return platform.Invalid("code_verifier", "must be 43 to 128 characters")
	}
	return nil
}

type refreshReq struct {
	RefreshToken string `json:"refreshToken" required:"true"`
}

// sendMail delivers m, logging (never returning) the address on failure.
func (s *Service) sendMail(ctx context.Context, m mail.Message) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.mailer.Send(ctx, m); err != nil {
		return platform.Internal("send the email", err)
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
	return "", platform.Invalid("region", "must be one of the available regions (GET /api/v1/auth/available-regions)")
}

func (s *Service) handleSignup(c fiber.Ctx) error {
	if !s.signups {
		return forbidden("signups are disabled on this server")
	}
	if err := s.limiter.hit("signup:ip:"+platform.ClientIP(c), s.limits.SignupPerIP); err != nil {
		return err
	}
	var req signupReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	// Signup mails an address whether or not it has an account, so it
	// shares the per-address mail budget's rule (counted for every
	// address alike, it reveals nothing).
	if err := s.limiter.hit("signup:acct:"+req.Email, s.limits.RecoveryPerAccount); err != nil {
		return err
	}
	region, err := s.pickRegion(req.Region)
	if err != nil {
		return err
	}
	// Hash before the write transaction: argon2 must not hold the store lock.
	h, err := hashPassword(req.Password)
	if err != nil {
		return platform.Internal("hash the password", err)
	}
	var msg mail.Message
	err = s.update(func(tx *store.Tx) error {
		existing, err := userByIndex(tx, bucketEmails, req.Email)
		if err != nil {
			return err
		}
		if existing != nil {
			if existing.EmailVerified {
				msg = mail.Message{To: req.Email, Subject: "Someone tried to sign up with your address",
					Text: "An account already exists for this address. If this was you, log in or reset your password at\n\n" +
						s.publicURL + "/auth/forgot-password\n"}
				return nil
			}
			// Signing up again before verifying re-sends the link. The new
			// token carries this signup's password, so whoever proves the
			// mailbox also fixes the password: a stranger who registered
			// the address first cannot keep a password on it.
			tok, err := s.issueOnce(tx, onceRec{Kind: onceVerify, UserID: existing.ID, PasswordHash: h})
			msg = s.verificationMail(req.Email, tok)
			return err
		}
		u, err := s.createUser(tx, newUser{Email: req.Email, Region: region, Source: "signup", IP: platform.ClientIP(c)})
		if err != nil {
			return err
		}
		u.PasswordHash = h
		if err := putUser(tx, u); err != nil {
			return err
		}
		tok, err := s.issueOnce(tx, onceRec{Kind: onceVerify, UserID: u.ID, PasswordHash: h})
		msg = s.verificationMail(req.Email, tok)
		return err
	})
	if err != nil {
		return storeErr("create the account", err)
	}
	if err := s.sendMail(c.Context(), msg); err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Signup successful: check your email to verify your account", emailData{Email: req.Email})
}

var errBadToken = platform.Invalid("token", "is invalid or has expired")

func (s *Service) handleVerifyEmail(c fiber.Ctx) error {
	if err := s.limiter.hit("verify:ip:"+platform.ClientIP(c), s.limits.VerifyPerIP); err != nil {
		return err
	}
	var req tokenReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	var view User
	err := s.update(func(tx *store.Tx) error {
		rec, u, err := s.takeOnceUser(tx, onceVerify, req.Token)
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
		return storeErr("verify the email", err)
	}
	return platform.Respond(c, http.StatusOK, "Email verified: the account is active", view)
}

const sameAnswer = "If an account exists for this address, we have sent it an email"

func (s *Service) recoveryLimits(c fiber.Ctx, email string) error {
	if err := s.limiter.hit("recovery:ip:"+platform.ClientIP(c), s.limits.RecoveryPerIP); err != nil {
		return err
	}
	return s.limiter.hit("recovery:acct:"+email, s.limits.RecoveryPerAccount)
}

func (s *Service) handleForgot(c fiber.Ctx) error {
	var req emailReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	if err := s.recoveryLimits(c, req.Email); err != nil {
		return err
	}
	var msg *mail.Message
	err := s.update(func(tx *store.Tx) error {
		u, err := userByIndex(tx, bucketEmails, req.Email)
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
		return storeErr("start the password reset", err)
	}
	if msg != nil {
		// A mail failure must not answer differently from "no such account".
		if err := s.sendMail(c.Context(), *msg); err != nil {
			s.log.Error("password reset mail failed", "err", err)
		}
	}
	return platform.Respond(c, http.StatusOK, sameAnswer, nil)
}

func (s *Service) handleReset(c fiber.Ctx) error {
	if err := s.limiter.hit("verify:ip:"+platform.ClientIP(c), s.limits.VerifyPerIP); err != nil {
		return err
	}
	var req resetReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	h, err := hashPassword(req.Password)
	if err != nil {
		return platform.Internal("hash the password", err)
	}
	err = s.update(func(tx *store.Tx) error {
		_, u, err := s.takeOnceUser(tx, onceReset, req.Token)
		if err != nil {
			return err
		}
		u.PasswordHash, u.EmailVerified, u.UpdatedAt = h, true, s.now()
		if err := putUser(tx, u); err != nil {
			return err
		}
		return s.revokeUserSessions(tx, u.ID, "password reset")
	})
	if err != nil {
		return storeErr("reset the password", err)
	}
	return platform.Respond(c, http.StatusOK, "Password updated: log in with the new password", nil)
}

var errBadLogin = unauthorized("Invalid login credentials")

func (s *Service) handleLogin(c fiber.Ctx) error {
	if err := s.limiter.hit("login:ip:"+platform.ClientIP(c), s.limits.LoginPerIP); err != nil {
		return err
	}
	var req loginReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	ident := strings.ToLower(strings.TrimSpace(req.Username + req.Email))
	acctKey := "login:acct:" + ident
	if err := s.limiter.check(acctKey, s.limits.LoginPerAccount); err != nil {
		return err
	}
	var u *userRec
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		if req.Email != "" {
			u, err = userByIndex(tx, bucketEmails, ident)
		} else {
			u, err = userByIndex(tx, bucketNames, ident)
		}
		return err
	})
	if err != nil {
		return platform.Internal("look up the account", err)
	}
	hash := s.dummy
	if u != nil && u.PasswordHash != "" {
		hash = u.PasswordHash
	}
	if ok := checkPassword(hash, req.Password); !ok || u == nil || u.PasswordHash == "" {
		if err := s.limiter.add(acctKey, s.limits.LoginPerAccount); err != nil {
			return err
		}
		return errBadLogin
	}
	if u.IsBanned {
		return forbidden("this account is banned")
	}
	if !u.EmailVerified {
		return forbidden("email address not verified: follow the link in the verification email first")
	}
	res, err := s.completeLogin(u.ID, "password", req.ResponseMode, req.CodeChallenge, platform.ClientIP(c), true)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Login successful", res)
}

// completeLogin is the common end of every login path once the user is
// known: the 2FA step when enabled (and not done yet), an intent token in
// intent mode, or a new session.
func (s *Service) completeLogin(userID, method, mode, challenge, ip string, needSecondFactor bool) (*LoginResult, error) {
	var res *LoginResult
	err := s.update(func(tx *store.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		if u == nil {
			return errBadLogin
		}
		if u.IsBanned {
			return errBanned
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
		return nil, storeErr("start the session", err)
	}
	return res, nil
}

func (s *Service) handleIntentExchange(c fiber.Ctx) error {
	if err := s.limiter.hit("verify:ip:"+platform.ClientIP(c), s.limits.VerifyPerIP); err != nil {
		return err
	}
	var req exchangeReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	secret := req.AuthIntentToken + req.Code
	var res *LoginResult
	err := s.update(func(tx *store.Tx) error {
		rec, err := s.takeOnce(tx, onceIntent, secret)
		if err != nil {
			return err
		}
		if rec == nil {
			return unauthorized("auth intent token is invalid, used or expired")
		}
		if !checkPKCE(rec.Challenge, req.CodeVerifier) {
			return errBadVerifier
		}
		u, err := getUser(tx, rec.UserID)
		if err != nil {
			return err
		}
		if u == nil {
			return unauthorized("auth intent token is invalid, used or expired")
		}
		if u.IsBanned {
			return errBanned
		}
		res, err = s.startSession(tx, u, rec.Method, platform.ClientIP(c))
		return err
	})
	if err == errBadVerifier {
		// The failed attempt still burns the token (a guessed verifier gets one try).
		_ = s.update(func(tx *store.Tx) error { return s.dropOnce(tx, onceIntent, secret) })
	}
	if err != nil {
		return storeErr("exchange the intent token", err)
	}
	return platform.Respond(c, http.StatusOK, "Login successful", res)
}

var errBadVerifier = unauthorized("code_verifier does not match the code_challenge")

func (s *Service) handleIntentCancel(c fiber.Ctx) error {
	raw, ok := bearer(c)
	if !ok {
		return errNoCredential
	}
	err := s.update(func(tx *store.Tx) error {
		if err := s.dropOnce(tx, onceIntent, raw); err != nil {
			return err
		}
		return s.dropOnce(tx, onceTemp, raw)
	})
	if err != nil {
		return platform.Internal("cancel the intent", err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) handleRefresh(c fiber.Ctx) error {
	if err := s.limiter.hit("refresh:ip:"+platform.ClientIP(c), s.limits.RefreshPerIP); err != nil {
		return err
	}
	hdr, ok := bearer(c)
	if !ok {
		return errBadRefresh
	}
	var req refreshReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	if req.RefreshToken == "" || subtle.ConstantTimeCompare([]byte(hdr), []byte(req.RefreshToken)) != 1 {
		return errBadRefresh
	}
	res, err := s.refresh(hdr)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Token refreshed", res)
}

func (s *Service) handleMe(c fiber.Ctx) error {
	p, err := s.principal(c)
	if err != nil {
		return err
	}
	if p.user != nil {
		return platform.Respond(c, http.StatusOK, "User profile", p.user)
	}
	var v User
	if err := s.readUser(p, "read the profile", func(u *userRec) { v = u.view() }); err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "User profile", v)
}

func (s *Service) handleLogout(c fiber.Ctx) error {
	p, err := s.principal(c)
	if err != nil {
		return err
	}
	if p.Kind != KindSession {
		return platform.Errorf(platform.CodeBadRequest, "logout ends a session; revoke an auth token with DELETE /api/v1/auth/tokens/{id}")
	}
	if err := s.revokeSession(p.SessionID, "logout"); err != nil {
		return platform.Internal("end the session", err)
	}
	return platform.Respond(c, http.StatusOK, "Logged out", nil)
}
