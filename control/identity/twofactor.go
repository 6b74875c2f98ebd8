package identity

import (
	"crypto/rand"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"deckhand/platform"
	"deckhand/platform/store"
)

// TOTP parameters: RFC 6238 defaults (SHA-1, 6 digits, 30 s), which every
// authenticator app and `oathtool --totp -b <secret>` use. One step of skew
// either way is accepted; a step already used is not (replay guard).
var totpOpts = totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

const (
	backupCodeCount = 10
	tempMaxAttempts = 5
)

func (s *Service) twoFactorRoutes() []platform.Route {
	tag := []string{"two-factor"}
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/verify", Public: true, Tags: tag, Handler: s.handle2FAVerify,
			Summary: "Second login step: exchange the login's temp_token and a TOTP or backup code for the login result",
			Description: "The temp_token goes in body `temp_token` or as `Authorization: Bearer`. A code is the 6-digit TOTP or an unused backup code " +
				"(single use). Five wrong codes burn the temp_token. When the login asked for response_mode=intent, the answer is `auth_intent_token`. " +
				"429 with Retry-After past 15 checks per minute per IP or per account.",
			Body: verify2FAReq{}, Response: LoginResult{}},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/setup", Tags: tag, Handler: s.handle2FASetup,
			Summary:     "Start two-factor setup: a new TOTP secret and its otpauth:// URI (session token required)",
			Description: "Nothing changes until verify-setup confirms a code; a new setup replaces an unconfirmed one. 409 when two-factor is already on.",
			Response:    setupResp{}},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/verify-setup", Tags: tag, Handler: s.handle2FAVerifySetup,
			Summary: "Confirm setup with a current code; turns two-factor on and answers the backup codes (shown once)",
			Body:    codeReq{}, Response: backupResp{}},
		{Method: http.MethodGet, Path: "/api/v1/users/auth/2fa/status", Tags: tag, Handler: s.handle2FAStatus,
			Summary: "Two-factor state of the caller", Response: statusResp{}},
		{Method: http.MethodDelete, Path: "/api/v1/users/auth/2fa", Tags: tag, Handler: s.handle2FADisable,
			Summary: "Turn two-factor off; needs a current TOTP or backup code in body `code` (session token required)",
			Body:    codeReq{}, Response: statusResp{}},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/backup-codes/regenerate", Tags: tag, Handler: s.handle2FARegenerate,
			Summary: "Replace all backup codes (needs a current TOTP code in body `code`); the new ones are shown once",
			Body:    codeReq{}, Response: backupResp{}},
		{Method: http.MethodPut, Path: "/api/v1/users/auth/2fa/token-gate", Tags: tag, Handler: s.handleTokenGate(true),
			Summary:     "Set the token-gate preference: when on, creating an svc_ auth token or changing its ip_whitelist, expires_at or is_enabled needs a current code in header X-2FA-Code",
			Description: "Body `enabled` (required). Turning it on needs two-factor on (400 otherwise).",
			Body:        gateReq{}, Response: statusResp{}},
		{Method: http.MethodPatch, Path: "/api/v1/users/auth/2fa/token-gate", Tags: tag, Handler: s.handleTokenGate(false),
			Summary: "Change the token-gate preference (same as PUT; `enabled` may be omitted for no change)",
			Body:    gateReq{}, Response: statusResp{}},
	}
}

type verify2FAReq struct {
	TempToken string `json:"temp_token,omitempty"`
	Code      string `json:"code" required:"true"`
}

type codeReq struct {
	Code string `json:"code" required:"true"`
}

func (r *codeReq) Validate() error { return checkCodeField(r.Code) }

func checkCodeField(code string) error {
	if normCode(code) == "" {
		return platform.Invalid("code", "is required")
	}
	if len(code) > 64 {
		return platform.Invalid("code", "must be a 6-digit code or a backup code")
	}
	return nil
}

type gateReq struct {
	Enabled *bool `json:"enabled"`
}

type setupResp struct {
	Secret     string `json:"secret"`
	OtpauthURL string `json:"otpauth_url"`
	Issuer     string `json:"issuer"`
	Account    string `json:"account"`
	Digits     int    `json:"digits"`
	Period     int    `json:"period"`
	Algorithm  string `json:"algorithm"`
}

type backupResp struct {
	Enabled     bool     `json:"enabled"`
	BackupCodes []string `json:"backup_codes"`
}

type statusResp struct {
	Enabled              bool       `json:"enabled"`
	PendingSetup         bool       `json:"pending_setup"`
	EnabledAt            *time.Time `json:"enabled_at"`
	BackupCodesRemaining int        `json:"backup_codes_remaining"`
	TokenGate            bool       `json:"token_gate"`
}

func statusOf(u *userRec) statusResp {
	return statusResp{Enabled: u.TOTPSecret != "", PendingSetup: u.TOTPPending != "", EnabledAt: u.TwoFactorSince,
		BackupCodesRemaining: len(u.BackupCodes), TokenGate: u.TokenGate && u.TOTPSecret != ""}
}

func normCode(code string) string {
	return strings.ToLower(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(code)))
}

func isTOTP(code string) bool {
	if len(code) != 6 {
		return false
	}
	for _, r := range code {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// totpStep checks a 6-digit code against sealed within one step of now and
// returns its step, 0 when it does not match.
func (s *Service) totpStep(sealed, code string, now time.Time) int64 {
	secret, err := s.open(purposeTOTP, sealed)
	if err != nil {
		s.log.Error("TOTP secret cannot be opened", "err", err)
		return 0
	}
	var matched int64
	for skew := int64(-1); skew <= 1; skew++ {
		t := now.Add(time.Duration(skew*30) * time.Second)
		want, err := totp.GenerateCodeCustom(string(secret), t, totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			matched = t.Unix() / 30
		}
	}
	return matched
}

// checkSecondFactor consumes a TOTP step or a backup code of u (the caller
// saves u). allowBackup false accepts TOTP codes only.
func (s *Service) checkSecondFactor(u *userRec, raw string, allowBackup bool) bool {
	code := normCode(raw)
	if u.TOTPSecret == "" || code == "" {
		return false
	}
	if isTOTP(code) {
		step := s.totpStep(u.TOTPSecret, code, s.now())
		if step == 0 || step <= u.TOTPLastStep {
			return false
		}
		u.TOTPLastStep = step
		return true
	}
	if !allowBackup {
		return false
	}
	key := s.lookupKey("backup\x00" + code)
	for i, h := range u.BackupCodes {
		if subtle.ConstantTimeCompare([]byte(h), []byte(key)) == 1 {
			u.BackupCodes = append(u.BackupCodes[:i:i], u.BackupCodes[i+1:]...)
			return true
		}
	}
	return false
}

const backupAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newBackupCodes returns codes to show (xxxxx-xxxxx) and their lookup keys.
func (s *Service) newBackupCodes() (shown, keys []string) {
	for i := 0; i < backupCodeCount; i++ {
		b := make([]byte, 10)
		if _, err := rand.Read(b); err != nil {
			panic("identity: crypto/rand failed: " + err.Error())
		}
		for j := range b {
			b[j] = backupAlphabet[int(b[j])%len(backupAlphabet)]
		}
		code := string(b[:5]) + "-" + string(b[5:])
		shown = append(shown, code)
		keys = append(keys, s.lookupKey("backup\x00"+normCode(code)))
	}
	return shown, keys
}

// twoFactorLimit applies the per-IP and per-account limits of code checks.
func (s *Service) twoFactorLimit(c fiber.Ctx, userID string) error {
	if err := s.limiter.hit("2fa:ip:"+platform.ClientIP(c), s.limits.TwoFactorPerIP); err != nil {
		return err
	}
	if userID == "" {
		return nil
	}
	return s.limiter.hit("2fa:acct:"+userID, s.limits.TwoFactorPerAccount)
}

// sessionUser runs fn on the caller's account in a write transaction;
// 2FA management needs a session token, not an svc_ token.
func (s *Service) sessionUser(c fiber.Ctx, op string, fn func(tx *store.Tx, u *userRec) error) error {
	p, err := s.principal(c)
	if err != nil {
		return err
	}
	if p.Kind != KindSession {
		return forbidden("two-factor settings need a session token, not an auth token")
	}
	err = s.update(func(tx *store.Tx) error {
		u, err := callerUser(tx, p)
		if err != nil {
			return err
		}
		return fn(tx, u)
	})
	return storeErr(op, err)
}

// readUser runs fn on the caller's account in a read transaction.
func (s *Service) readUser(p *Principal, op string, fn func(u *userRec)) error {
	err := s.db.View(func(tx *store.Tx) error {
		u, err := callerUser(tx, p)
		if err == nil {
			fn(u)
		}
		return err
	})
	return storeErr(op, err)
}

// callerUser loads the account behind p; a credential whose account is
// gone is a bad credential.
func callerUser(tx *store.Tx, p *Principal) (*userRec, error) {
	u, err := getUser(tx, p.UserID)
	if err == nil && u == nil {
		err = errBadCredential
	}
	return u, err
}

// provenChange runs fn on the caller's account once the request's code
// proves its enabled second factor (a backup code counts when allowBackup).
func (s *Service) provenChange(c fiber.Ctx, op string, allowBackup bool, fn func(tx *store.Tx, u *userRec) error) error {
	req, err := s.codeRequest(c)
	if err != nil {
		return err
	}
	return s.sessionUser(c, op, func(tx *store.Tx, u *userRec) error {
		if u.TOTPSecret == "" {
			return platform.Errorf(platform.CodeBadRequest, "two-factor is not enabled")
		}
		if !s.checkSecondFactor(u, req.Code, allowBackup) {
			return errBadCode
		}
		return fn(tx, u)
	})
}

// codeRequest authenticates a two-factor change, decodes its code and
// charges the caller's two-factor attempt budget.
func (s *Service) codeRequest(c fiber.Ctx) (codeReq, error) {
	var req codeReq
	p, err := s.principal(c)
	if err != nil {
		return req, err
	}
	if err := platform.Decode(c, &req); err != nil {
		return req, err
	}
	return req, s.twoFactorLimit(c, p.UserID)
}

var errBadCode = unauthorized("invalid two-factor code")

func (s *Service) handle2FASetup(c fiber.Ctx) error {
	var out setupResp
	err := s.sessionUser(c, "start two-factor setup", func(tx *store.Tx, u *userRec) error {
		if u.TOTPSecret != "" {
			return platform.Errorf(platform.CodeConflict, "two-factor is already enabled; disable it first to set up a new secret")
		}
		account := u.Email
		if account == "" {
			account = u.Username
		}
		key, err := totp.Generate(totp.GenerateOpts{Issuer: "deckhand", AccountName: account, Period: 30,
			Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return platform.Internal("generate the TOTP secret", err)
		}
		sealed, err := s.seal(purposeTOTP, []byte(key.Secret()))
		if err != nil {
			return err
		}
		u.TOTPPending, u.UpdatedAt = sealed, s.now()
		out = setupResp{Secret: key.Secret(), OtpauthURL: key.URL(), Issuer: "deckhand", Account: account,
			Digits: 6, Period: 30, Algorithm: "SHA1"}
		return putUser(tx, u)
	})
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Scan the otpauth URL (or enter the secret) in an authenticator app, then confirm a code at verify-setup", out)
}

func (s *Service) handle2FAVerifySetup(c fiber.Ctx) error {
	req, err := s.codeRequest(c)
	if err != nil {
		return err
	}
	var out backupResp
	err = s.sessionUser(c, "confirm two-factor setup", func(tx *store.Tx, u *userRec) error {
		if u.TOTPSecret != "" {
			return platform.Errorf(platform.CodeConflict, "two-factor is already enabled")
		}
		if u.TOTPPending == "" {
			return platform.Errorf(platform.CodeBadRequest, "no two-factor setup in progress: call POST /api/v1/users/auth/2fa/setup first")
		}
		code := normCode(req.Code)
		step := int64(0)
		if isTOTP(code) {
			step = s.totpStep(u.TOTPPending, code, s.now())
		}
		if step == 0 {
			return errBadCode
		}
		now := s.now()
		shown, keys := s.newBackupCodes()
		u.TOTPSecret, u.TOTPPending, u.TOTPLastStep, u.BackupCodes, u.TwoFactorSince, u.UpdatedAt = u.TOTPPending, "", step, keys, &now, now
		out = backupResp{Enabled: true, BackupCodes: shown}
		return putUser(tx, u)
	})
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Two-factor enabled: store the backup codes now, they are not shown again", out)
}

func (s *Service) handle2FAStatus(c fiber.Ctx) error {
	p, err := s.principal(c)
	if err != nil {
		return err
	}
	var out statusResp
	if err := s.readUser(p, "read the two-factor status", func(u *userRec) { out = statusOf(u) }); err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Two-factor status", out)
}

func (s *Service) handle2FADisable(c fiber.Ctx) error {
	var out statusResp
	err := s.provenChange(c, "disable two-factor", true, func(tx *store.Tx, u *userRec) error {
		u.TOTPSecret, u.TOTPPending, u.TOTPLastStep, u.BackupCodes, u.TwoFactorSince, u.TokenGate = "", "", 0, nil, nil, false
		u.UpdatedAt = s.now()
		out = statusOf(u)
		return putUser(tx, u)
	})
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Two-factor disabled", out)
}

func (s *Service) handle2FARegenerate(c fiber.Ctx) error {
	var out backupResp
	err := s.provenChange(c, "regenerate backup codes", false, func(tx *store.Tx, u *userRec) error {
		shown, keys := s.newBackupCodes()
		u.BackupCodes, u.UpdatedAt = keys, s.now()
		out = backupResp{Enabled: true, BackupCodes: shown}
		return putUser(tx, u)
	})
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "New backup codes: the old ones no longer work", out)
}

func (s *Service) handleTokenGate(put bool) fiber.Handler {
	return func(c fiber.Ctx) error {
		if _, err := s.principal(c); err != nil {
			return err
		}
		var req gateReq
		if err := platform.Decode(c, &req); err != nil {
			return err
		}
		if put && req.Enabled == nil {
			return platform.Invalid("enabled", "is required")
		}
		var out statusResp
		err := s.sessionUser(c, "set the token gate", func(tx *store.Tx, u *userRec) error {
			if req.Enabled != nil {
				if *req.Enabled && u.TOTPSecret == "" {
					return platform.Invalid("enabled", "the token gate needs two-factor enabled first")
				}
				if u.TokenGate != *req.Enabled {
					u.TokenGate, u.UpdatedAt = *req.Enabled, s.now()
					if err := putUser(tx, u); err != nil {
						return err
					}
				}
			}
			out = statusOf(u)
			return nil
		})
		if err != nil {
			return err
		}
		return platform.Respond(c, http.StatusOK, "Token gate updated", out)
	}
}

// checkTokenGate demands a current code in X-2FA-Code from a user whose
// token gate is on.
func (s *Service) checkTokenGate(c fiber.Ctx, userID string) error {
	code := c.Get("X-2FA-Code")
	gated := func(u *userRec) bool { return u != nil && u.TokenGate && u.TOTPSecret != "" }
	// The attempt counts before (and whatever) the check decides, so it is
	// counted outside the transaction that a refusal rolls back.
	var on bool
	err := s.db.View(func(tx *store.Tx) error {
		u, err := getUser(tx, userID)
		on = gated(u)
		return err
	})
	if err != nil || !on {
		return storeErr("check the token gate", err)
	}
	if code == "" {
		return forbidden("the two-factor token gate is on: send a current code in the X-2FA-Code header")
	}
	if err := s.twoFactorLimit(c, userID); err != nil {
		return err
	}
	return storeErr("check the token gate", s.update(func(tx *store.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil || !gated(u) {
			return err
		}
		if !s.checkSecondFactor(u, code, true) {
			return forbidden("the X-2FA-Code code is invalid")
		}
		return putUser(tx, u)
	}))
}

func (s *Service) handle2FAVerify(c fiber.Ctx) error {
	var req verify2FAReq
	decodeErr := platform.Decode(c, &req)
	temp := req.TempToken
	if temp == "" {
		temp, _ = bearer(c)
	}
	if temp == "" {
		return unauthorized("temp_token is required (body temp_token or Authorization: Bearer)")
	}
	if err := s.limiter.hit("2fa:ip:"+platform.ClientIP(c), s.limits.TwoFactorPerIP); err != nil {
		return err
	}
	var rec *onceRec
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		rec, err = s.peekOnce(tx, onceTemp, temp)
		return err
	})
	if err != nil {
		return platform.Internal("check the temp token", err)
	}
	if rec == nil {
		return unauthorized("temp_token is invalid, used or expired")
	}
	if decodeErr != nil {
		return decodeErr
	}
	if err := checkCodeField(req.Code); err != nil {
		return err
	}
	if err := s.limiter.hit("2fa:acct:"+rec.UserID, s.limits.TwoFactorPerAccount); err != nil {
		return err
	}
	ok := false
	err = s.update(func(tx *store.Tx) error {
		rec, err := s.peekOnce(tx, onceTemp, temp)
		if err != nil {
			return err
		}
		if rec == nil {
			return unauthorized("temp_token is invalid, used or expired")
		}
		u, err := getUser(tx, rec.UserID)
		if err != nil {
			return err
		}
		if u == nil {
			return unauthorized("temp_token is invalid, used or expired")
		}
		if s.checkSecondFactor(u, req.Code, true) {
			ok = true
			if err := putUser(tx, u); err != nil {
				return err
			}
			return s.dropOnce(tx, onceTemp, temp)
		}
		rec.Attempts++
		if rec.Attempts >= tempMaxAttempts {
			return s.dropOnce(tx, onceTemp, temp)
		}
		return s.putOnce(tx, onceTemp, temp, rec)
	})
	if err != nil {
		return storeErr("verify the two-factor code", err)
	}
	if !ok {
		return errBadCode
	}
	res, err := s.completeLogin(rec.UserID, rec.Method, rec.Mode, rec.Challenge, platform.ClientIP(c), false)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Login successful", res)
}
