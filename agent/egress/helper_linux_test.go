package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/agent/egress"
	"deckhand/platform/contract"
	"deckhand/platform/netconf"
	"deckhand/platform/platformtest/netlab"
)

// The engine runs in a child process inside the lab's container
// namespace: the test binary again, with helperEnv set, driven by JSON
// lines on stdin.
const helperEnv = "DECKHAND_EGRESS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper())
	}
	os.Exit(m.Run())
}

type helperCmd struct {
	Op  string            `json:"op"` // apply, check, close
	Doc *netconf.Document `json:"doc,omitempty"`
}

type helperReply struct {
	Error  string          `json:"error,omitempty"`
	Status *netconf.Status `json:"status,omitempty"`
}

// stderrJournal writes entries as JSON lines for the test to read.
type stderrJournal struct{ mu sync.Mutex }

func (j *stderrJournal) Record(e contract.JournalEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	b, _ := json.Marshal(e)
	fmt.Fprintf(os.Stderr, "J %s\n", b)
}

func runHelper() int {
	opt := egress.Options{Journal: &stderrJournal{}}
	if ca := os.Getenv("HELPER_CA"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		opt.ProxyTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	for _, s := range strings.Fields(os.Getenv("HELPER_EXEMPT")) {
		opt.Exempt = append(opt.Exempt, netip.MustParseAddrPort(s))
	}
	e := egress.New(opt)
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	defer e.Close()
	for in.Scan() {
		var c helperCmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			_ = out.Encode(helperReply{Error: err.Error()})
			continue
		}
		var r helperReply
		switch c.Op {
		case "apply":
			var comp *netconf.Compiled
			if c.Doc != nil {
				var err error
				if comp, err = netconf.Compile(c.Doc); err != nil {
					r.Error = err.Error()
					break
				}
			}
			if err := e.Apply(context.Background(), comp); err != nil {
				r.Error = err.Error()
			}
			st := e.Status()
			r.Status = &st
		case "check":
			st := e.Check(context.Background())
			r.Status = &st
		case "close":
			if err := e.Close(); err != nil {
				r.Error = err.Error()
			}
			_ = out.Encode(r)
			return 0
		}
		_ = out.Encode(r)
	}
	return 0
}

// engineProc is the test's end of a helper.
type engineProc struct {
	t       testing.TB
	proc    *netlab.Proc
	stdin   io.WriteCloser
	replies chan helperReply
}

// startEngine runs the helper in namespace ns; wrap, when set, is a
// command line the helper runs under (setpriv dropping a capability).
func startEngine(t testing.TB, l *netlab.Lab, ns string, wrap []string, env ...string) *engineProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := l.Exec(ns, append(wrap, exe, "-test.run=^$")...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), helperEnv + "=1", "HELPER_CA=" + l.CAFile}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	p := l.Start("egress engine", cmd, "")
	e := &engineProc{t: t, proc: p, stdin: stdin, replies: make(chan helperReply, 1)}
	go func() {
		<-p.Done()
		pw.Close()
	}()
	go func() {
		defer close(e.replies)
		dec := json.NewDecoder(pr)
		for {
			var r helperReply
			if err := dec.Decode(&r); err != nil {
				return
			}
			e.replies <- r
		}
	}()
	t.Cleanup(func() { e.stdin.Close(); p.Stop() })
	return e
}

func (e *engineProc) call(c helperCmd) helperReply {
	e.t.Helper()
	b, _ := json.Marshal(c)
	if _, err := e.stdin.Write(append(b, '\n')); err != nil {
		e.t.Fatalf("engine helper gone: %v\n%s", err, e.proc.Output())
	}
	select {
	case r, ok := <-e.replies:
		if !ok {
			e.t.Fatalf("engine helper exited:\n%s", e.proc.Output())
		}
		return r
	case <-time.After(60 * time.Second):
		e.t.Fatalf("engine helper did not answer %s:\n%s", c.Op, e.proc.Output())
	}
	return helperReply{}
}

// apply puts doc in force and fails the test on an error.
func (e *engineProc) apply(doc *netconf.Document) netconf.Status {
	e.t.Helper()
	r := e.call(helperCmd{Op: "apply", Doc: doc})
	if r.Error != "" {
		e.t.Fatalf("apply: %s\n%s", r.Error, e.proc.Output())
	}
	return *r.Status
}

func (e *engineProc) check() netconf.Status {
	e.t.Helper()
	return *e.call(helperCmd{Op: "check"}).Status
}

// journal are the helper's journal entries so far.
func (e *engineProc) journal() []contract.JournalEntry {
	var out []contract.JournalEntry
	for _, line := range strings.Split(e.proc.Output(), "\n") {
		if j, ok := strings.CutPrefix(line, "J "); ok {
			var en contract.JournalEntry
			if json.Unmarshal([]byte(j), &en) == nil {
				out = append(out, en)
			}
		}
	}
	return out
}

// stop closes the engine (rules removed) and waits for the helper.
func (e *engineProc) stop() {
	e.t.Helper()
	if r := e.call(helperCmd{Op: "close"}); r.Error != "" {
		e.t.Fatalf("close: %s", r.Error)
	}
	<-e.proc.Done()
}
