package run

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
	"deckhand/platform/store"
)

// Sync syncs one source now and answers it with the result in sync. A
// failed sync is an answer too (state error, last_error); 409 when the
// source is syncing already.
func (s *Service) Sync(ctx context.Context, id string) (Source, error) {
	src, err := s.source(id)
	if err != nil {
		return Source{}, err
	}
	s.mu.Lock()
	if s.syncing[id] {
		s.mu.Unlock()
		return Source{}, &fault.Error{Code: fault.CodeConflict, Details: "source_id", Message: "source " + id + " is syncing already"}
	}
	s.syncing[id] = true
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.syncing, id); s.mu.Unlock() }()

	// The sync outlives a client that hangs up: a half-done sync would
	// only be redone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	start := s.deps.Clock.Now().UTC()
	steps, rev, syncErr := s.syncSource(ctx, src)
	// A password in the URL never reaches the diagnostics or the journal.
	if pw := secretOf(src.URL); pw != "" {
		for i := range steps {
			steps[i].Error = strings.ReplaceAll(steps[i].Error, pw, "xxxxx")
		}
		if syncErr != nil {
			syncErr = errors.New(strings.ReplaceAll(syncErr.Error(), pw, "xxxxx"))
		}
	}
	dur := s.deps.Clock.Now().Sub(start).Milliseconds()
	err = s.deps.Store.Update(func(tx *store.Tx) error {
		var cur Source
		if err := s.getSource(tx, id, &cur); err != nil {
			var pe *fault.Error
			if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
				return nil // deleted meanwhile: nothing to record
			}
			return err
		}
		info := cur.Sync
		info.LastAttemptAt, info.DurationMS, info.Steps = &start, dur, steps
		info.Attempts++
		if syncErr != nil {
			info.State, info.LastError = StateError, syncErr.Error()
			info.Failures++
		} else {
			info.State, info.LastError, info.Revision = StateOK, "", rev
			info.LastSuccessAt = &start
		}
		cur.Sync = info
		src = cur
		return s.putSource(tx, cur)
	})
	level, msg := "info", "source synced"
	if syncErr != nil {
		level, msg = "warn", "source sync failed: "+syncErr.Error()
	}
	s.deps.Journal.Record(contract.JournalEntry{Time: start, Source: "run", Level: level, Message: msg,
		Fields: map[string]any{"source": src.Name, "type": src.Type, "duration_ms": dur}})
	return s.view(src), err
}

// SyncAll syncs every source one after another.
func (s *Service) SyncAll(ctx context.Context) (SyncAll, error) {
	list, err := s.Sources()
	if err != nil {
		return SyncAll{}, err
	}
	out := SyncAll{Sources: []Source{}}
	for _, src := range list.Sources {
		got, err := s.Sync(ctx, src.ID)
		if err != nil {
			var pe *fault.Error
			if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
				continue
			}
			if errors.As(err, &pe) && pe.Code == fault.CodeConflict {
				src.Sync.State = StateSyncing
				out.Failed++
				out.Sources = append(out.Sources, src)
				continue
			}
			return out, err
		}
		if got.Sync.State == StateOK {
			out.OK++
		} else {
			out.Failed++
		}
		out.Sources = append(out.Sources, got)
	}
	return out, nil
}

// Diagnostics reads a source's last sync and its directory's state.
func (s *Service) Diagnostics(id string) (Diagnostics, error) {
	src, err := s.Source(id)
	if err != nil {
		return Diagnostics{}, err
	}
	s.mu.Lock()
	busy := s.syncing[id]
	s.mu.Unlock()
	d := Diagnostics{SourceID: id, Type: src.Type, URL: src.URL, Path: src.Path, Syncing: busy, Sync: src.Sync}
	if st, err := os.Stat(src.Path); err == nil && st.IsDir() {
		d.Exists = true
	}
	if src.Type == TypeGit {
		if out, err := exec.Command("git", "--version").Output(); err == nil {
			d.Tool = strings.TrimSpace(string(out))
		}
	}
	return d, nil
}

type stepper struct {
	clock clockpkg.Clock
	steps []Step
}

func (st *stepper) do(name string, fn func() error) error {
	t := st.clock.Now()
	err := fn()
	s := Step{Name: name, DurationMS: st.clock.Now().Sub(t).Milliseconds()}
	if err != nil {
		s.Error = err.Error()
	}
	st.steps = append(st.steps, s)
	return err
}

func (s *Service) syncSource(ctx context.Context, src Source) ([]Step, string, error) {
	st := &stepper{clock: s.deps.Clock}
	dest := s.withPath(src).Path
	var rev string
	err := st.do("prepare", func() error { return os.MkdirAll(filepath.Dir(dest), 0o755) })
	if err == nil {
		if src.Type == TypeGit {
			rev, err = s.syncGit(ctx, st, src, dest)
		} else {
			rev, err = s.syncArchive(ctx, st, src, dest)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("sync took longer than %s", s.timeout)
	}
	return st.steps, rev, err
}

// git runs the real git without prompts, remote helpers or the user's
// configuration of credential helpers getting in the way of a service.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitPinned(ctx, dir, nil, nil, args...)
}

// gitPinned is git with options and environment that hold its network
// connections to a checked address (egress.gitPins); the later
// environment entries win.
func gitPinned(ctx context.Context, dir string, opts, env []string, args ...string) (string, error) {
	full := append(append([]string{"-c", "protocol.ext.allow=never", "-c", "advice.detachedHead=false"}, opts...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = proc.Env([]string{"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes"}, env)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		msg = cmp.Or(msg, err.Error())
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimSpace(out.String()), nil
}

func (s *Service) syncGit(ctx context.Context, st *stepper, src Source, dest string) (string, error) {
	// Before anything is written: a refused URL leaves no empty repository.
	var opts, env []string
	if err := st.do("resolve", func() error {
		var err error
		opts, env, err = s.egress.gitPins(ctx, src.URL)
		return err
	}); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dest, ".git")); err != nil {
		if err := st.do("init", func() error {
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
			_, err := git(ctx, dest, "init", "--quiet")
			return err
		}); err != nil {
			return "", err
		}
	}
	if err := st.do("remote", func() error {
		if _, err := git(ctx, dest, "remote", "set-url", "origin", "--", src.URL); err == nil {
			return nil
		}
		_, err := git(ctx, dest, "remote", "add", "origin", "--", src.URL)
		return err
	}); err != nil {
		return "", err
	}
	ref := cmp.Or(src.Ref, "HEAD")
	if err := st.do("fetch", func() error {
		_, err := gitPinned(ctx, dest, opts, env, "fetch", "--quiet", "--no-tags", "origin", "--", ref)
		return err
	}); err != nil {
		return "", err
	}
	var rev string
	err := st.do("reset", func() error {
		if _, err := git(ctx, dest, "reset", "--quiet", "--hard", "FETCH_HEAD"); err != nil {
			return err
		}
		var err error
		rev, err = git(ctx, dest, "rev-parse", "HEAD")
		return err
	})
	return rev, err
}
