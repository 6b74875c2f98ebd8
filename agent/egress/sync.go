package egress

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/netconf"
)

// ControlPlane is the agent's verified channel to the control plane
// (agent/access.Control): answers come back only when their signature
// verified.
type ControlPlane interface {
	Get(ctx context.Context, path, etag string, max int) (int, []byte, error)
	Post(ctx context.Context, path string, v any, max int) (int, []byte, error)
}

// decisionReport is the shortest time between two reports that only
// carry new decisions.
const decisionReport = 5 * time.Second

// maxConfig bounds the configuration document.
const maxConfig = 1 << 20

// SyncConfig is what the network sync needs.
type SyncConfig struct {
	Control     ControlPlane
	ContainerID string
	// ControlURL is the control plane's URL: its address and port stay
	// reachable whatever the configuration.
	ControlURL string
	// Dir keeps the last verified configuration (<data>/egress).
	Dir    string
	Engine *Engine
	// Poll is how often the configuration is asked for (default 2 s);
	// ReportEvery how often the agent reports what runs (default 30 s,
	// and after every change).
	Poll, ReportEvery time.Duration
	// Data reads a control-plane envelope's data (access.Data).
	Data    func([]byte) (json.RawMessage, error)
	Save    func(dir, name string, v any) error
	Load    func(dir, name string, v any) (bool, error)
	Journal contract.Journal
	Clock   clock.Clock
}

// Sync keeps the engine enforcing the control plane's configuration.
type Sync struct {
	cfg     SyncConfig
	etag    string
	cur     *netconf.Document
	lastErr string
	// highest is the highest version seen (kept on disk): an older
	// configuration is refused.
	highest int64
}

// saved is the on-disk form of the last verified answer.
type saved struct {
	ETag     string            `json:"etag"`
	None     bool              `json:"none,omitempty"`
	Document *netconf.Document `json:"document,omitempty"`
	Highest  int64             `json:"highest,omitempty"`
	SavedAt  time.Time         `json:"saved_at"`
	// Container is the container it was saved for: a copy of the agent's
	// files in another container (a fork of a snapshot) is not its own.
	Container string `json:"container_id,omitempty"`
}

// ownedBy says whether saved state s is container id's: its own mark,
// or (saved before the mark) its document's.
func (s *saved) ownedBy(id string) bool {
	if s.Container != "" || s.Document == nil {
		return s.Container == "" || s.Container == id
	}
	return s.Document.Container == id
}

const savedName = "network.json"

// EffectivePath is the route the agent polls (control/projects).
func EffectivePath(container string) string {
	return "/api/v1/containers/" + url.PathEscape(container) + "/network/effective"
}

// ReportPath is where the agent reports what runs.
func ReportPath(container string) string {
	return "/api/v1/containers/" + url.PathEscape(container) + "/network/remote-status"
}

// NewSync puts the last verified configuration back in force (the rules
// of a running network come back before the control plane answers).
func NewSync(ctx context.Context, cfg SyncConfig) *Sync {
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.ReportEvery <= 0 {
		cfg.ReportEvery = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.SystemClock{}
	}
	s := &Sync{cfg: cfg}
	var sv saved
	found, err := cfg.Load(cfg.Dir, savedName, &sv)
	if err == nil && found && !sv.ownedBy(cfg.ContainerID) {
		found = false // another container's: wait for the control plane
	}
	if err == nil && found {
		s.highest = sv.Highest
		if sv.Document != nil {
			s.highest = max(s.highest, sv.Document.Version)
		}
	}
	switch {
	case err != nil:
		s.journal("warn", "last verified network configuration unreadable; waiting for the control plane", map[string]any{"error": err.Error()})
	case found && sv.Document != nil:
		c, err := netconf.Compile(sv.Document)
		if err != nil {
			s.journal("warn", "last verified network configuration invalid; waiting for the control plane", map[string]any{"error": err.Error()})
			break
		}
		s.etag, s.cur = sv.ETag, sv.Document
		_ = cfg.Engine.Apply(ctx, c)
	case found && sv.None:
		s.etag = sv.ETag
		_ = cfg.Engine.Apply(ctx, nil)
	}
	return s
}

// Run polls until ctx ends, then closes the engine: the rules go with the
// agent.
func (s *Sync) Run(ctx context.Context) {
	defer s.cfg.Engine.Close()
	var nextReport, nextExempt, lastReport time.Time
	var reported uint64
	for {
		now := s.cfg.Clock.Now()
		if !now.Before(nextExempt) {
			s.refreshExempt(ctx)
			nextExempt = now.Add(s.cfg.ReportEvery)
		}
		changed, err := s.SyncOnce(ctx)
		s.note(ctx, err)
		// New decisions are reported soon, at most every decisionReport.
		st := s.cfg.Engine.Status()
		fresh := st.Allowed+st.Denied != reported && now.Sub(lastReport) >= decisionReport
		if changed || fresh || !now.Before(nextReport) {
			s.Report(ctx)
			reported, lastReport = st.Allowed+st.Denied, now
			nextReport = now.Add(s.cfg.ReportEvery)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Poll):
		}
	}
}

func (s *Sync) note(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil {
		if msg := err.Error(); msg != s.lastErr {
			s.lastErr = msg
			s.journal("error", "network configuration sync failed; the last verified configuration stays in force",
				map[string]any{"error": msg, "etag": s.etag})
		}
	} else if err == nil && s.lastErr != "" {
		s.lastErr = ""
		s.journal("info", "network configuration sync recovered", map[string]any{"etag": s.etag})
	}
}

// SyncOnce asks for the configuration once and applies a verified change;
// changed reports whether something new was applied. Nothing unverified,
// malformed or of another container changes what is in force.
func (s *Sync) SyncOnce(ctx context.Context) (changed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	status, body, err := s.cfg.Control.Get(ctx, EffectivePath(s.cfg.ContainerID), s.etag, maxConfig)
	if err != nil {
		return false, err
	}
	switch status {
	case http.StatusNotModified:
		return false, nil
	case http.StatusNotFound:
		// Only a 404 bound to this request and path, with a signed 404
		// body (access.Control), says "no configuration".
		if s.etag == "none" {
			return false, nil
		}
		s.etag, s.cur = "none", nil
		if err := s.cfg.Save(s.cfg.Dir, savedName, saved{ETag: "none", None: true, Highest: s.highest, SavedAt: s.cfg.Clock.Now(), Container: s.cfg.ContainerID}); err != nil {
			s.journal("warn", "keep the network configuration on disk", map[string]any{"error": err.Error()})
		}
		_ = s.cfg.Engine.Apply(ctx, nil)
		return true, nil
	case http.StatusOK:
	default:
		return false, fmt.Errorf("control plane answered %d: %s", status, clip(body))
	}
	data, err := s.cfg.Data(body)
	if err != nil {
		return false, err
	}
	var d netconf.Document
	if err := json.Unmarshal(data, &d); err != nil {
		return false, fmt.Errorf("control plane sent a network configuration that does not decode: %w", err)
	}
	if d.Container != s.cfg.ContainerID {
		return false, fmt.Errorf("control plane sent the network configuration of container %q", d.Container)
	}
	c, err := netconf.Compile(&d)
	if err != nil {
		return false, fmt.Errorf("control plane sent a network configuration that does not validate (refused whole): %w", err)
	}
	// Versions only move forward: an older configuration is an answer
	// replayed or a control plane rolled back, and is not applied.
	if d.Version < s.highest {
		return false, fmt.Errorf("control plane sent network configuration version %d, older than version %d already seen (refused)", d.Version, s.highest)
	}
	s.highest = d.Version
	// The tag is rebuilt from the signed body, never taken from the
	// ETag header.
	etag := "network:v" + strconv.FormatInt(d.Version, 10)
	if err := s.cfg.Save(s.cfg.Dir, savedName, saved{ETag: etag, Document: &d, Highest: s.highest, SavedAt: s.cfg.Clock.Now(), Container: s.cfg.ContainerID}); err != nil {
		s.journal("warn", "keep the network configuration on disk", map[string]any{"error": err.Error()})
	}
	s.etag, s.cur = etag, &d
	if err := s.cfg.Engine.Apply(ctx, c); err != nil && !errors.Is(err, ErrNotEnforceable) {
		s.journal("error", "network configuration not applied", map[string]any{"error": err.Error(), "version": d.Version})
	}
	return true, nil
}

// Report checks what runs and tells the control plane.
func (s *Sync) Report(ctx context.Context) {
	if s.cur == nil {
		return
	}
	st := s.cfg.Engine.Check(ctx)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	status, body, err := s.cfg.Control.Post(ctx, ReportPath(s.cfg.ContainerID), st, 64<<10)
	switch {
	case err != nil:
		s.cfg.Engine.opt.Logger.Debug("network report not delivered", "err", err)
	case status == http.StatusNotFound:
	case status/100 != 2:
		s.cfg.Engine.opt.Logger.Warn("network report refused", "status", status, "body", clip(body))
	}
}

// refreshExempt resolves the control plane's host and keeps its
// addresses reachable (a name may move).
func (s *Sync) refreshExempt(ctx context.Context) {
	u, err := url.Parse(s.cfg.ControlURL)
	if err != nil || u.Hostname() == "" {
		return
	}
	port := cmp.Or(u.Port(), map[string]string{"https": "443"}[u.Scheme], "80")
	p, _ := strconv.Atoi(port)
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ips, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			return
		}
		for _, a := range ips {
			addrs = append(addrs, a.Unmap())
		}
	}
	var aps []netip.AddrPort
	for _, a := range addrs {
		if !a.IsLoopback() {
			aps = append(aps, netip.AddrPortFrom(a, uint16(p)))
		}
	}
	slices.SortFunc(aps, func(a, b netip.AddrPort) int { return a.Compare(b) })
	s.cfg.Engine.SetExempt(aps)
}

func (s *Sync) journal(level, msg string, fields map[string]any) {
	if s.cfg.Journal == nil {
		return
	}
	s.cfg.Journal.Record(contract.JournalEntry{Time: s.cfg.Clock.Now(), Source: Source, Level: level, Message: msg, Fields: fields})
}

func clip(b []byte) string {
	t := strings.TrimSpace(string(b))
	if len(t) > 200 {
		t = t[:200]
	}
	return t
}
