package access

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"deckhand/platform"
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
	SavedAt  time.Time           `json:"saved_at"`
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

// save writes the verified answer atomically (0600: documents hold
// secrets).
func (a *Authorizer) save(s saved) error {
	if a.cfg.Dir == "" {
		return nil
	}
	s.SavedAt = a.cfg.Clock.Now()
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeAtomic(a.cfg.Dir, "effective.json", raw)
}

// syncLoop polls the control plane every Poll with If-None-Match.
func (a *Authorizer) syncLoop(ctx context.Context) {
	var lastErr string
	for {
		err := a.SyncOnce(ctx)
		if err != nil && ctx.Err() == nil {
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				a.cfg.Journal.Record(platform.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "error",
					Message: "proxy permissions sync failed; the last verified document stays in force",
					Fields:  map[string]any{"error": msg, "etag": a.ETag()}})
			}
		} else if err == nil && lastErr != "" {
			lastErr = ""
			a.cfg.Journal.Record(platform.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "info",
				Message: "proxy permissions sync recovered", Fields: map[string]any{"etag": a.ETag()}})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.Poll):
		}
	}
}

// ErrUnverified is a control-plane answer whose signature did not verify.
var ErrUnverified = errors.New("control plane answer failed signature verification")

// SyncOnce asks the control plane once and applies a verified change.
// Nothing unverified, malformed or unexpected changes what is in force.
func (a *Authorizer) SyncOnce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	path := effectivePath(a.cfg.ContainerID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.ControlURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	if tag := a.ETag(); tag != "" {
		req.Header.Set("If-None-Match", `"`+tag+`"`)
	}
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("control plane unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("read the control plane's answer: %w", err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("control plane answer larger than %d bytes", maxDocument)
	}
	if _, err := a.verifier.VerifyResponse(resp, body); err != nil {
		return fmt.Errorf("%w: %v", ErrUnverified, err)
	}
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil
	case http.StatusOK:
	case http.StatusNotFound:
		// A verified "no document": only loopback passes (closing, never opening).
		if err := a.save(saved{ETag: "none", None: true}); err != nil {
			a.cfg.Logger.Warn("keep the proxy permissions state on disk", "err", err)
		}
		a.apply(&state{etag: "none"}, "control plane")
		return nil
	default:
		return fmt.Errorf("control plane answered %d: %s", resp.StatusCode, clip(body))
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 {
		return errors.New("control plane answer is not a document envelope")
	}
	d, err := proxyperm.Decode(env.Data)
	if err != nil {
		return fmt.Errorf("control plane sent a document that does not validate (refused whole): %w", err)
	}
	var ver struct {
		FileVersion int64 `json:"file_version"`
	}
	_ = json.Unmarshal(env.Data, &ver)
	d.FileVersion = ver.FileVersion
	if d.Container != a.cfg.ContainerID && d.Container != "*" {
		return fmt.Errorf("control plane sent the document of container %q", d.Container)
	}
	p, err := compile(d)
	if err != nil {
		return fmt.Errorf("control plane sent a document that does not compile (refused whole): %w", err)
	}
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
