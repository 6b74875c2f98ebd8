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
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: now})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("bin", 0o755, 0) },
		func() error { return dir("etc", 0o755, 0) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/user", 0o755, 1000) },
		func() error { return dir("root", 0o700, 0) },
		func() error { return dir("run", 0o755, 0) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("www", 0o755, 0) },
		func() error { return dir("www/cgi-bin", 0o755, 0) },
		func() error { return file("bin/busybox", 0o755, bb) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nuser:x:1000:\n")) },
		func() error { return file("www/index.html", 0o644, []byte("ok\n")) },
		func() error { return file("www/cgi-bin/sh", 0o755, []byte(cgiScript)) },
		func() error { return file("home/user/.profile", 0o644, []byte("# from the image\n")) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
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
