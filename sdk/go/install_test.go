package deckhand_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// fence is a fenced code block of a language.
var fence = regexp.MustCompile("(?s)```(\\w+)\n(.*?)```")

// readmeBlock is the first block of lang in section (a "## " heading) of
// the README at path.
func readmeBlock(t *testing.T, path, section, lang string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n## "+section+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, section)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	for _, m := range fence.FindAllStringSubmatch(rest, -1) {
		if m[1] == lang {
			return m[2]
		}
	}
	t.Fatalf("%s, section %q: no %s block", path, section, lang)
	return ""
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// quickstartEnv is what the READMEs' quickstarts read: the engine-backed
// control plane, a user of its own, the agent image's alias.
func quickstartEnv(t *testing.T, email string) (*harness.Sandboxes, []string) {
	t.Helper()
	sb := sandboxes(t)
	if _, err := sb.AddUser(email); err != nil {
		t.Fatal(err)
	}
	return sb, []string{"DECKHAND_URL=" + sb.URL, "DECKHAND_PROXY_ADDR=" + sb.ProxyAddr, "DECKHAND_AGENT_ROUTE=agent_addr",
		"DECKHAND_EMAIL=" + email, "DECKHAND_PASSWORD=" + harness.UserPass, "DECKHAND_IMAGE=" + sb.Alias}
}

// noContainersLeft checks that the quickstart deleted what it made.
func noContainersLeft(t *testing.T, sb *harness.Sandboxes, email string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := deckhand.New(sb.URL, deckhand.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Login(ctx, email, harness.UserPass); err != nil {
		t.Fatal(err)
	}
	if left, err := c.Containers.List(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("the quickstart left containers: %v %+v", err, left)
	}
}

// TestReadmeQuickstartRunsAsWritten makes a fresh module, installs the SDK
// with the README's commands (the checkout by replace), builds the
// README's quickstart and runs it against a real container.
func TestReadmeQuickstartRunsAsWritten(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository")
	}
	readme := filepath.Join(root, "sdk", "go", "README.md")
	install := readmeBlock(t, readme, "Install", "sh")
	program := readmeBlock(t, readme, "Quickstart", "go")
	sb, qenv := quickstartEnv(t, "readme-go@example.com")

	dir := t.TempDir()
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "DECKHAND="+root)
	runIn(t, dir, env, "go", "mod", "init", "example.com/quickstart")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(install), "\n") {
		runIn(t, dir, env, "sh", "-c", line)
	}
	runIn(t, dir, env, "go", "build", "-o", "quickstart", ".")
	out := runIn(t, dir, append(os.Environ(), qenv...), filepath.Join(dir, "quickstart"))
	for _, want := range []string{`stdout "hello\n", exit 0`, `read back "kept\n"`, "process URL: http://"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the quickstart's output lacks %q:\n%s", want, out)
		}
	}
	noContainersLeft(t, sb, "readme-go@example.com")
}
