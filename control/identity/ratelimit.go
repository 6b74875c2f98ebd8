package identity

import (
	"time"

	"deckhand/platform/ratelimit"
)

// Rule allows N events per window Per.
type Rule struct {
	N   int
	Per time.Duration
}

// Limits are the abuse limits, per client IP and per account. A zero Rule
// disables that limit.
type Limits struct {
	LoginPerIP          Rule // every login attempt
	LoginPerAccount     Rule // failed logins of one username/email
	SignupPerIP         Rule
	TwoFactorPerIP      Rule // 2FA code checks (login step, setup, disable)
	TwoFactorPerAccount Rule
	RefreshPerIP        Rule
	RefreshPerAccount   Rule
	RecoveryPerIP       Rule // forgot-password mails
	RecoveryPerAccount  Rule // mails to one address (forgot-password; signup separately)
	VerifyPerIP         Rule // verify-email, reset-password, intent exchange, OAuth starts
}

// DefaultLimits follow GoTrue's defaults: sign-ins and sign-ups 30 per 5
// minutes per IP, token refresh 150 per 5 minutes, MFA verify 15 per
// minute, few recovery mails per address and hour.
func DefaultLimits() Limits {
	return Limits{
		LoginPerIP:          Rule{30, 5 * time.Minute},
		LoginPerAccount:     Rule{10, 15 * time.Minute},
		SignupPerIP:         Rule{30, 5 * time.Minute},
		TwoFactorPerIP:      Rule{15, time.Minute},
		TwoFactorPerAccount: Rule{15, time.Minute},
		RefreshPerIP:        Rule{150, 5 * time.Minute},
		RefreshPerAccount:   Rule{150, 5 * time.Minute},
		RecoveryPerIP:       Rule{30, time.Hour},
		RecoveryPerAccount:  Rule{3, time.Hour},
		VerifyPerIP:         Rule{360, time.Hour},
	}
}

// rules are identity's rate limits as the route table declares them. The
// ones keyed by IP are applied by the host before a handler runs; the
// ByValue ones are applied by the domain methods once they know the value
// (the address a signup mails, the account a login tries) through the same
// limiter, so domain methods called without HTTP are limited too.
type rules struct {
	loginIP, loginAccount       ratelimit.RateLimit
	signupIP, signupAddress     ratelimit.RateLimit
	twoFactorIP, twoFactorAcct  ratelimit.RateLimit
	refreshIP, refreshAccount   ratelimit.RateLimit
	recoveryIP, recoveryAddress ratelimit.RateLimit
	verifyIP                    ratelimit.RateLimit
}

func (l Limits) rules() rules {
	r := func(name string, by ratelimit.LimitBy, rule Rule, value string) ratelimit.RateLimit {
		return ratelimit.RateLimit{Name: name, By: by, N: rule.N, Per: rule.Per, Value: value}
	}
	out := rules{
		loginIP:         r("login.ip", ratelimit.ByIP, l.LoginPerIP, ""),
		loginAccount:    r("login.account", ratelimit.ByValue, l.LoginPerAccount, "the username or email tried"),
		signupIP:        r("signup.ip", ratelimit.ByIP, l.SignupPerIP, ""),
		signupAddress:   r("signup.address", ratelimit.ByValue, l.RecoveryPerAccount, "the email signed up"),
		twoFactorIP:     r("2fa.ip", ratelimit.ByIP, l.TwoFactorPerIP, ""),
		twoFactorAcct:   r("2fa.account", ratelimit.ByValue, l.TwoFactorPerAccount, "the account whose code is checked"),
		refreshIP:       r("refresh.ip", ratelimit.ByIP, l.RefreshPerIP, ""),
		refreshAccount:  r("refresh.account", ratelimit.ByValue, l.RefreshPerAccount, "the account of the refresh token"),
		recoveryIP:      r("recovery.ip", ratelimit.ByIP, l.RecoveryPerIP, ""),
		recoveryAddress: r("recovery.address", ratelimit.ByValue, l.RecoveryPerAccount, "the email a reset is mailed to"),
		verifyIP:        r("verify.ip", ratelimit.ByIP, l.VerifyPerIP, ""),
	}
	out.loginAccount.Failures = true
	return out
}

func limits(l ...ratelimit.RateLimit) []ratelimit.RateLimit { return l }
