//go:build linux

package agent

import "testing"

func TestReplaceSSHBlock(t *testing.T) {
	t.Parallel()
	own := "ssh-ed25519 AAAAown mine\n"
	withBlock := string(replaceSSHBlock([]byte(own), []string{"ssh-ed25519 AAAAk1 laptop", "ssh-ed25519 AAAAk2 ci"}))
	want := own + sshBlockBegin + "\nssh-ed25519 AAAAk1 laptop\nssh-ed25519 AAAAk2 ci\n" + sshBlockEnd + "\n"
	if withBlock != want {
		t.Fatalf("added:\n%s\nwant:\n%s", withBlock, want)
	}
	// A line the user adds after the block stays; the block is replaced.
	again := string(replaceSSHBlock([]byte(withBlock+"ssh-rsa AAAAlater later\n"), []string{"ssh-ed25519 AAAAk2 ci"}))
	if again != own+"ssh-rsa AAAAlater later\n"+sshBlockBegin+"\nssh-ed25519 AAAAk2 ci\n"+sshBlockEnd+"\n" {
		t.Fatalf("replaced:\n%s", again)
	}
	if got := string(replaceSSHBlock([]byte(again), nil)); got != own+"ssh-rsa AAAAlater later\n" {
		t.Fatalf("emptied:\n%s", got)
	}
	if got := replaceSSHBlock(nil, nil); len(got) != 0 {
		t.Fatalf("nothing: %q", got)
	}
}
