package containerse2e_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// follow reads process pid's output as Server-Sent Events from the
// agent at addr until its end event, and answers the bytes in order. It
// fails the test on a gap or a chunk whose offset is not where the last
// one ended: nothing lost, nothing repeated.
func (a *agent) follow(pid string) ([]byte, error) {
	req, _ := http.NewRequest("GET", "http://"+a.addr+"/_/process/api/v1/process/"+pid+"/output?follow=true", nil)
	req.Header.Set(probeHeader, probeKey)
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("follow: %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	var out []byte
	var event, data string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return out, fmt.Errorf("at %d: %w", len(out), err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && event != "":
			switch event {
			case "end":
				return out, nil
			case "gap":
				return out, fmt.Errorf("a gap at %d: %s", len(out), data)
			case "output":
				var c struct {
					Offset   int64  `json:"offset"`
					Data     string `json:"data"`
					Encoding string `json:"encoding"`
				}
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					return out, err
				}
				if c.Offset != int64(len(out)) {
					return out, fmt.Errorf("a chunk at offset %d after %d bytes", c.Offset, len(out))
				}
				b := []byte(c.Data)
				if c.Encoding == "base64" {
					b, _ = base64.StdEncoding.DecodeString(c.Data)
				}
				out = append(out, b...)
			}
			event, data = "", ""
		}
	}
}

// TestPauseResume: a running container pauses (its agent answers
// nothing) and resumes; a follower of a process's output across two
// pauses gets every byte once (sha256 of the stream); the platform proxy
// resumes a paused container with autostart on a request; pause and
// resume of a container in the wrong status are 409; every change
// writes its event once.
func TestPauseResume(t *testing.T) {
	proxyAddr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	f := newFixture(t, "--proxy-listen", proxyAddr, "--proxy-wake-timeout", "60s")
	id := f.create("frozen", map[string]any{"autostart": true})
	c := f.await(id, "running", 60*time.Second)
	a := f.openAgent(id, c)
	base := "/api/v1/containers/" + id

	// A process writes 300 numbered lines over about 3 s.
	const lines = 300
	status, raw := a.try("POST", "/_/process/api/v1/process", map[string]any{
		"shell": fmt.Sprintf("i=0; while [ $i -lt %d ]; do echo line-$i; i=$((i+1)); sleep 0.01; done", lines)})
	if status != 201 {
		t.Fatalf("start a process: %d %s", status, raw)
	}
	var proc struct{ ID string }
	_ = json.Unmarshal(raw, &proc)
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := a.follow(proc.ID)
		done <- result{out, err}
	}()

	var pauses, resumes []time.Duration
	for range 2 {
		time.Sleep(400 * time.Millisecond)
		start := time.Now()
		if c := data(f.must(200, "POST", base+"/pause", nil, f.alice)); c["status"] != "paused" {
			t.Fatalf("pause: %v", c)
		}
		pauses = append(pauses, time.Since(start))
		// Frozen: the agent does not answer.
		quick := &http.Client{Timeout: 300 * time.Millisecond}
		if resp, err := quick.Get("http://" + a.addr + "/_agent/health"); err == nil {
			_ = resp.Body.Close()
			t.Fatalf("a paused container's agent answered %d", resp.StatusCode)
		}
		f.must(200, "POST", base+"/pause", nil, f.alice) // idempotent
		time.Sleep(500 * time.Millisecond)
		start = time.Now()
		if c := data(f.must(200, "POST", base+"/resume", nil, f.alice)); c["status"] != "running" {
			t.Fatalf("resume: %v", c)
		}
		resumes = append(resumes, time.Since(start))
	}
	f.must(200, "POST", base+"/resume", nil, f.alice) // running: as it is
	var got result
	select {
	case got = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the follower never saw the process end")
	}
	if got.err != nil {
		t.Fatalf("the follower across two pauses: %v", got.err)
	}
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	gotSum, wantSum := sha256.Sum256(got.out), sha256.Sum256([]byte(want.String()))
	if gotSum != wantSum {
		t.Fatalf("the followed stream (%d bytes, sha256 %s) is not the process's output (%d bytes, sha256 %s)",
			len(got.out), hex.EncodeToString(gotSum[:]), want.Len(), hex.EncodeToString(wantSum[:]))
	}
	sort.Slice(pauses, func(i, j int) bool { return pauses[i] < pauses[j] })
	sort.Slice(resumes, func(i, j int) bool { return resumes[i] < resumes[j] })
	t.Logf("pause %v, resume %v (API round trips)", pauses, resumes)

	// The platform proxy wakes a paused container that has autostart.
	f.must(200, "POST", base+"/pause", nil, f.alice)
	run := c["urls"].(map[string]any)["process"].(string) + "/api/v1/process/run"
	code, out := through(t, proxyAddr, "POST", run, map[string]any{"shell": "echo awake"}, probeHeader, probeKey)
	if code != 200 || !strings.Contains(out, "awake") {
		t.Fatalf("a request through the proxy to a paused container: %d %s", code, out)
	}
	f.await(id, "running", 10*time.Second)

	// Wrong status: 409 naming it.
	f.must(200, "POST", base+"/stop", nil, f.alice)
	for _, action := range []string{"pause", "resume"} {
		r := f.s.Call("POST", base+"/"+action, nil, f.alice)
		if r.Status != 409 || !strings.Contains(string(r.Raw), "stopped") {
			t.Fatalf("%s of a stopped container: %d %s", action, r.Status, r.Raw)
		}
	}
	f.must(404, "POST", "/api/v1/containers/nosuchcontainer/pause", nil, f.alice)
	f.must(400, "POST", "/api/v1/containers/NOT-AN-ID/pause", nil, f.alice)

	kinds := f.events(id)
	var states []string
	for _, k := range kinds {
		switch k {
		case "container.running", "container.paused", "container.stopped":
			states = append(states, strings.TrimPrefix(k, "container."))
		}
	}
	if got, want := strings.Join(states, ","), "running,paused,running,paused,running,paused,running,stopped"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	f.must(200, "DELETE", base, nil, f.alice)
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after delete the engine still holds %v", got)
	}
}
