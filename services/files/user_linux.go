package files

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"deckhand/platform/proc"
)

// identity is the OS user file operations run as (--files-user).
//
// Go has no per-goroutine credentials and syscall.Setuid changes every
// thread of the process, so the service uses Linux's file-system ids,
// which are per thread: an operation locks its goroutine to an OS thread,
// sets that thread's supplementary groups, fsgid and fsuid to the user's,
// runs, and restores them before unlocking. The kernel then checks
// permissions exactly as for the user and new files belong to the user
// (a uid change from 0 also drops CAP_DAC_OVERRIDE, CAP_CHOWN and
// CAP_FOWNER for that thread). Reads and writes on a file already opened
// this way need no credentials, so streams run on any thread. If a thread
// cannot be restored it stays locked and dies with its goroutine.
type identity struct {
	uid, gid int
	groups   []uint32
}

func lookupIdentity(name string) (*identity, error) {
	cred, _, err := proc.Credential(name)
	if err != nil {
		return nil, fmt.Errorf("--files-user %s: %w", name, err)
	}
	if cred == nil {
		return nil, nil // no user named, or already that user
	}
	id := &identity{uid: int(cred.Uid), gid: int(cred.Gid), groups: cred.Groups}
	if len(id.groups) == 0 {
		id.groups = []uint32{cred.Gid}
	}
	return id, nil
}

func setThreadGroups(gs []uint32) error {
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0); e != 0 {
		return e
	}
	return nil
}

func setThreadFS(uid, gid int) error {
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	// setfs[ug]id answer the previous id; asking again confirms the change.
	g, _, _ := syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
	u, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	if int(u) != uid || int(g) != gid {
		return fmt.Errorf("setfsuid/setfsgid to %d/%d refused", uid, gid)
	}
	return nil
}

// run calls fn with the thread's file-system credentials set to id's.
func (id *identity) run(fn func() error) error {
	if id == nil {
		return fn()
	}
	runtime.LockOSThread()
	orig := make([]uint32, 64)
	n, _, e := syscall.RawSyscall(syscall.SYS_GETGROUPS, uintptr(len(orig)), uintptr(unsafe.Pointer(&orig[0])), 0)
	if e != 0 {
		runtime.UnlockOSThread()
		return fmt.Errorf("getgroups: %w", e)
	}
	orig = orig[:n]
	if err := setThreadGroups(id.groups); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := setThreadFS(id.uid, id.gid); err != nil {
		if setThreadGroups(orig) == nil {
			runtime.UnlockOSThread()
		}
		return err
	}
	err := fn()
	if setThreadFS(os.Geteuid(), os.Getegid()) == nil && setThreadGroups(orig) == nil {
		runtime.UnlockOSThread()
	}
	return err
}
