package proc

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

var errClosed = errors.New("the service is stopping")

// Attr is the SysProcAttr of a command that runs in a new process group
// (so the whole tree it starts can be signalled at once), killed when the
// agent dies (start it with a Spawner) as userName ("" is
// the service's own user; another user needs root). It also answers that
// user's HOME, USER and LOGNAME for the environment.
func Attr(userName string) (*syscall.SysProcAttr, []string, error) {
	cred, env, err := Credential(userName)
	if err != nil {
		return nil, nil, err
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}, env, nil
}

// Credential is what running as userName (a name, or a numeric uid) takes: the credential with the
// user's uid, gid and supplementary groups (nil for "" or the service's
// own user; another user needs root), and the user's HOME, USER and
// LOGNAME for the environment (nil for "").
func Credential(userName string) (*syscall.Credential, []string, error) {
	if userName == "" {
		return nil, nil, nil
	}
	u, err := user.Lookup(userName)
	if err != nil {
		if _, nerr := strconv.ParseUint(userName, 10, 32); nerr == nil {
			u, err = user.LookupId(userName)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("user %q: no such user", userName)
		}
	}
	env := []string{"HOME=" + u.HomeDir, "USER=" + u.Username, "LOGNAME=" + u.Username}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, nil, fmt.Errorf("user %q: uid %q", userName, u.Uid)
	}
	if int(uid) == os.Geteuid() {
		return nil, env, nil
	}
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("user %q: running as another user needs the agent to run as root", userName)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, nil, fmt.Errorf("user %q: gid %q", userName, u.Gid)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	return cred, env, nil
}

// KillGroup sends sig to the process group pgid (a leader's pid). A group
// already gone is not an error.
func KillGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return nil
	}
	err := syscall.Kill(-pgid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

// Descendants lists every live process below pid (children, their
// children, ...), read from /proc. A process that left the group with
// setsid is still found here as long as its parent chain reaches pid.
func Descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parentOf(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/PID/stat (field 4, after the
// parenthesised command name, which may itself hold spaces and parens).
func parentOf(pid int) int {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// KillTree sends sig to pid's process group and to every descendant of pid
// that left it, so a stop reaches the children of children.
func KillTree(pid int, sig syscall.Signal) {
	desc := Descendants(pid)
	_ = KillGroup(pid, sig)
	for _, d := range desc {
		_ = syscall.Kill(d, sig)
	}
}
