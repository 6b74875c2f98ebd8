package server

// buildIdentity is THE one place control/identity plugs into the server.
//
// Until control/identity exists it builds nothing: non-public routes answer
// 401 and the admin bootstrap is skipped with a notice.
//
// For the identity helper — replace the body with (and add the import
// "deckhand/control/identity"):
//
//	svc, err := identity.New(identity.Deps{
//		DB:     s.db,      // *store.DB, the control plane's bbolt file (one tx per request)
//		Clock:  s.clock,   // platform.Clock
//		Logger: s.log,     // *slog.Logger
//		Events: s.events,  // *events.Log: Append(tx, ev) inside your Update
//		Keys:   s.keys,    // *signing.KeySet, nil with --signing=false (identity claims: Keys.SignClaim)
//		Regions: s.regions, // []meta.Region, signup default = first Available
//		// from s.cfg (Config): PublicURL (set after Listen; read it lazily via s.cfg or pass a func),
//		// MailDir, SMTPURL, Signups, OAuthCodehost / OAuthWebID (ClientID, ClientSecret,
//		// AuthURL, TokenURL, UserinfoURL), AllowedRedirectDomains, TrustProxyHeaders, Data.
//	})
//	if err != nil {
//		return err
//	}
//	s.domains = append(s.domains, svc) // Routes()
//	s.auth = svc                       // Authenticate(c fiber.Ctx) error
//	s.admin = svc                      // EnsureAdmin(email, password string) (bool, error)
//	return nil
//
// identity cannot import this package (it imports identity), so Deps carries
// plain values; copy the Config fields it needs. If identity.Service also
// implements Bootstrapper or Closer, the server calls Bootstrap(ctx) before
// listening and Close() at exit.
func (s *Server) buildIdentity() error {
	return nil
}
