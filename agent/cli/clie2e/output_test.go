package clie2e_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// status and version print through the same -o; completions are generated
// and complete -o's values and the client commands.
func TestOutputAndCompletions(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil, "files,journal")
	u := newUser(t)
	gw := strings.TrimPrefix(a.url, "http://")
	st := u.ok("", "status", "--listen", gw, "-o", "json")
	if jq(t, `[.services[].name] | join(",")`, st) != "files,journal" {
		t.Fatalf("status -o json: %s", st)
	}
	var y struct {
		Services []struct{ Name, State string }
	}
	if err := yaml.Unmarshal([]byte(u.ok("", "status", "--listen", gw, "-o", "yaml")), &y); err != nil || len(y.Services) != 2 || y.Services[0].State != "running" {
		t.Fatalf("status -o yaml: %v %+v", err, y)
	}
	if tbl := u.ok("", "status", "--listen", gw); !strings.Contains(tbl, "NAME") || !strings.Contains(tbl, "journal") {
		t.Fatalf("status table: %s", tbl)
	}
	// The old spelling still works.
	if jq(t, `.agent.listen`, u.ok("", "status", "--listen", gw, "--json")) != gw {
		t.Fatal("status --json")
	}
	if v := jq(t, `.version`, u.ok("", "version", "-o", "json")); v == "" {
		t.Fatal("version -o json has no version")
	}
	u.fails(`must be one of table, json, yaml, not "xml"`, "version", "-o", "xml")

	// tunnel tells a script where it listens on stdout, as one JSON line.
	tun := exec.Command(bin, "tunnel", "--url", a.url+"/_/tunnel", "--local", "127.0.0.1:0", "--remote", "22", "-o", "json")
	tun.Env = u.env
	stdout, err := tun.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tun.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	_ = tun.Process.Signal(os.Interrupt)
	_ = tun.Wait()
	if err != nil || jq(t, `.remote`, line) != "22" || !strings.HasPrefix(jq(t, `.listen`, line), "127.0.0.1:") || jq(t, `.open // "none"`, line) != "none" {
		t.Fatalf("tunnel -o json said %q (%v)", line, err)
	}
	// For a web app's port it says where a browser opens it: the root of
	// the local address, where root-relative links resolve.
	tun = exec.Command(bin, "tunnel", "--url", a.url+"/_/tunnel", "--local", "127.0.0.1:0", "--remote", "8000", "-o", "json")
	tun.Env = u.env
	if stdout, err = tun.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := tun.Start(); err != nil {
		t.Fatal(err)
	}
	line, err = bufio.NewReader(stdout).ReadString('\n')
	_ = tun.Process.Signal(os.Interrupt)
	_ = tun.Wait()
	if err != nil || jq(t, `.open`, line) != "http://"+jq(t, `.listen`, line)+"/" {
		t.Fatalf("tunnel -o json for a web app's port said %q (%v)", line, err)
	}

	if bash := u.ok("", "completion", "bash"); !strings.Contains(bash, "__start_deckhand") {
		t.Fatal("no bash completion")
	}
	comp := u.ok("", "__complete", "ls", "-o", "")
	for _, f := range []string{"table", "json", "yaml"} {
		if !strings.Contains(comp, f+"\n") {
			t.Fatalf("-o completes to %q", comp)
		}
	}
	if comp := u.ok("", "__complete", "wal"); !strings.Contains(comp, "wallet") {
		t.Fatalf("commands complete to %q", comp)
	}
}
