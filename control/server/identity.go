package server

import (
	"deckhand/control/identity"
	"deckhand/control/mail"
)

// buildIdentity is THE one place control/identity plugs into the server:
// it maps Config onto identity.Deps and registers the domain as routes,
// authenticator and admin bootstrapper. (identity cannot import this
// package, so Deps carries plain values.)
func (s *Server) buildIdentity() error {
	mailer, err := mail.New(mail.Config{Dir: s.cfg.MailDir, SMTPURL: s.cfg.SMTPURL})
	if err != nil {
		return err
	}
	providers := map[string]identity.OAuthProvider{}
	for name, p := range map[string]OAuthProvider{"codehost": s.cfg.OAuthCodehost, "webid": s.cfg.OAuthWebID} {
		if p.Configured() {
			providers[name] = identity.OAuthProvider{ClientID: p.ClientID, ClientSecret: p.ClientSecret,
				AuthURL: p.AuthURL, TokenURL: p.TokenURL, UserInfoURL: p.UserinfoURL, StarCheckURL: p.StarCheckURL}
		}
	}
	regions := s.regions
	svc, err := identity.New(identity.Deps{
		DB: s.db, Clock: s.clock, Logger: s.log, Mailer: mailer, Sealer: s.sealer,
		Signups:                s.cfg.Signups,
		PublicURL:              s.cfg.PublicURL,
		AllowedRedirectDomains: s.cfg.AllowedRedirectDomains,
		Providers:              providers,
		Regions: func() []string {
			var ids []string
			for _, r := range regions {
				if r.Available {
					ids = append(ids, r.Region)
				}
			}
			return ids
		},
	})
	if err != nil {
		return err
	}
	s.domains = append(s.domains, svc) // Routes(), Close()
	s.auth = svc                       // Authenticate(c fiber.Ctx) error
	s.admin = svc                      // EnsureAdmin(email, password string) (bool, error)
	return nil
}
