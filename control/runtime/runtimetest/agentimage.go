package runtimetest

import (
	"archive/tar"
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
	base, err := ImageTar()
	if err != nil {
		t.Skip(err)
	}
	agent, err := os.ReadFile(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tr := tar.NewReader(bytes.NewReader(base))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "usr/local/bin/deckhand", Mode: 0o755, Size: int64(len(agent)), ModTime: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(agent); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	cli := Client(t, host)
	ref := prefix + ":" + RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{
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
