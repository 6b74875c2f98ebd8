package containerse2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
)

// baseImage builds deckhand/base (scripts/image.sh: the Debian root file
// system, kept by the engine once built, and the agent under test) under
// a tag of this test's own, removed when it ends.
func baseImage(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("building deckhand/base (mmdebstrap) needs root")
	}
	for _, c := range []string{"docker", "mmdebstrap", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is missing (scripts/setup.sh installs it)", c)
		}
	}
	bin := t.TempDir()
	if err := os.Symlink(agentBin, filepath.Join(bin, "deckhand")); err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	tag := "e2e-ssh-" + hex.EncodeToString(b[:])
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "image.sh"), tag, "base")
	cmd.Env = append(os.Environ(), "BIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	ref := "deckhand/base:" + tag
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", ref).Run() })
	return ref
}

// TestSSHThroughTheTunnel: in a deckhand/base container the agent keeps an
// SSH server; a key added through the API logs in as the image's user with
// plain ssh through `deckhand tunnel --container ID --remote 22`, against
// a host key of the container's own, and stops logging in once removed.
func TestSSHThroughTheTunnel(t *testing.T) {
	ref := baseImage(t)
	f := newFixture(t)
	f.image = f.publish(ref, "0")
	home := t.TempDir()
	f.deckhand(home, controltest.GoodPW+"\n", "login", f.s.URL, "--email", "alice@example.com", "--password-stdin")
	created := time.Now().Add(-time.Second)
	id := f.create("ssh", nil)
	a := f.openAgent(id, f.await(id, "running", 90*time.Second))
	// The container made its own host key on its first start (the image
	// carries none): the file is younger than the container.
	var hostKey string
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, _, code := a.run("", "stat -c %Y /etc/ssh/ssh_host_ed25519_key.pub && cat /etc/ssh/ssh_host_ed25519_key.pub && ls /etc/ssh | grep -c '^ssh_host_'")
		if f := strings.Fields(out); code == 0 && len(f) >= 4 && f[1] == "ssh-ed25519" {
			if made, _ := strconv.ParseInt(f[0], 10, 64); made < created.Unix() || f[len(f)-1] != "2" {
				t.Fatalf("the host keys are not the container's own (made at %d, container created at %d): %s", made, created.Unix(), out)
			}
			hostKey = f[2]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no host key in /etc/ssh: %s", out)
		}
		time.Sleep(250 * time.Millisecond)
	}

	dir := t.TempDir()
	key := filepath.Join(dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "e2e", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}

	// The tunnel, as a person runs it.
	tctx, stopTunnel := context.WithCancel(context.Background())
	tun := exec.CommandContext(tctx, agentBin, "tunnel", "--container", id, "--remote", "22", "-o", "json")
	tun.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DECKHAND_CONFIG=" + filepath.Join(home, "cfg", "config.json")}
	var tunErr bytes.Buffer
	tun.Stderr = &tunErr
	stdout, _ := tun.StdoutPipe()
	if err := tun.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopTunnel(); _ = tun.Wait() })
	var rec map[string]any
	if err := json.NewDecoder(stdout).Decode(&rec); err != nil {
		t.Fatalf("tunnel -o json: %v\n%s", err, tunErr.String())
	}
	_, port, err := net.SplitHostPort(rec["listen"].(string))
	if err != nil {
		t.Fatalf("tunnel -o json: %v", rec)
	}

	known := filepath.Join(dir, "known_hosts")
	ssh := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ssh", "-F", "/dev/null", "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
			"-o", "StrictHostKeyChecking=accept-new", "-o", "UserKnownHostsFile="+known, "-o", "ConnectTimeout=20",
			"-p", port, "user@127.0.0.1", "id -un; pwd")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Without a key of the container's, no login.
	if out, err := ssh(); err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("ssh before any key was added: %v\n%s", err, out)
	}

	base := "/api/v1/containers/" + id + "/ssh-keys"
	added := data(f.must(201, "POST", base, map[string]any{"name": "e2e", "public_key": strings.TrimSpace(string(pub))}, f.alice))
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if out, err = ssh(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh with the added key: %v\n%s\ntunnel: %s", err, out, tunErr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if out != "user\n/home/user\n" {
		t.Fatalf("ssh: %q", out)
	}
	if seen, err := os.ReadFile(known); err != nil || !strings.Contains(string(seen), hostKey) {
		t.Fatalf("the host key ssh saw is not the container's %s: %s %v", hostKey, seen, err)
	}

	// Removed: the key logs in no more.
	f.must(200, "DELETE", base+"/"+added["id"].(string), nil, f.alice)
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, err = ssh()
		if err != nil && strings.Contains(out, "Permission denied") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh after the key was removed: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopTunnel()
	_ = tun.Wait()
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
}
