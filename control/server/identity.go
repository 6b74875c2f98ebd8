package server

import (
	"deckhand/control/identity"
	"deckhand/control/mail"
)

// identityConfig maps the serve flags onto identity's config section.
func (s *Server) identityConfig() (identity.Config, error) {
	mailer, err := mail.New(mail.Config{Dir: s.cfg.MailDir, SMTPURL: s.cfg.SMTPURL, Logger: s.log})
	if err != nil {
		return identity.Config{}, err
	}
	providers := map[string]identity.OAuthProvider{}
	for name, p := range map[string]OAuthProvider{"codehost": s.cfg.OAuthCodehost, "webid": s.cfg.OAuthWebID} {
		if p.Configured() {
			providers[name] = identity.OAuthProvider{ClientID: p.ClientID, ClientSecret: p.ClientSecret,
				AuthURL: p.AuthURL, TokenURL: p.TokenURL, UserInfoURL: p.UserinfoURL, StarCheckURL: p.StarCheckURL}
		}
	}
	regions := s.regions
	return identity.Config{
		Mailer: mailer, Sealer: s.sealer, Keys: s.keys,
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
	}, nil
}
