// Package access is the agent's side of proxy permissions: it holds the
// document in force, keeps it current (from the control plane with
// verified signatures, or from --permissions-file) and is the gateway's
// Authorizer, evaluating every request with platform/proxyperm.
//
// What is in force, in order:
//   - with --control-url: the last document whose X-Service-Signature and
//     binding to the request (control.go) verified under a key the agent
//     trusts (trust.go: pinned with --control-key, or a set a trusted key
//     signed; kept on disk in <data>/proxyperm/effective.json, read back at
//     start), never older than a version seen before; a response that
//     fails verification, an older version, a malformed document or an
//     unreachable control plane changes nothing;
//   - with --permissions-file: that file, re-read when it changes; a
//     malformed version is refused whole and the previous one stays;
//   - with neither, or while no document exists: loopback clients only.
//
// Service-identity claims verify against the control plane's keys (the
// same verifier as the responses); without a control plane no
// service-identity group matches.
package access

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"deckhand/agent/gateway"
	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
)

// AgentTokenPrefix starts a container's agent token (control/projects).
const AgentTokenPrefix = "agt_"

// Config is what the agent knows about itself.
type Config struct {
	// ControlURL, ContainerID and Token (--control-url, --container-id,
	// --token, the container's agt_ agent token): sync from the control
	// plane. ProjectID is informational (the control plane knows the
	// container's project).
	ControlURL, ContainerID, ProjectID, Token string
	// TokenFile (--token-file) is where Token was read: read again when
	// the control plane refuses it (token.go).
	TokenFile string
	// ControlKey (--control-key) pins the control plane's key: a public
	// key in hex or a file with one or a key set. InsecureControlURL
	// (--insecure-control-url) allows plain http to a host not on loopback.
	ControlKey         string
	InsecureControlURL bool
	// PermissionsFile (--permissions-file) is used without a control plane.
	PermissionsFile string
	// Dir keeps the last verified document (<data>/proxyperm).
	Dir string
	// Port gives the port of a service the gateway routes to; the program
	// rules match it (ProgramFor).
	Port func(service string) int
	// ActsFor are, by service, the services it calls for its caller (the
	// agent's registry): reach judges the caller against each. ToolList
	// reports whether a document's tool allow-list limits a service's
	// callers.
	ActsFor  map[string][]string
	ToolList func(service string) bool
	// Poll is how often the control plane or the file is checked
	// (default 2 s: a change applies within 5 s).
	Poll    time.Duration
	Journal contract.Journal
	Logger  *slog.Logger
	Clock   clock.Clock
	Client  *http.Client
}

// state is one document in force.
type state struct {
	policy *proxyperm.Policy // nil: no document (loopback only)
	etag   string            // effective ETag (control plane) or file stamp
}

// Authorizer is the gateway's proxy permissions decision.
type Authorizer struct {
	cfg      Config
	cur      atomic.Pointer[state]
	verifier *signing.Verifier
	control  *Control
	claims   proxyperm.ClaimVerifier
	ready    chan struct{}
	lastKIDs atomic.Pointer[[]string]     // kids last journaled as trusted
	pinned   map[string]ed25519.PublicKey // --control-key
	// highest is the highest document version seen per scope (scopeOf),
	// kept with effective.json; only SyncOnce touches it, under syncMu
	// (the sync loop and a hand-over's sync, handoff.go).
	highest map[string]int64
	syncMu  sync.Mutex
	handoff handoffState
}

// New loads what is in force at start: the last verified document (with a
// control plane) or the permissions file, which must be valid.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Journal == nil {
		cfg.Journal = contract.LogJournal{Logger: cfg.Logger}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.SystemClock{}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Port == nil {
		cfg.Port = func(string) int { return 0 }
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	a := &Authorizer{cfg: cfg, ready: make(chan struct{}), highest: map[string]int64{}}
	a.cur.Store(&state{})
	switch {
	case cfg.ControlURL != "":
		if cfg.ContainerID == "" {
			return nil, errors.New("--container-id: required with --control-url")
		}
		switch {
		case cfg.Token == "":
			return nil, errors.New("--token: required with --control-url (the container's agent token, agt_...)")
		case !strings.HasPrefix(cfg.Token, AgentTokenPrefix):
			// An svc_ token acts for its user everywhere; the control plane
			// gives the effective document only to an agent token.
			return nil, errors.New("--token: must be the container's agent token (agt_...), minted with " +
				"POST /api/v1/containers/{id}/agent-tokens; a user's svc_ token is refused")
		}
		u, err := checkControlURL(cfg.ControlURL, cfg.InsecureControlURL)
		if err != nil {
			return nil, err
		}
		a.cfg.ControlURL = u
		if cfg.ControlKey != "" {
			if a.pinned, err = parseControlKey(cfg.ControlKey); err != nil {
				return nil, err
			}
		}
		a.verifier = signing.NewVerifier(signing.VerifierOptions{Fetch: signing.HTTPKeySetFetcher(cfg.Client, a.cfg.ControlURL),
			Pinned: a.pinned, Trusted: a.keptKeys(a.pinned), TrustFirst: true, OnAccept: a.keysAccepted,
			Clock: cfg.Clock, MinRefetch: 10 * time.Second})
		a.control = &Control{URL: a.cfg.ControlURL, ContainerID: cfg.ContainerID, Token: cfg.Token, TokenFile: cfg.TokenFile,
			Client: cfg.Client, Verifier: a.verifier}
		a.claims = func(payload, sig, kid string) ([]byte, error) {
			var raw json.RawMessage
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := a.control.VerifyClaim(ctx, signing.Claim{PayloadB64: payload, SignatureHex: sig, KID: kid}, &raw); err != nil {
				return nil, err
			}
			return raw, nil
		}
		if err := a.loadSaved(); err != nil {
			return nil, err
		}
	case cfg.PermissionsFile != "":
		st, err := a.readFile()
		if err != nil {
			return nil, fmt.Errorf("--permissions-file %s: %w", cfg.PermissionsFile, err)
		}
		a.apply(st, "file")
	}
	return a, nil
}

// Run keeps the document current until ctx ends.
func (a *Authorizer) Run(ctx context.Context) {
	switch {
	case a.cfg.ControlURL != "":
		a.syncLoop(ctx)
	case a.cfg.PermissionsFile != "":
		a.watchFile(ctx)
	}
}

// Policy is the compiled document in force (nil: none).
func (a *Authorizer) Policy() *proxyperm.Policy { return a.cur.Load().policy }

// ETag is the tag of the document in force ("" when none).
func (a *Authorizer) ETag() string { return a.cur.Load().etag }

func (a *Authorizer) apply(st *state, from string) {
	prev := a.cur.Swap(st)
	if prev.etag == st.etag && (prev.policy == nil) == (st.policy == nil) {
		return
	}
	fields := map[string]any{"from": from, "etag": st.etag}
	msg := "proxy permissions applied"
	if st.policy == nil {
		msg = "no proxy permissions document: loopback clients only"
	} else {
		fields["groups"] = len(st.policy.Groups)
		fields["default"] = map[bool]string{true: proxyperm.Allow, false: proxyperm.Deny}[st.policy.DefaultAllow]
		fields["enable_proxy"] = st.policy.Enabled
	}
	a.cfg.Journal.Record(contract.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "info", Message: msg, Fields: fields})
}

// Authorize is the gateway's decision for one request.
func (a *Authorizer) Authorize(r gateway.Request, t gateway.Target) (gateway.Identity, *fault.Error) {
	client := r.Client()
	src, _ := netip.AddrFromSlice(client)
	src = src.Unmap()
	port := a.cfg.Port(t.Service)
	program := proxyperm.ProgramFor(t.Service, port)
	if program == proxyperm.ProgramServices {
		// The display's input is desktop, its reading services.
		program = contract.RouteProgram(t.Service, r.Method, t.Path, r.Query)
	}
	if t.Service == tunnelService {
		// The tunnel reaches other ports: the rules judge the port it
		// reaches (ssh for 22, http for the rest); its own routes are
		// the services program on its own port.
		program = proxyperm.ProgramServices
		if p, ok := tunnelledPort(t.Path, r.Query); ok {
			port, program = p, proxyperm.ProgramFor(tunnelService, p)
		}
	}
	pol := a.Policy()
	f := proxyperm.Facts{
		Program: program,
		Port:    port,
		Source:  src,
		Header:  r.Header, Cookie: r.Cookie, Param: r.Query,
		Now: a.cfg.Clock.Now(), Audience: a.cfg.ContainerID,
		ToolList: a.cfg.ToolList != nil && a.cfg.ToolList(t.Service),
		Service:  t.Service,
	}
	if pol == nil || !pol.Enabled {
		// Only then does a loopback client pass without a credential;
		// reading the socket's owner costs a table read per connection.
		f.Loopback = r.Loopback()
	}
	d := pol.Evaluate(f, a.claims)
	a.record(r, t, f, d)
	if !d.Allowed() {
		return gateway.Identity{}, d.Error(t.Service)
	}
	id := gateway.Identity{Group: d.Group, Type: d.Type, Subject: d.Subject, Reach: a.reach(pol, f, t.Service), Tools: d.Tools}
	if pol != nil && pol.Enabled {
		id.Port = port // a document judged the port (not a loopback pass)
		id.Credentials = credentials(pol, d.Group)
		if d.Type == proxyperm.TypePreview {
			// The token opens the port for the link's holder; the app
			// behind it never sees it.
			id.Credentials = []gateway.Credential{{In: gateway.CredentialQuery, Name: proxyperm.PreviewParam},
				{In: gateway.CredentialCookie, Name: proxyperm.PreviewCookie}}
		}
	}
	if d.Type == proxyperm.TypeAccess {
		// The person's token opens the agent; no service, and no app
		// behind a tunnelled port, sees it. The tunnel dials only the
		// port judged here.
		id.Port = port
		id.Credentials = []gateway.Credential{{In: gateway.CredentialHeader, Name: "Authorization"},
			{In: gateway.CredentialCookie, Name: proxyperm.AccessCookie}}
	}
	return id, nil
}

// reach judges, for a service that acts for its caller on other services
// (Config.ActsFor), each of those as if the caller had asked it
// directly: the same document, credential and client, that service's
// program and port. The acting service itself leads the list. Those decisions are not journaled one by one: the
// acting service journals what it then does.
func (a *Authorizer) reach(pol *proxyperm.Policy, f proxyperm.Facts, service string) []string {
	targets, ok := a.cfg.ActsFor[service]
	if !ok {
		return nil
	}
	out := []string{service}
	for _, s := range targets {
		g := f
		g.ToolList, g.ActingFor = false, true
		g.Service, g.Via = s, service
		g.Port = a.cfg.Port(s)
		g.Program = proxyperm.ProgramFor(s, g.Port)
		if s == tunnelService {
			g.Program = proxyperm.ProgramServices // its own routes (bindings), not a tunnelled port
		}
		if pol.Evaluate(g, a.claims).Allowed() {
			out = append(out, s)
		}
		if contract.HasDesktopInput(s) {
			// Driving the display is its own program (the display's
			// reading tools need only services).
			g.Program = proxyperm.ProgramDesktop
			if pol.Evaluate(g, a.claims).Allowed() {
				out = append(out, contract.DesktopReach)
			}
		}
	}
	return out
}

// credentials are where the named group's credential travels: the
// gateway consumes it, so no service and no tunnelled app sees it.
func credentials(pol *proxyperm.Policy, group string) []gateway.Credential {
	if group == "" {
		return nil
	}
	for i := range pol.Groups {
		g := &pol.Groups[i]
		if g.Name != group {
			continue
		}
		switch g.Type {
		case proxyperm.TypeToken:
			in := cmp.Or(map[string]string{"header": gateway.CredentialHeader, "cookie": gateway.CredentialCookie}[g.Location],
				gateway.CredentialQuery)
			return []gateway.Credential{{In: in, Name: g.Name2}}
		case proxyperm.TypePassword:
			return []gateway.Credential{{In: gateway.CredentialHeader, Name: "Authorization"}}
		case proxyperm.TypeJWT:
			out := make([]gateway.Credential, 0, len(g.Sources))
			for _, src := range g.Sources {
				in := gateway.CredentialHeader
				if src.Cookie {
					in = gateway.CredentialCookie
				}
				out = append(out, gateway.Credential{In: in, Name: src.Name})
			}
			return out
		case proxyperm.TypeServiceIdentity:
			return []gateway.Credential{{In: gateway.CredentialHeader, Name: proxyperm.ClaimHeader}}
		}
	}
	return nil
}

var outcomeName = map[proxyperm.Outcome]string{proxyperm.Allowed: "allowed", proxyperm.Unauthorized: "unauthorized",
	proxyperm.Forbidden: "forbidden", proxyperm.Disabled: "disabled"}

// record writes the decision to the journal: the matched group and who,
// never a credential (the path has no query; no header value is logged).
func (a *Authorizer) record(r gateway.Request, t gateway.Target, f proxyperm.Facts, d proxyperm.Decision) {
	level := "debug"
	if !d.Allowed() {
		level = "warn"
	}
	fields := map[string]any{"decision": outcomeName[d.Outcome], "service": t.Service, "program": f.Program, "port": f.Port,
		"client": f.Source.String(), "method": r.Method, "path": r.Path, "reason": d.Reason}
	if d.Group != "" {
		fields["group"] = d.Group
	}
	if d.Type != "" {
		fields["type"] = d.Type
	}
	if d.Subject != "" {
		fields["subject"] = d.Subject
	}
	if d.Tools != nil {
		fields["mcp_tools"] = d.Tools
	}
	a.cfg.Journal.Record(contract.JournalEntry{Time: f.Now, Source: "gateway", Level: level, Message: "proxy decision", Fields: fields})
}

// compile normalizes (hashing plaintext passwords, as the control plane
// does on write) and compiles a validated document.
func compile(d *proxyperm.Document) (*proxyperm.Policy, error) {
	if err := d.Normalize(); err != nil {
		return nil, err
	}
	return proxyperm.Compile(d)
}
