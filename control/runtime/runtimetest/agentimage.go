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
	if _, err := os.Stat(Busybox); err != nil {
		t.Skipf("the agent image needs busybox-static (%s): %v", Busybox, err)
	}
	raw, err := AgentImageTar(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	cli := Client(t, host)
	ref := prefix + ":" + RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(raw), SourceName: "-"}, ref, client.ImageImportOptions{
		Changes: append([]string{"ENTRYPOINT " + entrypoint, "ENV PATH=/usr/local/bin:/bin", "LABEL " + ImageLabel + "=1"}, changes...),
	})
	if err != nil {
		t.Fatalf("import the agent image: %v", err)
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
