package harness

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ImageLabel marks the images the harness imports (the server's
// runtime tests use the same label), so a cleanup finds them.
const ImageLabel = "deckhand.runtimetest"

// LabelInstallation is the label the control plane's engine driver puts
// on everything it makes.
const LabelInstallation = "deckhand.installation"

// Engine is the local Docker engine, driven through the docker CLI so
// this module needs no engine client.
type Engine struct{ Host string }

// DockerEngine answers the engine at $DOCKER_HOST or the default socket,
// or an error saying why there is none.
func DockerEngine() (*Engine, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, fmt.Errorf("no docker CLI: %w", err)
	}
	host := cmp.Or(os.Getenv("DOCKER_HOST"), "unix:///var/run/docker.sock")
	e := &Engine{Host: host}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := e.docker(ctx, nil, "version", "--format", "{{.Server.Version}}"); err != nil {
		return nil, fmt.Errorf("the engine at %s does not answer: %v: %s", host, err, out)
	}
	return e, nil
}

func (e *Engine) docker(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"--host", e.Host}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// AgentImage imports an image whose entrypoint is the deckhand agent in
// bin (static busybox for a userland, a user uid 1000 with its home at
// /home/user), labelled ImageLabel, and answers its reference; remove it
// with RemoveImage.
func (e *Engine) AgentImage(bin string) (string, error) {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", fmt.Errorf("the agent image needs busybox-static (/bin/busybox): %w", err)
	}
	agent, err := os.ReadFile(filepath.Join(bin, "deckhand"))
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := []struct {
		name string
		mode int64
		uid  int
	}{{"bin", 0o755, 0}, {"etc", 0o755, 0}, {"home", 0o755, 0}, {"home/user", 0o755, 1000}, {"root", 0o700, 0},
		{"run", 0o755, 0}, {"tmp", 0o1777, 0}, {"usr", 0o755, 0}, {"usr/local", 0o755, 0}, {"usr/local/bin", 0o755, 0}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode, Uid: d.uid, Gid: d.uid, ModTime: now}); err != nil {
			return "", err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{{"bin/busybox", 0o755, bb}, {"usr/local/bin/deckhand", 0o755, agent},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nuser:x:1000:\n")}}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: now}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	for _, a := range []string{"sh", "cat", "echo", "ls", "mkdir", "sleep", "seq", "test", "rm", "head", "wc", "printf", "env", "id", "true"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: now}); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	ref := "deckhand-sdk/agent:" + RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.docker(ctx, buf.Bytes(), "import",
		"--change", `ENTRYPOINT ["/usr/local/bin/deckhand"]`,
		"--change", "ENV PATH=/usr/local/bin:/bin",
		"--change", "LABEL "+ImageLabel+"=1", "-", ref)
	if err != nil {
		return "", fmt.Errorf("import the agent image: %v: %s", err, out)
	}
	return ref, nil
}

// RemoveImage removes an image AgentImage imported.
func (e *Engine) RemoveImage(ref string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := e.docker(ctx, nil, "image", "rm", "--force", ref); err != nil {
		return fmt.Errorf("remove image %s: %v: %s", ref, err, out)
	}
	return nil
}

// Purge removes every container, volume and network labelled with the
// installation (a control plane's id on the engine).
func (e *Engine) Purge(installation string) error {
	if installation == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := "label=" + LabelInstallation + "=" + installation
	var errs []string
	for _, kind := range []struct{ list, rm []string }{
		{[]string{"ps", "-aq", "--filter", f}, []string{"rm", "--force", "--volumes"}},
		{[]string{"volume", "ls", "-q", "--filter", f}, []string{"volume", "rm", "--force"}},
		{[]string{"network", "ls", "-q", "--filter", f}, []string{"network", "rm"}},
	} {
		out, err := e.docker(ctx, nil, kind.list...)
		if err != nil {
			errs = append(errs, out)
			continue
		}
		if ids := strings.Fields(out); len(ids) > 0 {
			if out, err := e.docker(ctx, nil, append(kind.rm, ids...)...); err != nil {
				errs = append(errs, out)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("purge installation %s: %s", installation, strings.Join(errs, "; "))
	}
	return nil
}

// InstallationOf is the installation label of the engine container the
// control plane made for container id ("" when there is none).
func (e *Engine) InstallationOf(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.docker(ctx, nil, "ps", "-a", "--filter", "label=deckhand.container="+id,
		"--format", `{{.Label "`+LabelInstallation+`"}}`)
	if err != nil {
		return ""
	}
	if f := strings.Fields(out); len(f) > 0 {
		return f[0]
	}
	return ""
}

// RandomName is a short random name part.
func RandomName() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Sandboxes is a control plane that runs containers on the engine, with
// its platform proxy, a catalog image of the agent, and a user with
// credit and a project.
type Sandboxes struct {
	*Control
	Engine    *Engine
	ProxyAddr string // the platform proxy (host:port)
	ImageRef  string // the engine's reference
	ImageID   string // the catalog's id
	Alias     string // the catalog's alias

	mu    sync.Mutex
	insts []string
}

// StartSandboxes starts it all on data; Stop undoes it.
func StartSandboxes(bin, data string) (*Sandboxes, error) {
	e, err := DockerEngine()
	if err != nil {
		return nil, err
	}
	ref, err := e.AgentImage(bin)
	if err != nil {
		return nil, err
	}
	s := &Sandboxes{Engine: e, ImageRef: ref}
	fail := func(err error) (*Sandboxes, error) { s.Stop(); return nil, err }
	s.ProxyAddr = "127.0.0.1:" + strconv.Itoa(freeBase(1))
	if s.Control, err = StartControl(bin, data, "--docker-host", e.Host, "--enroll-timeout", "60s",
		"--proxy-listen", s.ProxyAddr); err != nil {
		return fail(err)
	}
	admin, err := s.adminToken()
	if err != nil {
		return fail(err)
	}
	s.Alias = "sdk-agent-" + RandomName()
	img, err := call("POST", s.URL+"/api/v1/admin/images", admin, map[string]any{"alias": s.Alias, "image_name": ref,
		"architecture": "amd64", "os": "busybox", "price": 0})
	if err != nil {
		return fail(err)
	}
	s.ImageID, _ = img["id"].(string)
	return s, nil
}

// AddUser makes a user (password UserPass) with credit and one project,
// and answers the project's id.
func (s *Sandboxes) AddUser(email string) (string, error) {
	if _, err := s.User(email, "10.00"); err != nil {
		return "", err
	}
	tok, err := s.Login(email, UserPass)
	if err != nil {
		return "", err
	}
	p, err := call("POST", s.URL+"/api/v1/projects", tok, map[string]any{"name": "sdk"})
	if err != nil {
		return "", err
	}
	id, _ := p["id"].(string)
	return id, nil
}

// Track records the installation of container id's engine container,
// so Stop purges it even once the container is gone.
func (s *Sandboxes) Track(id string) {
	if i := s.Engine.InstallationOf(id); i != "" {
		s.mu.Lock()
		s.insts = append(s.insts, i)
		s.mu.Unlock()
	}
}

// Stop stops the control plane and removes every engine object it made
// and the image.
func (s *Sandboxes) Stop() {
	if s.Control != nil {
		s.Control.Stop()
	}
	s.mu.Lock()
	insts := append(s.insts, s.installations()...)
	s.mu.Unlock()
	seen := map[string]bool{}
	for _, i := range insts {
		if !seen[i] {
			seen[i] = true
			_ = s.Engine.Purge(i)
		}
	}
	if s.ImageRef != "" {
		_ = s.Engine.RemoveImage(s.ImageRef)
	}
}

// installations are the installation labels of every engine container
// running the harness's image.
func (s *Sandboxes) installations() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Engine.docker(ctx, nil, "ps", "-a", "--filter", "ancestor="+s.ImageRef,
		"--format", `{{.Label "`+LabelInstallation+`"}}`)
	if err != nil {
		return nil
	}
	return strings.Fields(out) // Stop purges each once
}

func (c *Control) adminToken() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin == "" {
		tok, err := c.Login(AdminEmail, AdminPass)
		if err != nil {
			return "", err
		}
		c.admin = tok
	}
	return c.admin, nil
}
