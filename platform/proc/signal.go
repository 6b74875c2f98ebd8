package proc

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// signals are the names ParseSignal reads (with or without "SIG").
var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "ILL": syscall.SIGILL,
	"TRAP": syscall.SIGTRAP, "ABRT": syscall.SIGABRT, "BUS": syscall.SIGBUS, "FPE": syscall.SIGFPE,
	"KILL": syscall.SIGKILL, "USR1": syscall.SIGUSR1, "SEGV": syscall.SIGSEGV, "USR2": syscall.SIGUSR2,
	"PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM, "TERM": syscall.SIGTERM, "CHLD": syscall.SIGCHLD,
	"CONT": syscall.SIGCONT, "STOP": syscall.SIGSTOP, "TSTP": syscall.SIGTSTP, "TTIN": syscall.SIGTTIN,
	"TTOU": syscall.SIGTTOU, "URG": syscall.SIGURG, "XCPU": syscall.SIGXCPU, "XFSZ": syscall.SIGXFSZ,
	"VTALRM": syscall.SIGVTALRM, "PROF": syscall.SIGPROF, "WINCH": syscall.SIGWINCH, "IO": syscall.SIGIO,
	"SYS": syscall.SIGSYS,
}

// ParseSignal reads a signal as kill(1) does: a name with or without SIG
// (any case: TERM, sigterm) or a number 1 to 64.
func ParseSignal(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if n, err := strconv.Atoi(t); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal number must be 1 to 64, got %d", n)
		}
		return syscall.Signal(n), nil
	}
	if sig, ok := signals[strings.TrimPrefix(t, "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q (a name such as TERM, HUP, USR1, or a number)", s)
}

// SignalName is the short name of sig (TERM), or its number.
func SignalName(sig syscall.Signal) string {
	for n, s := range signals {
		if s == sig {
			return n
		}
	}
	return strconv.Itoa(int(sig))
}
