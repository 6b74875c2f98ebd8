package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"deckhand/agent/access"
	"deckhand/platform/contract"
)

// SSH keys: an agent that runs as root with --run-as (the container's
// init, as the control plane's runtime starts it) keeps the container's
// SSH public keys, which the control plane holds
// (POST /api/v1/containers/{id}/ssh-keys), in its block of that user's
// ~/.ssh/authorized_keys, for an ssh server in the container reached
// through the tunnel. Lines outside the block are the user's and stay.
// The user owns ~/.ssh, so every step is relative to a descriptor of a
// directory opened without following links: a link the user plants
// there never makes root write elsewhere.

const (
	sshBlockBegin = "# deckhand: the container's keys from the control plane (the agent rewrites this block; change them with the API)"
	sshBlockEnd   = "# deckhand: end"
	sshKeysPath   = "/api/v1/containers/%s/ssh-keys/effective"
)

// sshKeySync polls the keys and writes them.
type sshKeySync struct {
	control     *access.Control
	containerID string
	home        string
	uid, gid    int
	journal     contract.Journal
	etag        string
}

// newSSHKeySync is the sync for the run-as user, or nil when the agent
// does not run as root with one (on a developer's machine nothing of
// theirs is touched) or has no control plane.
func (s *Supervisor) newSSHKeySync() *sshKeySync {
	runAs := s.cfg.Settings.Common.RunAs
	if s.access == nil || s.access.Control() == nil || runAs == "" || os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(runAs)
	if err != nil {
		if u, err = user.LookupId(runAs); err != nil {
			s.log.Warn("SSH keys are not kept: the --run-as user is unknown", "user", runAs, "err", err)
			return nil
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if u.HomeDir == "" || uid == 0 {
		return nil
	}
	return &sshKeySync{control: s.access.Control(), containerID: s.cfg.ContainerID, home: u.HomeDir, uid: uid, gid: gid, journal: s.cfg.Journal}
}

func (k *sshKeySync) run(ctx context.Context) {
	failing := false
	for {
		err := k.once(ctx)
		if (err != nil) != failing && ctx.Err() == nil {
			failing = err != nil
			level, msg, fields := "info", "SSH keys in force again", map[string]any{}
			if failing {
				level, msg, fields["err"] = "warn", "SSH keys not updated", err.Error()
			}
			k.journal.Record(contract.JournalEntry{Time: time.Now(), Source: "ssh-keys", Level: level, Message: msg, Fields: fields})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// once asks for the keys and, when they changed, writes them.
func (k *sshKeySync) once(ctx context.Context) error {
	status, body, err := k.control.Get(ctx, fmt.Sprintf(sshKeysPath, k.containerID), k.etag, 1<<20)
	if err != nil {
		return err
	}
	switch status {
	case http.StatusNotModified:
		return nil
	case http.StatusOK:
	default:
		return fmt.Errorf("the control plane answered %d", status)
	}
	raw, err := access.Data(body)
	if err != nil {
		return err
	}
	var d struct {
		Keys    []string `json:"keys"`
		Version string   `json:"version"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("the SSH keys answer: %w", err)
	}
	for _, line := range d.Keys {
		if strings.ContainsAny(line, "\r\n") {
			return errors.New("the SSH keys answer holds a key on more than one line")
		}
	}
	if err := k.write(d.Keys); err != nil {
		return err
	}
	k.etag = "ssh-keys:" + d.Version
	k.journal.Record(contract.JournalEntry{Time: time.Now(), Source: "ssh-keys", Level: "info", Message: "SSH keys written",
		Fields: map[string]any{"keys": len(d.Keys), "version": d.Version}})
	return nil
}

// write replaces the block in ~/.ssh/authorized_keys with keys, making
// ~/.ssh (0700) and the file (0600), the user's, when absent.
func (k *sshKeySync) write(keys []string) error {
	home, err := unix.Open(k.home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", k.home, err)
	}
	defer unix.Close(home)
	if err := unix.Mkdirat(home, ".ssh", 0o700); err == nil {
		if err := unix.Fchownat(home, ".ssh", k.uid, k.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	} else if !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("make %s/.ssh: %w", k.home, err)
	}
	dir, err := unix.Openat(home, ".ssh", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s/.ssh (a directory, not a link): %w", k.home, err)
	}
	defer unix.Close(dir)

	var old []byte
	if fd, err := unix.Openat(dir, "authorized_keys", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0); err == nil {
		f := os.NewFile(uintptr(fd), "authorized_keys")
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			old, err = io.ReadAll(io.LimitReader(f, 1<<20))
		}
		f.Close()
		if err != nil {
			return err
		}
	} else if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("read %s/.ssh/authorized_keys: %w", k.home, err)
	}
	next := replaceSSHBlock(old, keys)
	if bytes.Equal(next, old) {
		return nil
	}
	tmp := ".authorized_keys.deckhand"
	_ = unix.Unlinkat(dir, tmp, 0)
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s/.ssh/authorized_keys: %w", k.home, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(next)
	if err == nil {
		err = f.Chown(k.uid, k.gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, "authorized_keys")
	}
	if err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return fmt.Errorf("write %s/.ssh/authorized_keys: %w", k.home, err)
	}
	return nil
}

// replaceSSHBlock is old with its deckhand block (if any) replaced by one
// holding keys (none when keys is empty).
func replaceSSHBlock(old []byte, keys []string) []byte {
	var out []string
	in := false
	for _, line := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		switch {
		case line == sshBlockBegin:
			in = true
		case in && line == sshBlockEnd:
			in = false
		case !in && line != "":
			out = append(out, line)
		}
	}
	if len(keys) > 0 {
		out = append(out, sshBlockBegin)
		out = append(out, keys...)
		out = append(out, sshBlockEnd)
	}
	if len(out) == 0 {
		return []byte{}
	}
	return []byte(strings.Join(out, "\n") + "\n")
}
