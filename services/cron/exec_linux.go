package cron

import (
	"os/exec"
	"os/user"
	"syscall"

	"deckhand/platform/proc"
)

// asUser puts the command in its own process group (so stopping the
// service kills the whole job) and, for another user's entry, switches to
// that user's uid, gid and groups, which only root may do.
func asUser(cmd *exec.Cmd, u *user.User) error {
	cred, _, err := proc.Credential(u.Username)
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	cmd.Cancel = func() error { return proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL) }
	return nil
}
