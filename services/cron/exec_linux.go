package cron

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// asUser puts the command in its own process group (so stopping the
// service kills the whole job) and, for another user's entry, switches to
// that user's uid, gid and groups, which only root may do.
func asUser(cmd *exec.Cmd, u *user.User) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return fmt.Errorf("user %s: uid %q", u.Username, u.Uid)
	}
	if int(uid) == os.Geteuid() {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("running as %s needs the cron service to run as root", u.Username)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return fmt.Errorf("user %s: gid %q", u.Username, u.Gid)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	cmd.SysProcAttr.Credential = cred
	return nil
}
