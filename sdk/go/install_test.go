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

// copyTree copies src to dst, leaving out the names in skip.
func copyTree(t *testing.T, src, dst string, skip ...string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if d.Name() == s {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTypeScriptPackageInstallsFromItsTarball packs the SDK from a fresh
// copy of sdk/ts with the README's commands, installs the tarball in an
// empty project, runs the README's quickstart against a real container,
// and checks that CommonJS require and the shipped types work.
func TestTypeScriptPackageInstallsFromItsTarball(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs nodejs)")
	}
	readme := filepath.Join(root, "sdk", "ts", "README.md")
	install := strings.Split(strings.TrimSpace(readmeBlock(t, readme, "Install", "sh")), "\n")
	program := readmeBlock(t, readme, "Quickstart", "js")
	if len(install) != 2 {
		t.Fatalf("the README's install is %d lines, the test knows 2: pack, then install", len(install))
	}
	sb, qenv := quickstartEnv(t, "readme-ts@example.com")

	// A checkout of its own, so the pack runs as on a fresh clone.
	checkout := t.TempDir()
	copyTree(t, filepath.Join(root, "sdk", "ts"), filepath.Join(checkout, "sdk", "ts"), "node_modules", "dist")
	env := append(os.Environ(), "DECKHAND="+checkout, "npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")
	runIn(t, checkout, env, "sh", "-c", install[0])

	project := t.TempDir()
	runIn(t, project, env, "npm", "init", "-y")
	runIn(t, project, env, "sh", "-c", install[1])
	if err := os.WriteFile(filepath.Join(project, "quickstart.mjs"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runIn(t, project, append(os.Environ(), qenv...), node, "quickstart.mjs")
	for _, want := range []string{`stdout "hello\n", exit 0`, `read back "kept\n"`, "process URL: http://"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the quickstart's output lacks %q:\n%s", want, out)
		}
	}
	noContainersLeft(t, sb, "readme-ts@example.com")

	out = runIn(t, project, env, node, "-e", `const d = require("@deckhand-dev/sdk"); console.log(typeof d.DeckhandClient, typeof d.Container, d.API_VERSION)`)
	if strings.TrimSpace(out) != "function function v1" {
		t.Fatalf("require: %s", out)
	}
	check := `import { DeckhandClient, type Result, type ContainerInfo } from "@deckhand-dev/sdk";
const c = new DeckhandClient("http://127.0.0.1:1");
export async function f(): Promise<[number, string]> {
	const box = await c.containers.create("base");
	const info: ContainerInfo = await box.waitRunning();
	const r: Result = await box.process.run(["true"]);
	return [r.exitCode, info.agentAddr];
}
`
	if err := os.WriteFile(filepath.Join(project, "check.ts"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `{"compilerOptions": {"strict": true, "noEmit": true, "module": "nodenext", "moduleResolution": "nodenext",
	"target": "es2022", "lib": ["es2022", "dom"], "types": []}, "files": ["check.ts"]}`
	if err := os.WriteFile(filepath.Join(project, "tsconfig.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(checkout, "sdk", "ts", "node_modules", ".bin", "tsc")
	runIn(t, project, env, tsc, "-p", "tsconfig.json")
	// A type error is reported: the types are the package's, not any.
	bad := strings.Replace(check, "const r: Result", "const r: number", 1)
	if err := os.WriteFile(filepath.Join(project, "check.ts"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tsc, "-p", "tsconfig.json")
	cmd.Dir = project
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Result") {
		t.Fatalf("a wrong type passed the check: %v\n%s", err, out)
	}
}

// TestPythonWheelInstallsOffline builds the wheel from a fresh copy of
// sdk/python with the README's commands (no index: setuptools, wheel and
// cryptography come from the system), installs it in a new virtual
// environment and runs the README's quickstart there against a real
// container.
func TestPythonWheelInstallsOffline(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository")
	}
	py := python(t)
	readme := filepath.Join(root, "sdk", "python", "README.md")
	install := strings.Split(strings.TrimSpace(readmeBlock(t, readme, "Install", "sh")), "\n")
	program := readmeBlock(t, readme, "Quickstart", "python")
	sb, qenv := quickstartEnv(t, "readme-py@example.com")

	checkout := t.TempDir()
	copyTree(t, filepath.Join(root, "sdk", "python"), filepath.Join(checkout, "sdk", "python"), "__pycache__", "build", ".pytest_cache")
	project := t.TempDir()
	// The README's python3 is the one with setuptools and wheel.
	env := append(os.Environ(), "DECKHAND="+checkout, "PATH="+filepath.Dir(py)+":"+os.Getenv("PATH"),
		"PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1")
	for _, line := range install {
		runIn(t, project, env, "sh", "-c", line)
	}
	if err := os.WriteFile(filepath.Join(project, "quickstart.py"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	venvPy := filepath.Join(project, ".venv", "bin", "python")
	// The package comes from the wheel, not the checkout.
	where := runIn(t, project, env, venvPy, "-c", "import deckhand, os; print(os.path.dirname(deckhand.__file__))")
	if !strings.HasPrefix(strings.TrimSpace(where), filepath.Join(project, ".venv")) {
		t.Fatalf("deckhand imported from %s, not the virtual environment", where)
	}
	out := runIn(t, project, append(env, qenv...), venvPy, "quickstart.py")
	for _, want := range []string{`stdout 'hello\n', exit 0`, `read back 'kept\n'`, "process URL: http://"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the quickstart's output lacks %q:\n%s", want, out)
		}
	}
	noContainersLeft(t, sb, "readme-py@example.com")
}
