package deckhand_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// sdkEnv is what the Python and TypeScript tests read: the binaries'
// URLs, the bootstrap admin (to make their own users) and an example
// user with credit for the quickstarts. Each language gets a control
// plane of its own: logins are rate-limited per IP (30 in 5 minutes).
func sdkEnv(t *testing.T, email string) []string {
	t.Helper()
	cp, err := harness.StartControl(bin, filepath.Join(t.TempDir(), "control"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if _, err := cp.User(email, "10.00"); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "DECKHAND_CONTROL_URL="+cp.URL, "DECKHAND_GATEWAY_URL="+agent.URL,
		"DECKHAND_ADMIN_EMAIL="+harness.AdminEmail, "DECKHAND_ADMIN_PASSWORD="+harness.AdminPass,
		"DECKHAND_EMAIL="+email, "DECKHAND_PASSWORD="+harness.UserPass)
	return append(env, sandboxEnv(t, "sandbox-"+email)...)
}

// sandboxEnv is what the languages' container programs read: the control
// plane that runs containers, its proxy, the agent image's alias and a
// user with one project. Nothing when there is no engine (those tests
// then skip).
func sandboxEnv(t *testing.T, email string) []string {
	t.Helper()
	if _, err := harness.DockerEngine(); err != nil {
		return nil
	}
	sb := sandboxes(t)
	project, err := sb.AddUser(email)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"DECKHAND_SANDBOX_URL=" + sb.URL, "DECKHAND_SANDBOX_PROXY=" + sb.ProxyAddr,
		"DECKHAND_SANDBOX_IMAGE=" + sb.Alias, "DECKHAND_SANDBOX_EMAIL=" + email, "DECKHAND_SANDBOX_PROJECT=" + project}
}

// python is Debian's python3 (where python3-pytest and python3-cryptography
// install), else the first python3 on PATH.
func python(t testing.TB) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(p, "-c", "import pytest, cryptography").Run(); err == nil {
			return p
		}
	}
	t.Skip("no python3 with pytest and cryptography (scripts/setup.sh installs python3-pytest and python3-cryptography)")
	return ""
}

// TestPythonSDK runs the Python SDK's contract tests and its quickstart
// against this package's control plane and agent.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository")
	}
	py := python(t)
	cmd := exec.Command(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
	cmd.Dir = filepath.Join(root, "sdk", "python")
	cmd.Env = append(sdkEnv(t, "python-example@example.com"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "passed") {
		t.Fatalf("pytest ran nothing:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestTypeScriptSDK builds the TypeScript SDK (tsc) and runs its contract
// tests and quickstart with node's test runner against this package's
// control plane and agent.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs nodejs)")
	}
	dir := filepath.Join(root, "sdk", "ts")
	tsc := filepath.Join(dir, "node_modules", ".bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Fatal("the TypeScript SDK's packages are not installed: run scripts/setup.sh (npm ci in sdk/ts)")
	}
	build := exec.Command(tsc, "-p", "tsconfig.json")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	cmd := exec.Command(node, "--experimental-websocket", "--test", "test/")
	cmd.Dir = dir
	cmd.Env = sdkEnv(t, "ts-example@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# pass") {
		t.Fatalf("node --test ran nothing:\n%s", out)
	}
	t.Logf("%s", out)
}
