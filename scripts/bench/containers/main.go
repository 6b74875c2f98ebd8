// Command containers-bench is the client side of scripts/bench/containers.sh:
// one keep-alive HTTP client that makes a container and waits for it the
// way a program using the API would, so that the figures are the control
// plane's and the engine's, not a shell's curl and jq processes.
//
//	containers-bench -control URL -token T create PROJECT IMAGE NAME
//	    POST /api/v1/containers, GET it every 5 ms until running, mint an
//	    access token, POST process run of `true` at its agent; prints
//	    "ID TOTAL_MS ACCEPTED_MS RUNNING_MS TOKEN_MS RUN_MS SECOND_RUN_MS"
//	    (each phase's end, in ms since the POST was sent; then how long a
//	    second process run took).
//	containers-bench -control URL -token T restart ID RUNS
//	    mints an access token, then RUNS times: POST .../restart (it answers
//	    once the agent is healthy again), then process run with that
//	    token until it answers 200; prints the ms of each run.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

var (
	control = flag.String("control", "http://127.0.0.1:27600", "the control plane's URL")
	token   = flag.String("token", "", "a user's session token")
	hc      = &http.Client{Timeout: 5 * time.Minute}
)

type record struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	StatusReason string `json:"status_reason"`
	AgentAddr    string `json:"agent_addr"`
	Token        string `json:"token"`
}

// api calls the control plane and decodes the envelope's data into out.
func api(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, *control+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	return json.Unmarshal(env.Data, out)
}

// run asks the agent at addr to run `true` with access token tok.
func run(addr, tok string) error {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/_/process/api/v1/process/run", strings.NewReader(`{"shell":"true"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("process run at %s: %d", addr, resp.StatusCode)
	}
	return nil
}

func mint(id string) (string, error) {
	var t record
	err := api(http.MethodPost, "/api/v1/containers/"+id+"/access-tokens", map[string]any{"ttl_seconds": 600}, &t)
	return t.Token, err
}

func create(project, image, name string) error {
	t0 := time.Now()
	since := func() int64 { return time.Since(t0).Milliseconds() }
	var c record
	if err := api(http.MethodPost, "/api/v1/containers", map[string]any{"project_id": project, "image_id": image, "name": name}, &c); err != nil {
		return err
	}
	accepted := since()
	for c.Status != "running" {
		if c.Status == "failed" {
			return fmt.Errorf("container %s failed: %s", c.ID, c.StatusReason)
		}
		time.Sleep(5 * time.Millisecond)
		if err := api(http.MethodGet, "/api/v1/containers/"+c.ID, nil, &c); err != nil {
			return err
		}
	}
	running := since()
	tok, err := mint(c.ID)
	if err != nil {
		return err
	}
	minted := since()
	if err := run(c.AgentAddr, tok); err != nil {
		return err
	}
	ran := since()
	// A second run, for the first's one-time share (the agent's first
	// check of an access token, its process service's first request).
	if err := run(c.AgentAddr, tok); err != nil {
		return err
	}
	again := since() - ran
	fmt.Println(c.ID, ran, accepted, running, minted, ran, again)
	return nil
}

func restart(id string, runs int) error {
	tok, err := mint(id)
	if err != nil {
		return err
	}
	var out []string
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		var c record
		if err := api(http.MethodPost, "/api/v1/containers/"+id+"/restart", nil, &c); err != nil {
			return err
		}
		for run(c.AgentAddr, tok) != nil {
			if time.Since(t0) > 5*time.Minute {
				return fmt.Errorf("container %s never answered after its restart", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
		out = append(out, fmt.Sprint(time.Since(t0).Milliseconds()))
	}
	fmt.Println(strings.Join(out, " "))
	return nil
}

func main() {
	flag.Parse()
	a := flag.Args()
	var err error
	switch {
	case len(a) == 4 && a[0] == "create":
		err = create(a[1], a[2], a[3])
	case len(a) == 3 && a[0] == "restart":
		var n int
		if _, err = fmt.Sscan(a[2], &n); err == nil {
			err = restart(a[1], n)
		}
	default:
		err = fmt.Errorf("usage: containers-bench -control URL -token T create PROJECT IMAGE NAME | restart ID RUNS")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "containers-bench:", err)
		os.Exit(1)
	}
}
