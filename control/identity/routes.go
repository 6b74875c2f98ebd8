package identity

import (
	"net/http"

	"deckhand/platform"
)

// Routes is identity's route table.
func (s *Service) Routes() []platform.Route {
	r := s.rules
	authTag, twoFactor, oauth := []string{"auth"}, []string{"two-factor"}, []string{"oauth"}
	tokens, admin := []string{"auth tokens"}, []string{"admin"}
	cbDesc := "Checks `state` (single use, 10 minutes, bound to the browser by an HttpOnly cookie set when the flow started), " +
		"exchanges `code` with the provider using PKCE (S256), reads the provider's userinfo, finds the account linked to that provider " +
		"identity (or the account with the same email, or creates one), and answers 302 to the frontend completion URL with " +
		"`code` (a one-time code the frontend exchanges with its code_verifier at POST /api/v1/auth/intent/exchange, 5 minutes), " +
		"`state_id` (launch flows) and `intent`. With two-factor on, the completion URL carries `requires_2fa=true` and `temp_token` instead. " +
		"Provider errors and banned accounts come back as `error=<reason>`. For intent=star_check with a configured star-check URL, `starred=true|false` is added."
	startDesc := "Answers 302 to the provider's authorize endpoint with its own PKCE challenge (S256) and a fresh `state`. " +
		"The client's code_challenge is bound to the flow and checked when the completion code is exchanged. " +
		"400 for a bad challenge or redirect_uri; 503 when the provider is not configured."
	return []platform.Route{
		// Accounts and sessions.
		{Method: http.MethodPost, Path: "/api/v1/auth/signup", OperationID: "signup", Policy: platform.Public, Tags: authTag,
			Limits:  limits(r.signupIP, r.signupAddress),
			Summary: "Create an account (inactive until its email is verified)",
			Description: "Password rule: at least 12 characters with an uppercase letter, a lowercase letter, a digit and a special character. " +
				"`region` defaults to the first available region. A verification mail with a link whose query carries `token=<token>` is sent; " +
				"signing up again before verifying re-sends the link (the password of the signup whose link is used wins); " +
				"an address with a verified account gets a notice mail instead, and the answer is the same, so signup never reveals whether an email exists. " +
				"403 when signups are disabled. " + emailRule,
			Message: "Signup successful: check your email to verify your account", Op: platform.Op(s.Signup)},
		{Method: http.MethodPost, Path: "/api/v1/auth/verify-email", OperationID: "verifyEmail", Policy: platform.Public, Tags: authTag,
			Limits:  limits(r.verifyIP),
			Summary: "Activate an account with the token from its verification mail (single use, valid 24 hours)",
			Message: "Email verified: the account is active", Op: platform.Op(s.VerifyEmail)},
		{Method: http.MethodPost, Path: "/api/v1/auth/forgot-password", OperationID: "forgotPassword", Policy: platform.Public, Tags: authTag,
			Limits:      limits(r.recoveryIP, r.recoveryAddress),
			Summary:     "Mail a password reset link (token valid 1 hour)",
			Description: "Always answers 200 with the same message whether or not the address has an account.",
			Message:     sameAnswer, Op: platform.CommandOp(s.ForgotPassword)},
		{Method: http.MethodPost, Path: "/api/v1/auth/reset-password", OperationID: "resetPassword", Policy: platform.Public, Tags: authTag,
			Limits:      limits(r.verifyIP),
			Summary:     "Set a new password with a reset token",
			Description: "The new password follows the signup rule. Every session of the account ends; the address counts as verified.",
			Message:     "Password updated: log in with the new password", Op: platform.CommandOp(s.ResetPassword)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/login", OperationID: "login", Policy: platform.Public, Tags: authTag,
			Limits:  limits(r.loginIP, r.loginAccount),
			Summary: "Log in with username or email and password",
			Description: "`password` is required and checked only against the account: its shape is never validated here, so a wrong password of any length is 401. " +
				"`email` is looked up in its canonical form (see signup): any spelling of the address finds the account. " +
				"`response_mode=tokens` (default) answers the login result (access token 1 day, refresh token 7 days). " +
				"`response_mode=intent` needs `code_challenge` (base64url SHA-256 of a 43-128 character `code_verifier`) and answers `auth_intent_token`, " +
				"valid 5 minutes, exchanged once at POST /api/v1/auth/intent/exchange. " +
				"When the account has two-factor on, the answer is `requires_2fa: true` and a `temp_token` (5 minutes) for POST /api/v1/users/auth/2fa/verify, " +
				"with the message `" + msgSecondFactor + "`. " +
				"401 for wrong credentials (the same whether or not the account exists); 403 for banned or unverified accounts.",
			Message: "Login successful", Op: platform.Op(s.Login)},
		{Method: http.MethodPost, Path: "/api/v1/auth/intent/exchange", OperationID: "exchangeAuthIntent", Policy: platform.Public, Tags: authTag,
			Limits:      limits(r.verifyIP),
			Summary:     "Exchange an auth_intent_token (or an OAuth completion code) and its code_verifier for session tokens",
			Description: "Single use: a wrong verifier also consumes the token. Answers the login result.",
			Message:     "Login successful", Op: platform.Op(s.ExchangeIntent)},
		{Method: http.MethodPost, Path: "/api/v1/auth/intent/cancel", OperationID: "cancelAuthIntent", Policy: platform.Public, Tags: authTag,
			Status:      http.StatusNoContent,
			Summary:     "Cancel an auth intent token, OAuth completion code or 2FA temp_token sent as Bearer",
			Description: "Idempotent: an unknown or already used token also answers 204. 401 without a Bearer credential.",
			Op:          platform.CommandOp(s.CancelIntent)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/refresh", OperationID: "refreshSession", Policy: platform.Public, Tags: authTag,
			Limits:  limits(r.refreshIP, r.refreshAccount),
			Summary: "Rotate the session's access and refresh tokens",
			Description: "The refresh token must be byte-identical in `Authorization: Bearer` and in body `refreshToken`, else 401 `Invalid refresh token`. " +
				"Replaying a refresh token that was already rotated revokes the whole session, except within 10 seconds of its rotation " +
				"(two tabs refreshing at once both get the current pair).",
			Message: "Token refreshed", Op: platform.Op(s.Refresh)},
		{Method: http.MethodGet, Path: "/api/v1/users/auth/me", OperationID: "getMe", Policy: platform.SignedIn, Tags: authTag,
			Summary: "The authenticated user's profile", Message: "User profile", Op: platform.ReadOp(s.Me)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/logout", OperationID: "logout", Policy: platform.SignedIn, Tags: authTag,
			Summary:     "End the current session: its access and refresh tokens stop working at once",
			Description: "Needs a session token; auth tokens are revoked with DELETE /api/v1/auth/tokens/{id}. A body is ignored.",
			Message:     "Logged out", Op: platform.CommandOp(s.Logout)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/identity-claim", OperationID: "mintIdentityClaim", Policy: platform.SignedIn,
			Tags: authTag, Summary: "Mint an identity claim for the signed-in user",
			Description: "A claim that the caller is user `sub` with role `role`, for audience `aud` (a service, URL or container that " +
				"checks it): payload `{typ: \"identity\", sub, role, aud, iat, exp}` as base64url JSON (`payload_b64`), signed with " +
				"the key set's active key (`kid`; `signature_hex` over the UTF-8 bytes of payload_b64: the key set's " +
				"`identity_claim_signed_data`). A verifier checks the signature against GET /api/v1/meta/public-key, then typ, aud " +
				"and that now is within [iat, exp]. `ttl_seconds` 30-3600, default 300. 503 SIGNING_NOT_CONFIGURED without signing keys.",
			Message: "Identity claim", Op: platform.Op(s.MintIdentityClaim)},

		// Two-factor.
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/verify", OperationID: "verifyTwoFactorLogin", Policy: platform.Public, Tags: twoFactor,
			Limits:  limits(r.twoFactorIP, r.twoFactorAcct),
			Summary: "Second login step: exchange the login's temp_token and a TOTP or backup code for the login result",
			Description: "The temp_token goes in body `temp_token` or as `Authorization: Bearer`. A code is the 6-digit TOTP or an unused backup code " +
				"(single use). Five wrong codes burn the temp_token. A TOTP code is good once: sending one whose 30-second step was already used " +
				"answers 401 `" + CodeTwoFactorCodeUsed + "` (wait for the next code). When the login asked for response_mode=intent, the answer is `auth_intent_token`.",
			Message: "Login successful", Op: platform.Op(s.VerifyTwoFactor)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/setup", OperationID: "startTwoFactorSetup", Policy: platform.SignedIn, Tags: twoFactor,
			Summary:     "Start two-factor setup: a new TOTP secret and its otpauth:// URI (session token required)",
			Description: "Nothing changes until verify-setup confirms a code; a new setup replaces an unconfirmed one. 409 when two-factor is already on.",
			Message:     "Scan the otpauth URL (or enter the secret) in an authenticator app, then confirm a code at verify-setup", Op: platform.ReadOp(s.SetupTwoFactor)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/verify-setup", OperationID: "confirmTwoFactorSetup", Policy: platform.SignedIn, Tags: twoFactor,
			Limits:  limits(r.twoFactorIP, r.twoFactorAcct),
			Summary: "Confirm setup with a current code; turns two-factor on and answers the backup codes (shown once)",
			Message: "Two-factor enabled: store the backup codes now, they are not shown again", Op: platform.Op(s.ConfirmTwoFactor)},
		{Method: http.MethodGet, Path: "/api/v1/users/auth/2fa/status", OperationID: "getTwoFactorStatus", Policy: platform.SignedIn, Tags: twoFactor,
			Summary: "Two-factor state of the caller", Message: "Two-factor status", Op: platform.ReadOp(s.TwoFactorStatus)},
		{Method: http.MethodDelete, Path: "/api/v1/users/auth/2fa", OperationID: "disableTwoFactor", Policy: platform.SignedIn, Tags: twoFactor,
			Limits:      limits(r.twoFactorIP, r.twoFactorAcct),
			Summary:     "Turn two-factor off; needs a current TOTP or backup code in body `code` (session token required)",
			Description: "A TOTP code whose step was already used answers 401 `" + CodeTwoFactorCodeUsed + "`.",
			Message:     "Two-factor disabled", Op: platform.Op(s.DisableTwoFactor)},
		{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/backup-codes/regenerate", OperationID: "regenerateBackupCodes", Policy: platform.SignedIn, Tags: twoFactor,
			Limits:      limits(r.twoFactorIP, r.twoFactorAcct),
			Summary:     "Replace all backup codes (needs a current TOTP code in body `code`); the new ones are shown once",
			Description: "A TOTP code whose step was already used answers 401 `" + CodeTwoFactorCodeUsed + "`.",
			Message:     "New backup codes: the old ones no longer work", Op: platform.Op(s.RegenerateBackupCodes)},
		{Method: http.MethodPut, Path: "/api/v1/users/auth/2fa/token-gate", OperationID: "setTokenGate", Policy: platform.SignedIn, Tags: twoFactor,
			Summary: "Set the token-gate preference: when on, creating an svc_ auth token or changing its ip_whitelist, expires_at or is_enabled needs a current code in header X-2FA-Code",
			Description: "Body `enabled` (required). Turning it on needs two-factor on (400 otherwise). Turning an active gate off needs a current " +
				"TOTP or backup code in body `code`, as turning two-factor off does: 400 when it is missing, 401 when it is wrong, 401 `" +
				CodeTwoFactorCodeUsed + "` when its step was already used; nothing changes then.",
			Message: "Token gate updated", Op: platform.Op(s.ReplaceTokenGate)},
		{Method: http.MethodPatch, Path: "/api/v1/users/auth/2fa/token-gate", OperationID: "updateTokenGate", Policy: platform.SignedIn, Tags: twoFactor,
			Summary:     "Change the token-gate preference (same as PUT; `enabled` may be omitted for no change)",
			Description: "Turning an active gate off needs a current TOTP or backup code in body `code` (see PUT).",
			Message:     "Token gate updated", Op: platform.Op(s.SetTokenGate)},

		// OAuth and popup launch.
		{Method: http.MethodGet, Path: "/api/v1/auth/codehost", OperationID: "startCodehostLogin", Policy: platform.Public, Limits: limits(r.verifyIP), Tags: oauth,
			Status: http.StatusFound, Summary: "Start OAuth login with the codehost provider",
			Description: startDesc + " `intent=star_check` is carried to the completion URL.", Headers: flowHeaders, Op: platform.Op(s.StartCodehost)},
		{Method: http.MethodGet, Path: "/api/v1/auth/codehost/callback", OperationID: "codehostLoginCallback", Policy: platform.Public, Tags: oauth,
			Status: http.StatusFound, Summary: "OAuth redirect target of the codehost provider", Description: cbDesc, Headers: flowHeaders, Op: platform.Op(s.CodehostCallback)},
		{Method: http.MethodGet, Path: "/api/v1/auth/webid", OperationID: "startWebIDLogin", Policy: platform.Public, Limits: limits(r.verifyIP), Tags: oauth,
			Status: http.StatusFound, Summary: "Start OAuth login with the webid provider", Description: startDesc, Headers: flowHeaders, Op: platform.Op(s.StartWebID)},
		{Method: http.MethodGet, Path: "/api/v1/auth/webid/callback", OperationID: "webIDLoginCallback", Policy: platform.Public, Tags: oauth,
			Status: http.StatusFound, Summary: "OAuth redirect target of the webid provider", Description: cbDesc, Headers: flowHeaders, Op: platform.Op(s.WebIDCallback)},
		{Method: http.MethodPost, Path: "/api/v1/auth/launch/initiate", OperationID: "initiateLaunch", Policy: platform.Public, Limits: limits(r.verifyIP), Tags: oauth,
			Summary: "Issue a one-shot popup launch ticket bound to the request Origin",
			Description: "The `Origin` header is required and must be on an allowed redirect domain; the flow completes at <Origin>/auth/complete " +
				"with `state_id` echoed. The ticket expires after 2 minutes.",
			Message: "Launch ticket issued", Op: platform.Op(s.InitiateLaunch)},
		{Method: http.MethodGet, Path: "/api/v1/auth/launch/start", OperationID: "startLaunch", Policy: platform.Public, Tags: oauth, Status: http.StatusFound,
			Summary: "Consume a launch ticket and redirect to the provider",
			Description: "Consumed atomically: of many concurrent requests exactly one gets the 302, the rest 410. Used, expired and unknown tickets answer 410. " +
				"Sets `Referrer-Policy: no-referrer`. A request carrying an Origin other than the ticket's gets 403.",
			Headers: flowHeaders, Op: platform.Op(s.StartLaunch)},

		// Auth tokens.
		{Method: http.MethodPost, Path: "/api/v1/auth/tokens", OperationID: "createAuthToken", Tags: tokens, Status: http.StatusCreated,
			Policy:  sessionOnly("auth tokens are created with a session token, not with another auth token"),
			Summary: "Create an svc_ auth token (needs a session token; the secret is shown only here)",
			Description: "`alias`: 1-254 characters, letters, digits, spaces, `_` and `-`. `ip_whitelist`: IP addresses or CIDR ranges " +
				"(empty: any address), matched against the client address (the peer, or under --trust-proxy-headers the right-most " +
				"X-Forwarded-For hop when it is a bare IP; else the peer). `expires_at`: ISO 8601 time, Unix seconds, `today` (midnight UTC tonight) or `tomorrow` (in 24 hours); omit for never. " +
				"With the 2FA token gate on, the header `X-2FA-Code` must carry a current TOTP or backup code.",
			Message: "Auth token created: store it now, it is not shown again", Op: platform.Op(s.CreateToken)},
		{Method: http.MethodGet, Path: "/api/v1/auth/tokens", OperationID: "listAuthTokens", Policy: platform.SignedIn, Tags: tokens,
			Summary: "List the caller's auth tokens (never the secret)", Message: "Auth tokens", Op: platform.ReadOp(s.ListTokens)},
		{Method: http.MethodGet, Path: "/api/v1/auth/tokens/{id}", OperationID: "getAuthToken", Policy: platform.SignedIn, Tags: tokens,
			Summary: "One auth token (never the secret)", Message: "Auth token", Op: platform.Op(s.GetToken)},
		{Method: http.MethodPatch, Path: "/api/v1/auth/tokens/{id}", OperationID: "updateAuthToken", Policy: platform.SignedIn, Tags: tokens,
			Summary: "Change an auth token: is_enabled, expires_at (null clears), alias, ip_whitelist (null clears)",
			Description: "`ip_whitelist`, `expires_at` and `is_enabled` govern what a token can do, so only a session token may change them " +
				"(403 with an svc_ token, for the token itself and for the caller's other tokens alike: a token never widens rights); " +
				"with the 2FA token gate on they also need a current code in header `X-2FA-Code`, as create does. " +
				"`alias` is a label and may be changed with either credential, without a code.",
			Message: "Auth token updated", Op: platform.Op(s.UpdateToken)},
		{Method: http.MethodDelete, Path: "/api/v1/auth/tokens/{id}", OperationID: "deleteAuthToken", Policy: platform.SignedIn, Tags: tokens,
			Summary: "Revoke an auth token permanently", Message: "Auth token revoked", Op: platform.CommandOp(s.DeleteToken)},

		// Admin.
		{Method: http.MethodPost, Path: "/api/v1/admin/users", OperationID: "adminCreateUser", Policy: platform.Admin, Tags: admin, Status: http.StatusCreated,
			Summary: "Create a user (admin role required, else 403)",
			Description: "`password` follows the login rule (at least 8 characters with an uppercase letter, a lowercase letter and a digit). " +
				"`username` defaults to one derived from the email; `role` is `user` (default) or `admin`; `verified` (default false) " +
				"marks the email verified so the user can log in at once; an unverified user gets a verification mail. Writes `user.created`. " + emailRule,
			Message: "User created", Op: platform.Op(s.CreateUser)},
		{Method: http.MethodGet, Path: "/api/v1/admin/users", OperationID: "adminListUsers", Policy: platform.Admin, Tags: admin,
			Summary: "List users, oldest first (admin role required)", Message: "Users", Op: platform.ReadOp(s.ListUsers)},
		{Method: http.MethodGet, Path: "/api/v1/admin/users/{id}", OperationID: "adminGetUser", Policy: platform.Admin, Tags: admin,
			Summary: "One user (admin role required)", Message: "User", Op: platform.Op(s.GetUser)},
		{Method: http.MethodPatch, Path: "/api/v1/admin/users/{id}", OperationID: "adminUpdateUser", Policy: platform.Admin, Tags: admin,
			Summary: "Change a user's role or ban state (admin role required)",
			Description: "Writes `user.role_changed`, `user.banned` or `user.unbanned`. A banned user's sessions and auth tokens stop working at once " +
				"(403). An admin cannot ban or demote themselves.",
			Message: "User updated", Op: platform.Op(s.UpdateUser)},
	}
}
