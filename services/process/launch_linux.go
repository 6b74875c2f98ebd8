package process

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"deckhand/platform/proc"
	"deckhand/services/process/outlog"
)

const (
	// pipeSize is asked for each output pipe (F_SETPIPE_SZ): bulk output
	// then moves 1 MiB (a recycled read buffer) per read instead of 64 KiB.
	pipeSize = outlog.ReadBufSize
	// drainWait: once the main process has exited and its group is
	// killed, output still arriving is read until it pauses this long (a
	// process that left the group may hold the pipe open).
	drainWait = 2 * time.Second
	// defaultPath is searched when env has no PATH.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// lookPath finds name as execvp would, in the PATH of env (the last one:
// os/exec keeps the last of a name). A name with a slash is used as it is
// (relative to cwd).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// launch starts p; it closes p.started either way. A program that cannot
// be executed is a failed_to_start record with the OS's reason.
func (s *Service) launch(p *process, attr *syscall.SysProcAttr, env []string) {
	defer close(p.started)
	argv := p.rec.Cmd
	path, err := lookPath(argv[0], env)
	if err != nil {
		s.failStart(p, err)
		return
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: p.rec.Cwd, Env: env, SysProcAttr: attr}
	var outs []*os.File     // ours: output to read
	var children []*os.File // the child's ends, closed once it has them
	fail := func(err error) {
		for _, f := range append(outs, children...) {
			if f != p.pty {
				_ = f.Close()
			}
		}
		p.closeStdin()
		p.closePTY()
		s.failStart(p, err)
	}
	if sz := p.spec.PTY; sz != nil {
		master, tty, err := proc.OpenPTY(sz.Cols, sz.Rows)
		if err != nil {
			fail(err)
			return
		}
		p.mu.Lock()
		p.pty = master
		p.mu.Unlock()
		children = append(children, tty)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		// A session of its own with the pty as controlling terminal;
		// the session leader leads its process group too.
		attr.Setpgid, attr.Setsid, attr.Setctty, attr.Ctty = false, true, true, 0
		outs = append(outs, master)
	} else {
		for i := 0; i < 2; i++ {
			r, w, err := os.Pipe()
			if err != nil {
				fail(err)
				return
			}
			growPipe(r)
			outs, children = append(outs, r), append(children, w)
		}
		cmd.Stdout, cmd.Stderr = children[0], children[1]
		if p.keepStdin || len(p.spec.stdin) > 0 {
			r, w, err := os.Pipe()
			if err != nil {
				fail(err)
				return
			}
			p.mu.Lock()
			p.stdin = w
			p.mu.Unlock()
			children = append(children, r)
			cmd.Stdin = r
		}
	}
	if err := s.spawner.Start(cmd); err != nil {
		fail(err)
		return
	}
	for _, f := range children {
		_ = f.Close()
	}
	p.mu.Lock()
	p.rec.PID = cmd.Process.Pid
	p.rec.StdinOpen = p.stdin != nil || p.pty != nil
	rec := p.rec
	p.mu.Unlock()
	f := p.fields()
	f["cwd"], f["argv"] = rec.Cwd, rec.Cmd
	if rec.User != "" {
		f["user"] = rec.User
	}
	s.journal("info", "process "+p.id+" started: "+formatArgv(rec.Cmd), f)

	var readers sync.WaitGroup
	var draining atomic.Bool
	streams := []byte{outlog.Stdout, outlog.Stderr}
	for i, f := range outs {
		readers.Go(func() {
			p.readLoop(f, streams[i], &draining)
			if p.spec.PTY == nil {
				_ = f.Close()
			}
		})
	}
	if in := p.spec.stdin; len(in) > 0 {
		go p.writeInitialStdin(in)
	}
	go s.supervise(p, cmd, outs, &readers, &draining)
}

// growPipe asks for a larger pipe buffer; a refusal (a limit for
// unprivileged users) leaves the default.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}

// readLoop reads one output file into the log (and run's capture) until
// end of file (EIO on a pty whose last holder closed it).
func (p *process) readLoop(f *os.File, stream byte, draining *atomic.Bool) {
	var tee func(byte, []byte)
	if p.capture != nil {
		tee = p.capture.add
	}
	p.log.Fill(f, rawReader(f), stream, draining, drainWait, tee)
}

// writeInitialStdin writes the start's stdin, then closes the pipe unless
// it is to stay open. A process that never reads it leaves this blocked
// until it ends (the pipe then breaks).
func (p *process) writeInitialStdin(data []byte) {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if f := p.input(); f != nil {
		_, _ = f.Write(data)
	}
	if !p.keepStdin {
		p.closeStdin()
	}
}

// supervise waits for p's main process, stopping its tree on a timeout,
// DELETE or the service's Close, then makes the record final and waits
// for its output.
func (s *Service) supervise(p *process, cmd *exec.Cmd, outs []*os.File, readers *sync.WaitGroup, draining *atomic.Bool) {
	defer s.wg.Done()
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { waitExited(pid); close(exited) }()
	var timeout <-chan time.Time
	if p.spec.TimeoutMS > 0 {
		t := time.NewTimer(time.Duration(p.spec.TimeoutMS) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	reason := ""
	select {
	case <-exited:
	case <-timeout:
		reason = EndTimeout
		proc.StopTree(pid, syscall.SIGTERM, s.set.KillGrace, exited)
	case grace := <-p.kill:
		reason = EndKilled
		proc.StopTree(pid, syscall.SIGTERM, grace, exited)
	case <-s.ctx.Done():
		reason = EndAgentStopped
		proc.StopTree(pid, syscall.SIGTERM, s.set.KillGrace, exited)
	}
	// The leader has exited but is not reaped, so its pid (the group's
	// id) cannot be reused yet: what is left of the group ends with it.
	_ = proc.KillGroup(pid, syscall.SIGKILL)
	p.mu.Lock()
	p.exited = true
	p.mu.Unlock()
	_ = cmd.Wait()
	end := s.deps.Clock.Now()
	code, sig := proc.ExitStatus(cmd.ProcessState)
	if reason == "" {
		reason = EndExit
		if sig != "" {
			reason = EndSignal
		}
	}
	draining.Store(true)
	for _, f := range outs {
		_ = f.SetReadDeadline(time.Now().Add(drainWait))
	}
	p.closeStdin()
	p.finish(reason, code, sig, "", end)
	readers.Wait()
	s.complete(p)
}

// waitExited waits until pid has exited without reaping it (WNOWAIT):
// os/exec reaps it afterwards.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// signalGroup sends sig to p's process group while its leader has not
// been reaped (its pid cannot have been reused).
func (p *process) signalGroup(sig syscall.Signal) (sent bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited || p.rec.PID == 0 || p.rec.ended() {
		return false, nil
	}
	return true, proc.KillGroup(p.rec.PID, sig)
}

// killLeftovers SIGKILLs every process whose environment names one of
// ids in DECKHAND_PROCESS_ID: what survived of processes an agent that
// died had started (its children die with it; their children do not).
func killLeftovers(ids map[string]bool) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	killed := 0
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(raw), "\x00") {
			if v, ok := strings.CutPrefix(kv, idEnv+"="); ok && ids[v] {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
				break
			}
		}
	}
	return killed
}
