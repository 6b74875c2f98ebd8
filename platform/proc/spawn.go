package proc

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
)

// Spawner starts commands from one OS thread that lives as long as the
// Spawner. Commands get Pdeathsig (SIGKILL when the agent dies, so no
// program outlives a killed agent and runs twice after its restart), and
// Linux sends it when the *thread* that forked the child exits: Go ends a
// thread when a goroutine locked to it returns, and any thread may have
// forked earlier. Forking from one locked goroutine that never returns
// while programs run makes the signal mean "the agent died", nothing else.
type Spawner struct {
	reqs chan spawnReq
	done chan struct{}
	once sync.Once
}

type spawnReq struct {
	cmd *exec.Cmd
	res chan error
}

// NewSpawner starts the spawning thread.
func NewSpawner() *Spawner {
	s := &Spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with Close
		for {
			select {
			case r := <-s.reqs:
				r.res <- r.cmd.Start()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// Start starts cmd on the spawning thread (cmd.Start's error).
func (s *Spawner) Start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, res: make(chan error, 1)}
	select {
	case s.reqs <- r:
		return <-r.res
	case <-s.done:
		return errClosed
	}
}

// StartPiped starts cmd as Start does with its stdout and stderr each a
// pipe, and answers their read ends, stdout first. The caller reads and
// closes them; waiting for cmd never waits on a grandchild holding them.
func (s *Spawner) StartPiped(cmd *exec.Cmd) ([]*os.File, error) {
	var parents, children []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(append(parents, children...))
			return nil, err
		}
		parents, children = append(parents, r), append(children, w)
	}
	cmd.Stdout, cmd.Stderr = children[0], children[1]
	err := s.Start(cmd)
	closeAll(children)
	if err != nil {
		closeAll(parents)
		return nil, err
	}
	return parents, nil
}

// Close ends the spawning thread; children still alive then get their
// Pdeathsig, so call it after stopping them. A second Close does nothing.
func (s *Spawner) Close() { s.once.Do(func() { close(s.done) }) }
