package containerse2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// authorizedKey is a fresh ed25519 public key in authorized_keys form.
func authorizedKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp)))
}

// TestSSHKeys: keys added through the API reach the authorized keys of the
// image's user (the agent's --run-as user) in the running container, the
// user's own lines stay, a removed key goes, each with its event; bad
// input and a viewer are refused.
func TestSSHKeys(t *testing.T) {
	f := newFixture(t)
	ref := image(t, f.host, `["/usr/local/bin/deckhand"]`, "ENV DECKHAND_RUN_AS=user")
	f.image = f.publish(ref, "0")
	id := f.create("keys", nil)
	c := f.await(id, "running", 60*time.Second)
	a := f.openAgent(id, c)
	const file = "/home/user/.ssh/authorized_keys"
	// The file as root reads it, once it satisfies ok.
	await := func(what string, ok func(string) bool) string {
		t.Helper()
		var out string
		for deadline := time.Now().Add(20 * time.Second); ; {
			out, _, _ = a.run("", "cat "+file+" 2>/dev/null")
			if ok(out) {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the authorized keys are\n%s", what, out)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	base := "/api/v1/containers/" + id + "/ssh-keys"
	k1, k2 := authorizedKey(t), authorizedKey(t)
	first := data(f.must(201, "POST", base, map[string]any{"name": "laptop", "public_key": k1 + " me@laptop"}, f.alice))
	if first["fingerprint"] == "" || first["public_key"] != k1+" laptop" || first["container_id"] != id {
		t.Fatalf("add: %v", first)
	}
	await("the first key", func(s string) bool { return strings.Contains(s, k1+" laptop") })
	// The user's own line stays beside the block.
	if _, errOut, code := a.run("user", "echo '"+k2+" own' >> "+file); code != 0 {
		t.Fatalf("the user's own line: %s", errOut)
	}
	second := data(f.must(201, "POST", base, map[string]any{"name": "ci box", "public_key": authorizedKey(t)}, f.alice))
	await("the second key", func(s string) bool {
		return strings.Contains(s, second["public_key"].(string)) && strings.Contains(s, k2+" own") && strings.Contains(s, k1)
	})
	if out, _, _ := a.run("", "stat -c '%u %a' "+file+" /home/user/.ssh"); out != "1000 600\n1000 700\n" {
		t.Fatalf("owner and mode of the file and ~/.ssh: %q", out)
	}
	list := data(f.must(200, "GET", base, nil, f.alice))
	if keys, _ := list["keys"].([]any); len(keys) != 2 {
		t.Fatalf("list: %v", list)
	}

	// Refused, naming the field; nothing written.
	for _, bad := range []struct {
		body   map[string]any
		status int
		field  string
	}{
		{map[string]any{"name": "x", "public_key": "ssh-ed25519 AAAA"}, 400, "public_key"},
		{map[string]any{"name": "x", "public_key": `command="sh" ` + k2}, 400, "public_key"},
		{map[string]any{"name": "x", "public_key": k2 + "\n" + k1}, 400, "public_key"},
		{map[string]any{"name": "", "public_key": k2}, 400, "name"},
		{map[string]any{"name": "again", "public_key": k1}, 409, "public_key"},
	} {
		r := f.must(bad.status, "POST", base, bad.body, f.alice)
		if !strings.Contains(string(r.Raw), bad.field) {
			t.Fatalf("%v: %s", bad.body, r.Raw)
		}
	}
	viewerID, viewer := f.s.User(f.admin, "vic@example.com")
	f.must(201, "POST", "/api/v1/projects/"+f.project+"/permissions", map[string]any{"user_id": viewerID, "role": "viewer"}, f.alice)
	f.must(403, "POST", base, map[string]any{"name": "v", "public_key": authorizedKey(t)}, viewer)
	f.must(403, "DELETE", base+"/"+first["id"].(string), nil, viewer)
	f.must(403, "GET", base+"/effective", nil, f.alice)

	// Removed: gone from the file; the user's line and the other key stay.
	f.must(200, "DELETE", base+"/"+first["id"].(string), nil, f.alice)
	f.must(404, "DELETE", base+"/"+first["id"].(string), nil, f.alice)
	await("the removal", func(s string) bool {
		return !strings.Contains(s, k1) && strings.Contains(s, k2+" own") && strings.Contains(s, second["public_key"].(string))
	})
	kinds := f.events(id)
	if slices.Index(kinds, "container.ssh_key.added") < 0 || slices.Index(kinds, "container.ssh_key.removed") < 0 {
		t.Fatalf("events: %v", kinds)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
}
