// Command process-bench measures the process service side by side with its
// limits and with ssh, in one run (scripts/bench/process.sh):
//
//   - `run` of /bin/true through the gateway (POST /_/process/api/v1/process/run
//     on a keep-alive connection), against fork/exec of /bin/true in Go (the
//     limit) and `ssh localhost true` to a private loopback sshd: p50 and p99
//     of each, rounds interleaved, medians of the rounds;
//   - following the output of `cat FILE` (-size MiB of random bytes, in the
//     page cache): start through the gateway, then the WebSocket with binary
//     frames through the gateway to the end event, bytes discarded; and
//     `deckhand exec -- cat FILE >/dev/null` (the CLI, the same path plus its
//     writes); against `cat FILE | cat >/dev/null` (a plain pipe, the limit:
//     run as the scheduler places it and with both cats on one CPU, the
//     faster of the two counting) and `ssh localhost cat FILE >/dev/null`. MB/s = 10^6 bytes per second,
//     first byte asked for to last byte received;
//   - the same CLI run through a TCP proxy that cuts its connections three
//     times, its output hashed against the file's.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	api "github.com/deckhand-dev/deckhand/sdk/go/api/process"

	"deckhand/scripts/bench/benchssh"
)

func main() {
	bin := flag.String("bin", "", "the deckhand binary")
	sizeMiB := flag.Int("size", 1024, "MiB of output to follow")
	runs := flag.Int("runs", 400, "run calls per round (fork/exec too)")
	sshRuns := flag.Int("ssh-runs", 40, "ssh true calls per round")
	rounds := flag.Int("rounds", 3, "rounds (medians over them)")
	noSSH := flag.Bool("no-ssh", false, "skip the ssh comparisons")
	drops := flag.Bool("drops", true, "also follow through a proxy that cuts the connection three times")
	before := flag.String("before", "", "another deckhand binary (an earlier build) to follow through as well, in the same rounds")
	noRun := flag.Bool("no-run", false, "skip the run latency part")
	flag.Parse()
	if *bin == "" {
		fail("-bin is required")
	}
	dir, err := os.MkdirTemp("", "process-bench-")
	check(err)
	defer os.RemoveAll(dir)

	gw := startAgent(*bin, dir)
	defer gw.stop()
	var ssh *benchssh.Server
	if !*noSSH {
		ssh, err = benchssh.Start(dir)
		check(err)
		defer ssh.Close()
	}
	file := filepath.Join(dir, "data")
	size := int64(*sizeMiB) << 20
	sum := writeRandom(file, size)
	c := gateway("http://" + gw.addr)
	direct := service("http://" + gw.service)
	var old *agentProc
	if *before != "" {
		old = startAgent(*before, filepath.Join(dir, "before"))
		defer old.stop()
	}

	if !*noRun {
		runLatency(gw, ssh, *runs, *sshRuns, *rounds)
	}
	fmt.Printf("\n== following cat of %d MiB: MB/s, %d rounds, medians; CPU seconds per GiB (utime+stime) of the agent with its cat, of the client and of the other processes the path starts\n", *sizeMiB, *rounds)
	paths := []string{"pipe: cat FILE | cat >/dev/null", "deckhand: start + WebSocket (binary) through the gateway",
		"deckhand: the same straight to the service", "deckhand exec -- cat FILE >/dev/null", "ssh localhost cat FILE >/dev/null",
		"before (-before): WebSocket through the gateway", "before: straight to the service",
		"pipe, both cats on one CPU: taskset -c 0 sh -c 'cat FILE | cat >/dev/null'"}
	// Where the scheduler puts the pipe's two cats decides its speed: on
	// one CPU a pipe hand-off stays in that CPU's cache, across two every
	// page crosses (about 3x slower on this kind of machine). The limit is
	// the faster of the two placements.
	taskset, _ := exec.LookPath("taskset")
	tput := map[string][]float64{}
	cpu := map[string][][3]float64{}
	measure := func(name string, fn func() time.Duration) {
		a := gw
		if strings.HasPrefix(name, "before") {
			a = old
		}
		before := usage(a.cmd.Process.Pid)
		took := fn()
		after := usage(a.cmd.Process.Pid)
		tput[name] = append(tput[name], mbps(size, took))
		gib := float64(size) / (1 << 30)
		cpu[name] = append(cpu[name], [3]float64{(after.agent - before.agent) / gib, (after.self - before.self) / gib, (after.children - before.children) / gib})
	}
	for r := 0; r < *rounds; r++ {
		measure(paths[0], func() time.Duration { return timeCmd(exec.Command("sh", "-c", "cat '"+file+"' | cat >/dev/null")) })
		if taskset != "" {
			measure(paths[7], func() time.Duration {
				return timeCmd(exec.Command(taskset, "-c", "0", "sh", "-c", "cat '"+file+"' | cat >/dev/null"))
			})
		}
		measure(paths[1], func() time.Duration { return follow(c, file, size) })
		measure(paths[2], func() time.Duration { return follow(direct, file, size) })
		measure(paths[3], func() time.Duration {
			return timeCmd(exec.Command(*bin, "exec", "--agent", "http://"+gw.addr, "--", "cat", file))
		})
		if ssh != nil {
			measure(paths[4], func() time.Duration { return timeCmd(ssh.Command("cat", file)) })
		}
		if old != nil {
			measure(paths[5], func() time.Duration {
				return follow(gateway("http://"+old.addr), file, size)
			})
			measure(paths[6], func() time.Duration { return follow(service("http://"+old.service), file, size) })
		}
	}
	fmt.Println("| what | MB/s | agent CPU s/GiB | client CPU s/GiB | other CPU s/GiB |\n|---|---|---|---|---|")
	for _, k := range paths {
		if v := tput[k]; len(v) > 0 {
			var a, b, o []float64
			for _, x := range cpu[k] {
				a, b, o = append(a, x[0]), append(b, x[1]), append(o, x[2])
			}
			fmt.Printf("| %s | %.0f | %.2f | %.2f | %.2f |\n", k, median(v), median(a), median(b), median(o))
		}
	}
	pipe := median(tput[paths[0]])
	if v := tput[paths[7]]; len(v) > 0 {
		pipe = max(pipe, median(v))
	}
	fmt.Printf("limit: the faster pipe, %.0f MB/s\n", pipe)
	fmt.Printf("deckhand WebSocket / pipe = %.2f; straight / pipe = %.2f; deckhand exec / pipe = %.2f\n",
		median(tput[paths[1]])/pipe, median(tput[paths[2]])/pipe, median(tput[paths[3]])/pipe)
	if old != nil {
		fmt.Printf("before WebSocket / pipe = %.2f; deckhand / before = %.2f\n", median(tput[paths[5]])/pipe, median(tput[paths[1]])/median(tput[paths[5]]))
	}

	if *drops {
		fmt.Printf("\n== deckhand exec -- cat FILE (%d MiB) through a proxy that cuts it at 1/4, 1/2 and 3/4\n", *sizeMiB)
		cut := newCutter(gw.addr, size/4, size/2, size*3/4)
		h := sha256.New()
		cli := exec.Command(*bin, "exec", "--agent", "http://"+cut.addr(), "--", "cat", file)
		var stderr bytes.Buffer
		cli.Stdout, cli.Stderr = h, &stderr
		start := time.Now()
		err := cli.Run()
		took := time.Since(start)
		got := hex.EncodeToString(h.Sum(nil))
		fmt.Printf("exit %v, %d cuts, %.0f MB/s, sha256 %s (file %s): %s\n", err, cut.cuts.Load(), mbps(size, took), got[:16], sum[:16],
			map[bool]string{true: "identical", false: "DIFFERENT"}[got == sum])
		if stderr.Len() > 0 {
			fmt.Printf("stderr: %s\n", stderr.String())
		}
	}
}

// runLatency times run of /bin/true through the gateway against fork/exec
// and ssh.
func runLatency(gw *agentProc, ssh *benchssh.Server, runs, sshRuns, rounds int) {
	fmt.Printf("== run of /bin/true: %d calls per round (ssh %d), %d rounds; p50 / p99 in ms, medians of the rounds\n", runs, sshRuns, rounds)
	lat := map[string][][2]float64{}
	httpc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	for r := 0; r < rounds; r++ {
		lat["gateway run"] = append(lat["gateway run"], pcts(timeN(runs, func() error { return runTrue(httpc, gw.addr) })))
		lat["fork/exec in Go"] = append(lat["fork/exec in Go"], pcts(timeN(runs, func() error { return exec.Command("/bin/true").Run() })))
		if ssh != nil {
			lat["ssh localhost true"] = append(lat["ssh localhost true"], pcts(timeN(sshRuns, func() error { return ssh.Command("true").Run() })))
		}
	}
	fmt.Println("| what | p50 ms | p99 ms |\n|---|---|---|")
	for _, k := range []string{"gateway run", "fork/exec in Go", "ssh localhost true"} {
		if v := lat[k]; len(v) > 0 {
			p50, p99 := medianPair(v)
			fmt.Printf("| %s | %.2f | %.2f |\n", k, p50, p99)
		}
	}
	if ssh != nil {
		g, _ := medianPair(lat["gateway run"])
		s, _ := medianPair(lat["ssh localhost true"])
		fmt.Printf("gateway run p50 is %.1fx faster than ssh\n", s/g)
	}
}

type agentProc struct {
	addr    string // the gateway
	service string // the process service itself
	cmd     *exec.Cmd
}

func startAgent(bin, dir string) *agentProc {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// A port base whose +15 is free too: try a few.
	for try := 0; try < 20; try++ {
		base := 20000 + (port+try*97)%20000
		addr := "127.0.0.1:" + strconv.Itoa(base)
		cmd := exec.Command(bin, "run", "--data", filepath.Join(dir, "agent"), "--listen", addr, "--port-base", strconv.Itoa(base),
			"--services", "process", "--log-level", "error")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		check(cmd.Start())
		for i := 0; i < 300; i++ {
			if resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(base+15) + "/health"); err == nil {
				resp.Body.Close()
				return &agentProc{addr: addr, service: "127.0.0.1:" + strconv.Itoa(base+15), cmd: cmd}
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	fail("the agent did not start")
	return nil
}

func (a *agentProc) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	_ = a.cmd.Wait()
}

func runTrue(c *http.Client, gw string) error {
	resp, err := c.Post("http://"+gw+"/_/process/api/v1/process/run", "application/json", bytes.NewReader([]byte(`{"cmd":["/bin/true"]}`)))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("run: %d", resp.StatusCode)
	}
	return nil
}

// gateway and service are the Go SDK's handles of the agent's gateway
// and of its process service straight.
func gateway(u string) *deckhand.Container {
	c, err := deckhand.NewContainer(u, deckhand.Options{})
	check(err)
	return c
}

func service(u string) *deckhand.Container {
	c, err := deckhand.NewService("process", u, deckhand.Options{})
	check(err)
	return c
}

func follow(c *deckhand.Container, file string, size int64) time.Duration {
	ctx := context.Background()
	start := time.Now()
	hold := true
	p, err := c.Start(ctx, api.StartInput{Cmd: &[]string{"cat", file}, HoldOutput: &hold})
	check(err)
	var n int64
	end, err := c.Stream(ctx, p.Id, deckhand.StreamOptions{Binary: true}, func(o deckhand.Output) error { n += int64(len(o.Data)); return nil })
	check(err)
	took := time.Since(start)
	if n != size || end.State != api.ProcessStateExited {
		fail(fmt.Sprintf("followed %d of %d bytes, %s", n, size, end.State))
	}
	return took
}

// timeCmd runs cmd with its output into /dev/null itself (an io.Writer
// would add a pipe and a copy in this process).
func timeCmd(cmd *exec.Cmd) time.Duration {
	if cmd.Stdout == nil {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		check(err)
		defer null.Close()
		cmd.Stdout = null
	}
	start := time.Now()
	check(cmd.Run())
	return time.Since(start)
}

func timeN(n int, fn func() error) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		check(fn())
		out = append(out, time.Since(start))
	}
	return out
}

func pcts(d []time.Duration) [2]float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))]) / 1e6 }
	return [2]float64{at(0.5), at(0.99)}
}

func medianPair(v [][2]float64) (float64, float64) {
	a, b := make([]float64, len(v)), make([]float64, len(v))
	for i, p := range v {
		a[i], b[i] = p[0], p[1]
	}
	return median(a), median(b)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// cpuUse is CPU seconds: the agent's with its reaped children (its
// processes' cat), this program's own (the in-process client) and its
// reaped children's (the pipe's, the CLI's, ssh's).
type cpuUse struct{ agent, self, children float64 }

func usage(agentPid int) cpuUse {
	var u cpuUse
	if raw, err := os.ReadFile("/proc/" + strconv.Itoa(agentPid) + "/stat"); err == nil {
		// Fields after the command's closing parenthesis: utime is the 14th
		// field of the line, then stime, cutime, cstime, in clock ticks.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
		for _, i := range []int{11, 12, 13, 14} {
			t, _ := strconv.ParseFloat(f[i], 64)
			u.agent += t / 100
		}
	}
	var ru syscall.Rusage
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.self = tv(ru.Utime) + tv(ru.Stime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		u.children = tv(ru.Utime) + tv(ru.Stime)
	}
	return u
}

func mbps(size int64, d time.Duration) float64 { return float64(size) / d.Seconds() / 1e6 }

func writeRandom(path string, size int64) string {
	f, err := os.Create(path)
	check(err)
	h := sha256.New()
	buf := make([]byte, 4<<20)
	for left := size; left > 0; {
		n := min(int64(len(buf)), left)
		_, _ = rand.Read(buf[:n])
		_, err := f.Write(buf[:n])
		check(err)
		h.Write(buf[:n])
		left -= n
	}
	check(f.Close())
	return hex.EncodeToString(h.Sum(nil))
}

// cutter is a TCP proxy that cuts every connection each time the bytes it
// passed towards the client cross the next mark.
type cutter struct {
	ln     net.Listener
	target string
	marks  []int64
	passed atomic.Int64
	cuts   atomic.Int32
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func newCutter(target string, marks ...int64) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	c := &cutter{ln: ln, target: target, marks: marks, conns: map[net.Conn]bool{}}
	go c.accept()
	return c
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

func (c *cutter) accept() {
	for {
		down, err := c.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", c.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		c.mu.Lock()
		c.conns[down], c.conns[up] = true, true
		c.mu.Unlock()
		go func() { _, _ = io.Copy(up, down); _ = up.Close(); _ = down.Close() }()
		go func() {
			buf := make([]byte, 256<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 {
					if _, werr := down.Write(buf[:n]); werr != nil {
						break
					}
					total := c.passed.Add(int64(n))
					if k := int(c.cuts.Load()); k < len(c.marks) && total >= c.marks[k] {
						c.cuts.Add(1)
						c.mu.Lock()
						for conn := range c.conns {
							_ = conn.Close()
							delete(c.conns, conn)
						}
						c.mu.Unlock()
						return
					}
				}
				if err != nil {
					break
				}
			}
			_ = up.Close()
			_ = down.Close()
		}()
	}
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "process-bench:", msg)
	os.Exit(1)
}
