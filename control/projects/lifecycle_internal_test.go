package projects

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"deckhand/platform/fault"
)

// The create's rules, each naming its field.
func TestContainerCreateRules(t *testing.T) {
	ok := func() ContainerCreate {
		return ContainerCreate{ProjectID: "p1", Name: " box ", ImageID: "img_000000000000000000000000"}
	}
	in := ok()
	if err := in.Validate(); err != nil || in.Name != "box" {
		t.Fatalf("a good create: %v (name %q)", err, in.Name)
	}
	for _, tc := range []struct {
		field string
		edit  func(*ContainerCreate)
	}{
		{"project_id", func(c *ContainerCreate) { c.ProjectID = "P-1" }},
		{"name", func(c *ContainerCreate) { c.Name = "  " }},
		{"image_id", func(c *ContainerCreate) { c.ImageID = "" }},
		{"resources.cpus", func(c *ContainerCreate) { c.Resources = &Resources{CPUs: 0.05} }},
		{"resources.cpus", func(c *ContainerCreate) { c.Resources = &Resources{CPUs: 64.5} }},
		{"resources.cpus", func(c *ContainerCreate) { c.Resources = &Resources{CPUs: 0.125} }},
		{"resources.memory_mb", func(c *ContainerCreate) { c.Resources = &Resources{MemoryMB: 64} }},
		{"resources.memory_mb", func(c *ContainerCreate) { c.Resources = &Resources{MemoryMB: 1 << 20} }},
		{"env", func(c *ContainerCreate) { c.Env = map[string]string{"deckhand_token": "x"} }},
		{"env", func(c *ContainerCreate) { c.Env = map[string]string{"A-B": "x"} }},
		{"env", func(c *ContainerCreate) { c.Env = map[string]string{"A": "x\x00"} }},
	} {
		in := ok()
		tc.edit(&in)
		var fe *fault.Error
		if err := in.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want an error naming %s", in, err, tc.field)
		}
	}
	in = ok()
	in.Resources = &Resources{CPUs: 1.5, MemoryMB: 128}
	in.Env = map[string]string{"LANG": "C.UTF-8", "_X1": ""}
	if err := in.Validate(); err != nil {
		t.Fatalf("limits and env in range: %v", err)
	}
}

// The agent's arguments: the token travels as a file, the control plane's
// key is pinned, and plain http off loopback is allowed explicitly.
func TestAgentArgs(t *testing.T) {
	s := &Service{lc: newLifecycle(Runtime{ContainerDomain: "example.test"})}
	c := &Container{ID: "c1", ProjectID: "p1"}
	args := s.agentArgs(c, "http://172.18.0.1:8080")
	joined := strings.Join(args, " ")
	for _, want := range []string{"--token-file " + agentTokenPath, "--control-key " + controlKeyPath, "--container-id c1",
		"--project-id p1", "--domain example.test", "--insecure-control-url", "--listen 0.0.0.0:7700"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args %q lack %q", joined, want)
		}
	}
	if slices.Contains(s.agentArgs(c, "https://control.example.test"), "--insecure-control-url") {
		t.Error("an https control URL was marked insecure")
	}
	if slices.Contains(s.agentArgs(c, "http://127.0.0.1:8080"), "--insecure-control-url") {
		t.Error("a loopback control URL was marked insecure")
	}
	d := s.decorate(c)
	if d.URLs != nil && len(d.URLs) != 0 {
		t.Errorf("urls without services: %v", d.URLs)
	}
	s.lc.rt.Services = []string{"terminal"}
	if d := s.decorate(c); d.URLs["terminal"] != "https://p1-c1-terminal-1.local.example.test" || d.Runtime != RuntimeNone || c.URLs != nil {
		t.Errorf("decorated %+v (record %+v)", d, c)
	}
}
