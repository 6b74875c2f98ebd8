// Package access is the agent's side of proxy permissions: it holds the
// document in force, keeps it current (from the control plane with
// verified signatures, or from --permissions-file) and is the gateway's
// Authorizer, evaluating every request with platform/proxyperm.
//
// What is in force, in order:
//   - with --control-url: the last document whose X-Service-Signature
//     verified (kept on disk in <data>/proxyperm/effective.json, read back
//     at start); a response that fails verification, a malformed document
//     or an unreachable control plane changes nothing;
//   - with --permissions-file: that file, re-read when it changes; a
//     malformed version is refused whole and the previous one stays;
//   - with neither, or while no document exists: loopback clients only.
//
// Service-identity claims verify against the control plane's keys (the
// same verifier as the responses); without a control plane no
// service-identity group matches.
package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
)

// Config is what the agent knows about itself.
type Config struct {
	// ControlURL, ContainerID and Token (--control-url, --container-id,
	// --token): sync from the control plane. ProjectID is informational
	// (the control plane knows the container's project).
	ControlURL, ContainerID, ProjectID, Token string
	// PermissionsFile (--permissions-file) is used without a control plane.
	PermissionsFile string
	// Dir keeps the last verified document (<data>/proxyperm).
	Dir string
	// Port gives the port of a service the gateway routes to; the program
	// rules match it (ProgramFor).
	Port func(service string) int
	// Poll is how often the control plane or the file is checked
	// (default 2 s: a change applies within 5 s).
	Poll    time.Duration
	Journal platform.Journal
	Logger  *slog.Logger
	Clock   platform.Clock
	Client  *http.Client
}

// state is one document in force.
type state struct {
	policy *proxyperm.Policy // nil: no document (loopback only)
	etag   string            // effective ETag (control plane) or file stamp
}

// Authorizer is the gateway's proxy permissions decision.
type Authorizer struct {
	cfg     Config
	cur     atomic.Pointer[state]
	control *Control
	claims  proxyperm.ClaimVerifier
	ready   chan struct{}
}

// New loads what is in force at start: the last verified document (with a
// control plane) or the permissions file, which must be valid.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Journal == nil {
		cfg.Journal = platform.LogJournal{Logger: cfg.Logger}
	}
	if cfg.Clock == nil {
		cfg.Clock = platform.SystemClock{}
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
	a := &Authorizer{cfg: cfg, ready: make(chan struct{})}
	a.cur.Store(&state{})
	switch {
	case cfg.ControlURL != "":
		if cfg.ContainerID == "" {
			return nil, errors.New("--container-id: required with --control-url")
		}
		if cfg.Token == "" {
			return nil, errors.New("--token: required with --control-url (an svc_ token)")
		}
		if !strings.HasPrefix(cfg.ControlURL, "http://") && !strings.HasPrefix(cfg.ControlURL, "https://") {
			return nil, fmt.Errorf("--control-url %q: must be an http:// or https:// URL", cfg.ControlURL)
		}
		a.cfg.ControlURL = strings.TrimRight(cfg.ControlURL, "/")
		verifier := signing.NewVerifier(signing.VerifierOptions{Source: signing.HTTPKeySource(cfg.Client, a.cfg.ControlURL),
			Clock: cfg.Clock, MinRefetch: 10 * time.Second})
		a.control = &Control{URL: a.cfg.ControlURL, ContainerID: cfg.ContainerID, Token: cfg.Token, Client: cfg.Client, Verifier: verifier}
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
	a.cfg.Journal.Record(platform.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "info", Message: msg, Fields: fields})
}

// Authorize is the gateway's decision for one request.
func (a *Authorizer) Authorize(r gateway.Request, t gateway.Target) (gateway.Identity, *platform.Error) {
	client := r.Client()
	src, _ := netip.AddrFromSlice(client)
	src = src.Unmap()
	port := a.cfg.Port(t.Service)
	f := proxyperm.Facts{
		Program:  proxyperm.ProgramFor(t.Service, port),
		Port:     port,
		Source:   src,
		Loopback: r.RemoteIP != nil && r.RemoteIP.IsLoopback() && client.IsLoopback(),
		Header:   r.Header, Cookie: r.Cookie, Param: r.Query,
		Now: a.cfg.Clock.Now(), Audience: a.cfg.ContainerID,
	}
	d := a.Policy().Evaluate(f, a.claims)
	a.record(r, t, f, d)
	if !d.Allowed() {
		return gateway.Identity{}, d.Error(t.Service)
	}
	return gateway.Identity{Group: d.Group, Type: d.Type, Subject: d.Subject}, nil
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
	a.cfg.Journal.Record(platform.JournalEntry{Time: f.Now, Source: "gateway", Level: level, Message: "proxy decision", Fields: fields})
}

// compile normalizes (hashing plaintext passwords, as the control plane
// does on write) and compiles a validated document.
func compile(d *proxyperm.Document) (*proxyperm.Policy, error) {
	if err := d.Normalize(); err != nil {
		return nil, err
	}
	return proxyperm.Compile(d)
}
