package contract

import (
	"strings"

	"deckhand/platform"
)

// NewServiceHost puts a container service on its own host, the one way
// every runner does it (the agent in-process, `deckhand service NAME`,
// deckhand-display, platformtest): the service's Info titles its OpenAPI
// document with Name forced to deps.Name so /health reports it, a
// HealthReporter feeds /health, and the common settings build the request
// policy (--domain, --allowed-origins) the host applies before any route
// and choose whether X-Forwarded-For is trusted, and --trusted-uids the
// local users its own port serves (LocalTrust). It fails only when the
// common settings are not valid (see CommonSettings.Validate).
func NewServiceHost(svc ContainerService, deps ServiceDeps) (*platform.Host, error) {
	policy, err := deps.Common.Policy()
	if err != nil {
		return nil, err
	}
	trust, err := deps.Common.LocalTrust()
	if err != nil {
		return nil, err
	}
	info := svc.Info()
	if deps.Name != "" {
		info.Name = deps.Name
	}
	info.Description = strings.TrimSpace(info.Description + " " + policyDescription + " " + programDescription(info.Name))
	cfg := platform.HostConfig{Info: info, Logger: deps.Logger, NamedLogger: deps.Logger != nil, Policy: policy, LocalTrust: trust, Servers: []platform.Server{
		{URL: "/", Description: "the service's own port, where this document was read"},
		{URL: "/_/" + info.Name, Description: "through the agent's gateway (relative to the gateway's address)"},
	}}
	// Without --trust-proxy-headers the client is the socket peer (the
	// gateway, for proxied calls). With it, the right-most X-Forwarded-For
	// hop from a loopback or private peer: the gateway's, which it sets to
	// the client it saw (itself behind the platform proxy).
	if deps.Common.TrustProxyHeaders {
		cfg.ProxyHeader = "X-Forwarded-For"
	}
	if bs, ok := svc.(BodyStreamer); ok {
		cfg.StreamRequestBody = true
		cfg.ReadTimeout = bs.StreamsBodies()
	}
	if hr, ok := svc.(HealthReporter); ok {
		cfg.HealthStatus = hr.HealthStatus
	}
	return platform.NewHost(cfg, svc.Routes()), nil
}

// policyDescription tells a service's OpenAPI readers what the request
// policy refuses before any route.
const policyDescription = "This service's own port serves the agent's gateway and local users the agent trusts (root, " +
	"its own user, --trusted-uids); any other caller gets 401 UNAUTHORIZED there and goes through the gateway, where " +
	"proxy permissions judge its credential. " +
	"Every route is under the agent's request policy: a Host that is not a loopback name, " +
	"the connection's own IP or a name under --domain gets 421 MISDIRECTED_REQUEST; a browser Origin that is not " +
	"the request's own, under --domain or in --allowed-origins gets 403 FORBIDDEN (reads included), as does a " +
	"cross-site or same-site browser request without Origin that is not a top-level navigation."
