package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
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

// Verify2FAInput is the body of the login's two-factor step; the
// temp_token may come as Bearer instead.
type Verify2FAInput struct {
	TempToken string `json:"temp_token,omitempty"`
	Code      string `json:"code" required:"true"`
}

// Verify2FARequest is POST /api/v1/users/auth/2fa/verify: the temp_token
// in the body or as Bearer.
type Verify2FARequest struct {
	Bearer
	Body Verify2FAInput
}

// CodeInput carries a TOTP or backup code.
type CodeInput struct {
	Code string `json:"code" required:"true"`
}

// Validate checks the code's shape.
func (r *CodeInput) Validate() error { return checkCodeField(r.Code) }

func checkCodeField(code string) error {
	if normCode(code) == "" {
		return fault.Invalid("code", "is required")
	}
	if len(code) > 64 {
		return fault.Invalid("code", "must be a 6-digit code or a backup code")
	}
	return nil
}

// TokenGateInput is the body of the token-gate routes; Replace (PUT)
// makes `enabled` required. Turning an active gate off needs Code, a
// current TOTP or backup code, as turning two-factor off does: otherwise a
// stolen session alone could open the gate and mint svc_ tokens.
type TokenGateInput struct {
	Enabled *bool  `json:"enabled"`
	Code    string `json:"code,omitempty" doc:"a current TOTP or backup code; required to turn an active gate off"`
	Replace bool   `json:"-"`
}

// TwoFactorSetup is data of 2FA setup.
type TwoFactorSetup struct {
	Secret     string `json:"secret"`
	OtpauthURL string `json:"otpauth_url"`
	Issuer     string `json:"issuer"`
	Account    string `json:"account"`
	Digits     int    `json:"digits"`
	Period     int    `json:"period"`
	Algorithm  string `json:"algorithm"`
}

// BackupCodes is data of verify-setup and regenerate (shown once).
type BackupCodes struct {
	Enabled     bool     `json:"enabled"`
	BackupCodes []string `json:"backup_codes"`
}

// TwoFactorStatus is the caller's two-factor state.
type TwoFactorStatus struct {
	Enabled              bool       `json:"enabled"`
	PendingSetup         bool       `json:"pending_setup"`
	EnabledAt            *time.Time `json:"enabled_at"`
	BackupCodesRemaining int        `json:"backup_codes_remaining"`
	TokenGate            bool       `json:"token_gate"`
}

func statusOf(u *userRec) TwoFactorStatus {
	return TwoFactorStatus{Enabled: u.TOTPSecret != "", PendingSetup: u.TOTPPending != "", EnabledAt: u.TwoFactorSince,
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
	secret, err := s.sealer.Open(purposeTOTP, sealed)
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
// saves u when it answers nil). allowBackup false accepts TOTP codes only.
// A TOTP code of a step already used answers errCodeUsed (the replay
// guard), any other refusal errBadCode.
func (s *Service) checkSecondFactor(u *userRec, raw string, allowBackup bool) error {
	code := normCode(raw)
	if u.TOTPSecret == "" || code == "" {
		return errBadCode
	}
	if isTOTP(code) {
		step := s.totpStep(u.TOTPSecret, code, s.now())
		switch {
		case step == 0:
			return errBadCode
		case step <= u.TOTPLastStep:
			return errCodeUsed
		}
		u.TOTPLastStep = step
		return nil
	}
	if !allowBackup {
		return errBadCode
	}
	key := s.lookupKey("backup\x00" + code)
	for i, h := range u.BackupCodes {
		if subtle.ConstantTimeCompare([]byte(h), []byte(key)) == 1 {
			u.BackupCodes = append(u.BackupCodes[:i:i], u.BackupCodes[i+1:]...)
			return nil
		}
	}
	return errBadCode
}

const backupAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newBackupCodes returns codes to show (xxxxx-xxxxx) and their lookup keys.
func (s *Service) newBackupCodes() (shown, keys []string) {
	for i := 0; i < backupCodeCount; i++ {
		b := make([]byte, 10)
		_, _ = rand.Read(b)
		for j := range b {
			b[j] = backupAlphabet[int(b[j])%len(backupAlphabet)]
		}
		code := string(b[:5]) + "-" + string(b[5:])
		shown = append(shown, code)
		keys = append(keys, s.lookupKey("backup\x00"+normCode(code)))
	}
	return shown, keys
}

// codeLimit charges userID's two-factor attempt budget; the per-IP budget
// is applied by the host on the routes that check codes.
func (s *Service) codeLimit(ctx context.Context, userID string) error {
	return s.limiter.Allow(ctx, s.rules.twoFactorAcct.On(userID))
}

// sessionUser runs fn on the caller's account in a write transaction and
// answers what fn made; 2FA management needs a session token, not an svc_
// token.
func sessionUser[T any](s *Service, ctx context.Context, op string, fn func(tx *store.Tx, u *userRec) (*T, error)) (*T, error) {
	p, err := sessionCaller(ctx)
	if err != nil {
		return nil, err
	}
	var out *T
	err = s.update(func(tx *store.Tx) error {
		u, err := userOr(tx, p.UserID, errBadCredential)
		if err != nil {
			return err
		}
		out, err = fn(tx, u)
		return err
	})
	if err != nil {
		return nil, fault.Wrap(op, err)
	}
	return out, nil
}

func sessionCaller(ctx context.Context) (*Principal, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.Kind != KindSession {
		return nil, forbidden("two-factor settings need a session token, not an auth token")
	}
	return p, nil
}

// readUser is view of the caller's account, read in a read transaction.
func readUser[T any](s *Service, p *Principal, op string, view func(u *userRec) T) (*T, error) {
	var out T
	err := s.db.View(func(tx *store.Tx) error {
		u, err := userOr(tx, p.UserID, errBadCredential)
		if err == nil {
			out = view(u)
		}
		return err
	})
	if err != nil {
		return nil, fault.Wrap(op, err)
	}
	return &out, nil
}

// provenChange runs fn on the caller's account once code proves its
// enabled second factor (a backup code counts when allowBackup).
func provenChange[T any](s *Service, ctx context.Context, in CodeInput, op string, allowBackup bool, fn func(tx *store.Tx, u *userRec) (*T, error)) (*T, error) {
	if _, err := s.codeCaller(ctx, in); err != nil {
		return nil, err
	}
	return sessionUser(s, ctx, op, func(tx *store.Tx, u *userRec) (*T, error) {
		if u.TOTPSecret == "" {
			return nil, fault.Errorf(fault.CodeBadRequest, "two-factor is not enabled")
		}
		if err := s.checkSecondFactor(u, in.Code, allowBackup); err != nil {
			return nil, err
		}
		return fn(tx, u)
	})
}

// codeCaller is the caller of a two-factor change once its code is well
// formed and its attempt budget allows one more.
func (s *Service) codeCaller(ctx context.Context, in CodeInput) (*Principal, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return p, s.codeLimit(ctx, p.UserID)
}

// CodeTwoFactorCodeUsed: a TOTP code whose 30-second step was already
// used (each step is good once); the next code is.
const CodeTwoFactorCodeUsed = "TWO_FACTOR_CODE_USED"

func init() { fault.RegisterCode(CodeTwoFactorCodeUsed, http.StatusUnauthorized) }

var (
	errBadCode  = unauthorized("invalid two-factor code")
	errCodeUsed = &fault.Error{Code: CodeTwoFactorCodeUsed, Field: "code", Details: "code",
		Message: "this two-factor code was already used: each code is good once; wait for the next one"}
)

// SetupTwoFactor starts two-factor setup with a new TOTP secret.
func (s *Service) SetupTwoFactor(ctx context.Context) (*TwoFactorSetup, error) {
	return sessionUser(s, ctx, "start two-factor setup", func(tx *store.Tx, u *userRec) (*TwoFactorSetup, error) {
		if u.TOTPSecret != "" {
			return nil, fault.Errorf(fault.CodeConflict, "two-factor is already enabled; disable it first to set up a new secret")
		}
		account := u.Email
		if account == "" {
			account = u.Username
		}
		key, err := totp.Generate(totp.GenerateOpts{Issuer: "deckhand", AccountName: account, Period: 30,
			Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return nil, fault.Internal("generate the TOTP secret", err)
		}
		sealed, err := s.sealer.Seal(purposeTOTP, []byte(key.Secret()))
		if err != nil {
			return nil, err
		}
		u.TOTPPending, u.UpdatedAt = sealed, s.now()
		return &TwoFactorSetup{Secret: key.Secret(), OtpauthURL: key.URL(), Issuer: "deckhand", Account: account,
			Digits: 6, Period: 30, Algorithm: "SHA1"}, putUser(tx, u)
	})
}

// ConfirmTwoFactor turns two-factor on with a current code of the pending
// secret and answers the backup codes.
func (s *Service) ConfirmTwoFactor(ctx context.Context, in CodeInput) (*BackupCodes, error) {
	if _, err := s.codeCaller(ctx, in); err != nil {
		return nil, err
	}
	return sessionUser(s, ctx, "confirm two-factor setup", func(tx *store.Tx, u *userRec) (*BackupCodes, error) {
		if u.TOTPSecret != "" {
			return nil, fault.Errorf(fault.CodeConflict, "two-factor is already enabled")
		}
		if u.TOTPPending == "" {
			return nil, fault.Errorf(fault.CodeBadRequest, "no two-factor setup in progress: call POST /api/v1/users/auth/2fa/setup first")
		}
		code := normCode(in.Code)
		step := int64(0)
		if isTOTP(code) {
			step = s.totpStep(u.TOTPPending, code, s.now())
		}
		if step == 0 {
			return nil, errBadCode
		}
		now := s.now()
		shown, keys := s.newBackupCodes()
		u.TOTPSecret, u.TOTPPending, u.TOTPLastStep, u.BackupCodes, u.TwoFactorSince, u.UpdatedAt = u.TOTPPending, "", step, keys, &now, now
		return &BackupCodes{Enabled: true, BackupCodes: shown}, putUser(tx, u)
	})
}

// TwoFactorStatus is the caller's two-factor state.
func (s *Service) TwoFactorStatus(ctx context.Context) (*TwoFactorStatus, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return readUser(s, p, "read the two-factor status", statusOf)
}

// DisableTwoFactor turns two-factor off with a current TOTP or backup code.
func (s *Service) DisableTwoFactor(ctx context.Context, in CodeInput) (*TwoFactorStatus, error) {
	return provenChange(s, ctx, in, "disable two-factor", true, func(tx *store.Tx, u *userRec) (*TwoFactorStatus, error) {
		u.TOTPSecret, u.TOTPPending, u.TOTPLastStep, u.BackupCodes, u.TwoFactorSince, u.TokenGate = "", "", 0, nil, nil, false
		u.UpdatedAt = s.now()
		out := statusOf(u)
		return &out, putUser(tx, u)
	})
}

// RegenerateBackupCodes replaces the backup codes (a TOTP code proves it).
func (s *Service) RegenerateBackupCodes(ctx context.Context, in CodeInput) (*BackupCodes, error) {
	return provenChange(s, ctx, in, "regenerate backup codes", false, func(tx *store.Tx, u *userRec) (*BackupCodes, error) {
		shown, keys := s.newBackupCodes()
		u.BackupCodes, u.UpdatedAt = keys, s.now()
		return &BackupCodes{Enabled: true, BackupCodes: shown}, putUser(tx, u)
	})
}

// ReplaceTokenGate is the PUT of the token gate: enabled is required.
func (s *Service) ReplaceTokenGate(ctx context.Context, in TokenGateInput) (*TwoFactorStatus, error) {
	in.Replace = true
	return s.SetTokenGate(ctx, in)
}

// SetTokenGate sets whether the caller's token changes need a code;
// turning an active gate off needs a current code in `code`.
func (s *Service) SetTokenGate(ctx context.Context, in TokenGateInput) (*TwoFactorStatus, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if in.Replace && in.Enabled == nil {
		return nil, fault.Invalid("enabled", "is required")
	}
	turnOff := in.Enabled != nil && !*in.Enabled
	if turnOff && in.Code != "" {
		// Charged before the write transaction: the limiter writes the store too.
		if err := checkCodeField(in.Code); err != nil {
			return nil, err
		}
		if err := s.gateCodeBudget(ctx, p.UserID); err != nil {
			return nil, err
		}
	}
	return sessionUser(s, ctx, "set the token gate", func(tx *store.Tx, u *userRec) (*TwoFactorStatus, error) {
		if in.Enabled != nil {
			if *in.Enabled && u.TOTPSecret == "" {
				return nil, fault.Invalid("enabled", "the token gate needs two-factor enabled first")
			}
			if turnOff && gateOn(u) {
				if in.Code == "" {
					return nil, fault.Invalid("code", "is required to turn the token gate off: a current TOTP or backup code")
				}
				if err := s.checkSecondFactor(u, in.Code, true); err != nil {
					return nil, err
				}
			}
			if u.TokenGate != *in.Enabled {
				u.TokenGate, u.UpdatedAt = *in.Enabled, s.now()
				if err := putUser(tx, u); err != nil {
					return nil, err
				}
			}
		}
		out := statusOf(u)
		return &out, nil
	})
}

// gateOn reports whether u's token changes need a code.
func gateOn(u *userRec) bool { return u != nil && u.TokenGate && u.TOTPSecret != "" }

// gateCodeBudget charges the two-factor budgets (per IP and per account)
// for one code checked by the token gate; the gate's routes carry no route
// limits because only a change that checks a code spends them.
func (s *Service) gateCodeBudget(ctx context.Context, userID string) error {
	gateIP := s.rules.twoFactorIP
	gateIP.By = ratelimit.ByValue
	return s.limiter.Allow(ctx, gateIP.On(auth.ClientIP(ctx)), s.rules.twoFactorAcct.On(userID))
}

// checkTokenGate demands a current code from a user whose token gate is
// on; the code's checks draw on the two-factor budgets.
func (s *Service) checkTokenGate(ctx context.Context, userID, code string) error {
	on := false
	err := s.db.View(func(tx *store.Tx) error {
		u, err := getUser(tx, userID)
		on = gateOn(u)
		return err
	})
	if err != nil || !on {
		return fault.Wrap("check the token gate", err)
	}
	if code == "" {
		return forbidden("the two-factor token gate is on: send a current code in the X-2FA-Code header")
	}
	// Counted outside the write transaction: the limiter writes the store too.
	if err := s.gateCodeBudget(ctx, userID); err != nil {
		return err
	}
	return fault.Wrap("check the token gate", s.update(func(tx *store.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil || !gateOn(u) {
			return err
		}
		switch err := s.checkSecondFactor(u, code, true); err {
		case nil:
		case errCodeUsed:
			return forbidden("the X-2FA-Code code was already used: each code is good once; wait for the next one")
		default:
			return forbidden("the X-2FA-Code code is invalid")
		}
		return putUser(tx, u)
	}))
}

// VerifyTwoFactor is the second login step: a temp_token and a code of its
// account answer the login result; five wrong codes burn the temp_token.
func (s *Service) VerifyTwoFactor(ctx context.Context, req Verify2FARequest) (*LoginResult, error) {
	in := req.Body
	temp := in.TempToken
	if temp == "" {
		temp = req.Token()
	}
	if temp == "" {
		return nil, unauthorized("temp_token is required (body temp_token or Authorization: Bearer)")
	}
	var rec *onceRec
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		rec, err = s.peekOnce(tx, onceTemp, temp)
		return err
	})
	if err != nil {
		return nil, fault.Internal("check the temp token", err)
	}
	if rec == nil {
		return nil, unauthorized("temp_token is invalid, used or expired")
	}
	if err := checkCodeField(in.Code); err != nil {
		return nil, err
	}
	if err := s.codeLimit(ctx, rec.UserID); err != nil {
		return nil, err
	}
	var refusal error
	err = s.update(func(tx *store.Tx) error {
		refusal = nil
		rec, err := s.peekOnce(tx, onceTemp, temp)
		if err != nil {
			return err
		}
		if rec == nil {
			return unauthorized("temp_token is invalid, used or expired")
		}
		u, err := userOr(tx, rec.UserID, unauthorized("temp_token is invalid, used or expired"))
		if err != nil {
			return err
		}
		if refusal = s.checkSecondFactor(u, in.Code, true); refusal == nil {
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
		return nil, fault.Wrap("verify the two-factor code", err)
	}
	if refusal != nil {
		return nil, refusal
	}
	return s.completeLogin(ctx, rec.UserID, rec.Method, rec.Mode, rec.Challenge, false)
}
