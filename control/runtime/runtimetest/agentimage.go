package runtimetest

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// AgentImage imports, under prefix (a repository name such as
// "deckhand-consolee2e/agent"), an image of the suite's userland (busybox,
// the user uid 1000 with its home at /home/user) that carries the agent
// binary at /usr/local/bin/deckhand and runs entrypoint (a JSON array);
// more Dockerfile changes (ENV NAME=VALUE) when given. The image goes
// when the test ends; it answers the engine's reference. It skips the
// test without busybox-static.
func AgentImage(t testing.TB, host, prefix, agentBin, entrypoint string, changes ...string) string {
	t.Helper()
	return AgentImageAs(t, host, prefix+":"+RandomName(), agentBin, entrypoint, changes...)
}

// AgentImageAs is AgentImage under the reference ref, so that one
// catalog entry names the same image on several engines.
func AgentImageAs(t testing.TB, host, ref, agentBin, entrypoint string, changes ...string) string {
	t.Helper()
	if _, err := os.Stat(Busybox); err != nil {
		t.Skipf("the agent image needs busybox-static (%s): %v", Busybox, err)
	}
	raw, err := AgentImageTar(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	return importTar(t, host, raw, ref, append([]string{"ENTRYPOINT " + entrypoint, "ENV PATH=/usr/local/bin:/bin"}, changes...)...)
}

// importTar imports the root file system data into the engine at host as
// image ref with the Dockerfile changes (and the suite's image label), and
// removes it when the test ends. It answers ref.
func importTar(t testing.TB, host string, data []byte, ref string, changes ...string) string {
	t.Helper()
	cli := Client(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(data), SourceName: "-"}, ref, client.ImageImportOptions{
		Changes: append(changes, "LABEL "+ImageLabel+"=1"),
	})
	if err != nil {
		t.Fatalf("import image %s into %s: %v", ref, host, err)
	}
	_, _ = io.Copy(io.Discard, rc)
	_ = rc.Close()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove image %s: %v", ref, err)
		}
	})
	return ref
}
