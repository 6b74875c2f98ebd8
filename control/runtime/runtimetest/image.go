package runtimetest

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GatewayPort is where the suite's image serves HTTP, standing in for the
// agent's gateway (the drivers' default gateway port).
const GatewayPort = 7700

// Busybox is the static busybox the suite's image is made of (Debian's
// busybox-static).
const Busybox = "/bin/busybox"

// Entrypoint is the suite image's entrypoint, standing in for the agent:
// busybox's httpd in the foreground. It serves nothing until Args tell it
// the port and the document root, so a driver that drops a spec's Args
// fails the suite.
var Entrypoint = []string{"/bin/busybox", "httpd", "-f"}

// Args are the arguments the suite gives its containers: the gateway port
// and the document root holding the suite's CGI script.
func Args() []string {
	return []string{"-p", strconv.Itoa(GatewayPort), "-h", "/www"}
}

// The CGI script runs the request body as a shell script, so the suite
// acts inside a container through its HTTP port alone, on any engine.
const cgiScript = `#!/bin/sh
export PATH=/bin
echo "Content-Type: text/plain"
echo
exec /bin/sh 2>&1
`

// applets get links in /bin, so scripts name them plainly.
var applets = []string{"sh", "cat", "echo", "grep", "id", "ls", "mkdir", "su", "stat", "sleep", "test", "[", "touch", "rm", "head", "sed", "awk", "tr", "wc", "printf", "env",
	"ln", "chown", "chmod", "readlink", "tar"}

// ImageTar answers the root filesystem of the suite's image as a tar
// stream for an engine's import: busybox, the CGI script, and a user
// `user` (uid 1000) whose home is /home/user, as in the real images.
func ImageTar() ([]byte, error) {
	bb, err := os.ReadFile(Busybox)
	if err != nil {
		return nil, fmt.Errorf("the suite's image needs busybox-static (%s): %w", Busybox, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	// A name ending in "/" is a directory, owned by uid; the rest are
	// root's files of data.
	entries := []struct {
		name string
		mode int64
		uid  int
		data []byte
	}{
		{"bin/", 0o755, 0, nil}, {"etc/", 0o755, 0, nil}, {"home/", 0o755, 0, nil}, {"home/user/", 0o755, 1000, nil},
		{"root/", 0o700, 0, nil}, {"run/", 0o755, 0, nil}, {"tmp/", 0o1777, 0, nil}, {"www/", 0o755, 0, nil},
		{"www/cgi-bin/", 0o755, 0, nil},
		{"bin/busybox", 0o755, 0, bb},
		{"etc/passwd", 0o644, 0, []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n")},
		{"etc/group", 0o644, 0, []byte("root:x:0:\nuser:x:1000:\n")},
		{"www/index.html", 0o644, 0, []byte("ok\n")},
		{"www/cgi-bin/sh", 0o755, 0, []byte(cgiScript)},
		{"home/user/.profile", 0o644, 0, []byte("# from the image\n")},
	}
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, Size: int64(len(e.data)), ModTime: now}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	for _, a := range applets {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: now}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ImageLabel marks the images the suite imports, so a cleanup finds them.
const ImageLabel = "deckhand.runtimetest"

// ImportImage imports the suite's image into the engine at host under a
// name of its own and removes it when the test ends. It answers the
// image reference.
func ImportImage(t testing.TB, host string) string {
	t.Helper()
	data, err := ImageTar()
	if err != nil {
		t.Fatal(err)
	}
	return importTar(t, host, data, "deckhand-runtimetest/busybox:"+RandomName(), `ENTRYPOINT ["/bin/busybox", "httpd", "-f"]`)
}

// RandomName answers a short random name part, so objects of concurrent
// test runs on one engine never collide.
func RandomName() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// AgentImageTar is ImageTar with the deckhand agent at
// /usr/local/bin/deckhand (agentBin must be static: the image has no C
// library), the root file system of an image whose entrypoint is the agent.
func AgentImageTar(agentBin string) ([]byte, error) {
	base, err := ImageTar()
	if err != nil {
		return nil, err
	}
	agent, err := os.ReadFile(agentBin)
	if err != nil {
		return nil, err
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
			return nil, err
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "usr/local/bin/deckhand", Mode: 0o755, Size: int64(len(agent)), ModTime: now}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(agent); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
