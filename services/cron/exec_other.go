//go:build !linux

package cron

import (
	"fmt"
	"os/exec"
	"os/user"
)

// asUser runs commands as the service's own user only off Linux.
func asUser(_ *exec.Cmd, u *user.User) error {
	if cur, err := user.Current(); err == nil && cur.Uid == u.Uid {
		return nil
	}
	return fmt.Errorf("running as %s is supported on Linux only", u.Username)
}
