package access

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/proxyperm"
)

// effectivePath is the control-plane route of the container's effective
// document (control/projects: EffectivePath).
func effectivePath(container string) string {
	return "/api/v1/containers/" + url.PathEscape(container) + "/proxy/permissions/effective"
}

// saved is the on-disk form of the last verified answer.
type saved struct {
	ETag     string              `json:"etag"`
	None     bool                `json:"none,omitempty"` // verified 404: no document
	Document *proxyperm.Document `json:"document,omitempty"`
	// Highest is the highest file_version seen per scope ("container",
	// "project"): a document older than it is refused, across restarts.
	Highest map[string]int64 `json:"highest,omitempty"`
	SavedAt time.Time        `json:"saved_at"`
	// Container is the container it was saved for: a copy of the agent's
	// files in another container (a fork of a snapshot) is not its own.
	Container string `json:"container_id,omitempty"`
}

// ownedBy says whether saved state s is container id's: its own mark,
// or (saved before the mark) its document's.
func (s *saved) ownedBy(id string) bool {
	if s.Container != "" || s.Document == nil || s.Document.Container == "*" {
		return s.Container == "" || s.Container == id
	}
	return s.Document.Container == id
}

// scopeOf names a document's version counter: a container's document and
// its project's count separately (control/projects).
func scopeOf(d *proxyperm.Document) string {
	if d.Container == "*" {
		return "project"
	}
	return "container"
}

func (a *Authorizer) savedPath() string { return filepath.Join(a.cfg.Dir, "effective.json") }

// loadSaved puts the last verified document back in force at start. A
// file that does not read is ignored (logged): the agent starts with
// loopback only until the control plane answers.
func (a *Authorizer) loadSaved() error {
	if a.cfg.Dir == "" {
		return nil
	}
	raw, err := os.ReadFile(a.savedPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", a.savedPath(), err)
	}
	var s saved
	if err := json.Unmarshal(raw, &s); err != nil || (!s.None && s.Document == nil) {
		a.cfg.Logger.Warn("last verified proxy permissions document unreadable; waiting for the control plane", "file", a.savedPath())
		return nil
	}
	if !s.ownedBy(a.cfg.ContainerID) {
		a.cfg.Logger.Info("the saved proxy permissions document is another container's (a copy of its files); waiting for the control plane", "file", a.savedPath())
		return nil
	}
	a.highest = s.Highest
	if a.highest == nil {
		a.highest = map[string]int64{}
	}
	if s.Document != nil {
		sc := scopeOf(s.Document)
		a.highest[sc] = max(a.highest[sc], s.Document.FileVersion)
	}
	if s.None {
		a.apply(&state{etag: s.ETag}, "disk")
		return nil
	}
	p, err := proxyperm.Compile(s.Document)
	if err != nil {
		a.cfg.Logger.Warn("last verified proxy permissions document invalid; waiting for the control plane", "file", a.savedPath(), "err", err)
		return nil
	}
	a.apply(&state{policy: p, etag: s.ETag}, "disk")
	return nil
}

// save writes the verified answer (0600: documents hold secrets).
func (a *Authorizer) save(s saved) error {
	if a.cfg.Dir == "" {
		return nil
	}
	s.SavedAt = a.cfg.Clock.Now()
	s.Highest = a.highest
	s.Container = a.cfg.ContainerID
	return SaveVerified(a.cfg.Dir, "effective.json", s)
}

// syncLoop polls the control plane every Poll with If-None-Match.
func (a *Authorizer) syncLoop(ctx context.Context) {
	var lastErr string
	for {
		began := a.cfg.Clock.Now()
		err := a.SyncOnce(ctx)
		if err != nil && ctx.Err() == nil {
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				a.cfg.Journal.Record(contract.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "error",
					Message: "proxy permissions sync failed; the last verified document stays in force",
					Fields:  map[string]any{"error": msg, "etag": a.ETag()}})
			}
		} else if err == nil && lastErr != "" {
			lastErr = ""
			a.cfg.Journal.Record(contract.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "info",
				Message: "proxy permissions sync recovered", Fields: map[string]any{"etag": a.ETag()}})
		}
		wait := a.cfg.Poll
		if a.cfg.Clock.Now().Sub(began) > 2*a.cfg.Poll && err == nil {
			// The answer spanned a freeze (a warm-pool container paused
			// mid-sync, then claimed): it may be stale, and the token it
			// was asked with may be refused now, so ask again at once.
			wait = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// ErrUnverified is a control-plane answer whose signature did not verify.
var ErrUnverified = errors.New("control plane answer failed signature verification")

// SyncOnce asks the control plane once and applies a verified change.
// Nothing unverified, malformed or unexpected changes what is in force.
func (a *Authorizer) SyncOnce(ctx context.Context) error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	status, body, err := a.control.Get(ctx, effectivePath(a.cfg.ContainerID), a.ETag(), maxDocument)
	if err != nil {
		return err
	}
	switch status {
	case http.StatusNotModified:
		return nil
	case http.StatusOK:
	case http.StatusNotFound:
		// A "no document" bound to this request, status and path, with a
		// signed 404 body (Control.Get): only loopback passes (closing,
		// never opening).
		if a.ETag() == "none" {
			return nil
		}
		if err := a.save(saved{ETag: "none", None: true}); err != nil {
			a.cfg.Logger.Warn("keep the proxy permissions state on disk", "err", err)
		}
		a.apply(&state{etag: "none"}, "control plane")
		return nil
	default:
		return fmt.Errorf("control plane answered %d: %s", status, clip(body))
	}
	data, err := Data(body)
	if err != nil {
		return err
	}
	d, err := proxyperm.Decode(data)
	if err != nil {
		return fmt.Errorf("control plane sent a document that does not validate (refused whole): %w", err)
	}
	var ver struct {
		FileVersion int64 `json:"file_version"`
	}
	_ = json.Unmarshal(data, &ver)
	d.FileVersion = ver.FileVersion
	if d.Container != a.cfg.ContainerID && d.Container != "*" {
		return fmt.Errorf("control plane sent the document of container %q", d.Container)
	}
	p, err := compile(d)
	if err != nil {
		return fmt.Errorf("control plane sent a document that does not compile (refused whole): %w", err)
	}
	// Versions only move forward: an older document is an answer replayed
	// or a control plane rolled back, and either way not applied.
	sc := scopeOf(d)
	if d.FileVersion < a.highest[sc] {
		return fmt.Errorf("control plane sent %s document version %d, older than version %d already seen (refused)", sc, d.FileVersion, a.highest[sc])
	}
	a.highest[sc] = d.FileVersion
	// The tag is rebuilt from the signed body, never taken from the
	// (unsigned) ETag header.
	scope := "container:"
	if d.Container == "*" {
		scope = "project:"
	}
	etag := scope + proxyperm.ETag(d.FileVersion)
	if err := a.save(saved{ETag: etag, Document: d}); err != nil {
		a.cfg.Logger.Warn("keep the proxy permissions document on disk", "err", err)
	}
	a.apply(&state{policy: p, etag: etag}, "control plane")
	return nil
}

func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
