package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/proc"
)

// The SSH server: an agent that runs as root with --run-as (a container's
// agent) and is given an OpenSSH sshd (--sshd, which deckhand/base sets)
// keeps it running as root on 127.0.0.1:22, for `deckhand tunnel --remote
// 22` and ssh with the keys the control plane holds (sshkeys_linux.go
// writes them into the user's authorized_keys). Loopback only: the
// container's network address is reachable by its neighbours on the
// engine's bridge, the tunnel is what the platform authorises. Its host key
// is made on its first start at OpenSSH's usual place (/etc/ssh, the
// public half readable by every user, as ssh-keygen -A leaves it), so
// every container has its own (the image carries none) and keeps it
// across a stop and start.

// sshdPort is where the server listens.
const sshdPort = 22

// sshd supervises one OpenSSH server.
type sshd struct {
	bin     string
	dir     string // the host key's directory
	journal contract.Journal
	backoff Backoff
}

// newSSHD is the server to keep, or nil when there is none to run: no
// --sshd, not root with a --run-as user (on a developer's machine the
// agent never starts a server of its own), or the binary is missing.
func (s *Supervisor) newSSHD() *sshd {
	bin := s.cfg.SSHD
	if bin == "" || s.cfg.Settings.Common.RunAs == "" || os.Geteuid() != 0 {
		return nil
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		s.log.Warn("no SSH server: --sshd is not an executable", "sshd", bin, "err", err)
		return nil
	}
	return &sshd{bin: bin, dir: "/etc/ssh", journal: s.cfg.Journal, backoff: DefaultBackoff()}
}

func (d *sshd) record(level, msg string, fields map[string]any) {
	d.journal.Record(contract.JournalEntry{Time: time.Now(), Source: "sshd", Level: level, Message: msg, Fields: fields})
}

// run keeps the server up until ctx ends, restarting it with the
// supervisor's backoff when it exits.
func (d *sshd) run(ctx context.Context) {
	for {
		start := time.Now()
		err := d.once(ctx)
		if ctx.Err() != nil {
			return
		}
		delay := d.backoff.Next(time.Since(start))
		d.record("warn", "SSH server exited; restarting", map[string]any{"err": fmt.Sprint(err), "restart_in_ms": delay.Milliseconds()})
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// once makes the host key when missing, then runs the server until it
// exits or ctx ends.
func (d *sshd) once(ctx context.Context) error {
	key, err := d.hostKey(ctx)
	if err != nil {
		return err
	}
	// OpenSSH's privilege separation needs its empty directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return err
	}
	cmd := exec.Command(d.bin, "-D", "-e", "-h", key,
		"-o", "ListenAddress=127.0.0.1:"+strconv.Itoa(sshdPort),
		"-o", "PidFile=none",
		"-o", "PasswordAuthentication=no",
		"-o", "KbdInteractiveAuthentication=no",
		"-o", "PermitRootLogin=no",
		"-o", "UsePAM=no",
		"-o", "AuthorizedKeysFile=.ssh/authorized_keys")
	// Its log (-e: stderr) joins the agent's; none of the agent's own
	// variables (its token) reach it or the sessions it starts.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = proc.Env()
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", d.bin, err)
	}
	pid := cmd.Process.Pid
	d.record("info", "SSH server started", map[string]any{"pid": pid, "listen": "127.0.0.1:" + strconv.Itoa(sshdPort)})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		_ = proc.KillGroup(pid, syscall.SIGKILL)
		if err == nil {
			err = errors.New("exited")
		}
		return err
	case <-ctx.Done():
		// Its sessions go with it: the container is stopping.
		proc.StopTree(pid, syscall.SIGTERM, serviceGrace, done)
		return nil
	}
}

// hostKey is the server's ed25519 host key, made by the image's ssh-keygen
// (beside sshd) on the first start.
func (d *sshd) hostKey(ctx context.Context) (string, error) {
	key := filepath.Join(d.dir, "ssh_host_ed25519_key")
	if _, err := os.Stat(key); err == nil {
		return key, nil
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return "", err
	}
	tmp := key + ".new"
	_ = os.Remove(tmp)
	_ = os.Remove(tmp + ".pub")
	keygen := filepath.Join(filepath.Dir(d.bin), "..", "bin", "ssh-keygen")
	if _, err := os.Stat(keygen); err != nil {
		if keygen, err = exec.LookPath("ssh-keygen"); err != nil {
			return "", errors.New("no ssh-keygen to make the SSH server's host key")
		}
	}
	out, err := exec.CommandContext(ctx, keygen, "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", tmp).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("make the SSH host key: %w: %s", err, out)
	}
	if err := os.Rename(tmp+".pub", key+".pub"); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, key); err != nil {
		return "", err
	}
	d.record("info", "SSH host key made", map[string]any{"key": key})
	return key, nil
}
