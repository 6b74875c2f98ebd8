package takeover

import (
	"cmp"
	"context"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/display/core"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
	"deckhand/platform/reqpolicy"
)

// NoVNCDir is where Debian's novnc package puts the web client.
var NoVNCDir = "/usr/share/novnc"

// Takeover is the human takeover's state.
type Takeover struct {
	Paused  bool       `json:"paused" required:"true" doc:"the agent asked to pause: its input is refused until DELETE takeover"`
	Reason  string     `json:"reason,omitempty" doc:"why the agent paused, for the person"`
	Since   *time.Time `json:"since,omitempty" doc:"when it paused"`
	Drivers int        `json:"drivers" required:"true" doc:"people connected with control; while there is one the agent's input is refused"`
	Viewers int        `json:"viewers" required:"true" doc:"people connected view-only"`
	URL     string     `json:"url" required:"true" doc:"the takeover page (control), under the service's path"`
	ViewURL string     `json:"view_url" required:"true" doc:"the view-only page"`
}

// PauseAgent is POST .../takeover.
type PauseAgent struct {
	Reason string `json:"reason,omitempty" maxLength:"1000" doc:"what the person should do (solve the captcha, log in ...)"`
}

// TakeoverState answers who drives and where the takeover view is.
func (s *Service) TakeoverState(context.Context) (Takeover, error) {
	t := &s.take
	t.mu.Lock()
	defer t.mu.Unlock()
	out := Takeover{Paused: t.paused, Reason: t.reason, Drivers: t.drivers, Viewers: t.viewers,
		URL: core.Prefix + "/vnc/", ViewURL: core.Prefix + "/vnc/?mode=view"}
	if t.paused {
		since := t.since
		out.Since = &since
	}
	return out, nil
}

// PauseAgent pauses the agent's input so a person can drive: until
// ResumeAgent every input route answers 409 TAKEN_OVER.
func (s *Service) PauseAgent(ctx context.Context, in PauseAgent) (Takeover, error) {
	t := &s.take
	s.desk.Lock() // what runs finishes first
	t.mu.Lock()
	if !t.paused {
		t.paused, t.since = true, s.desk.Clock.Now().UTC()
	}
	t.reason = in.Reason
	t.mu.Unlock()
	s.desk.Unlock()
	s.desk.Timeline("pause", in, nil, nil)
	return s.TakeoverState(ctx)
}

// ResumeAgent ends the pause.
func (s *Service) ResumeAgent(ctx context.Context) (Takeover, error) {
	t := &s.take
	t.mu.Lock()
	t.paused, t.reason = false, ""
	t.mu.Unlock()
	s.desk.Timeline("resume", nil, nil, nil)
	return s.TakeoverState(ctx)
}

// VNCMode selects control or view-only.
type VNCMode struct {
	Mode string `query:"mode" enum:"control,view" default:"control" doc:"control: the person drives (the agent's input waits); view: watch only, enforced by the VNC server"`
}

// Page is a static answer.
type Page struct {
	Body         []byte
	ContentType  string `header:"Content-Type"`
	CacheControl string `header:"Cache-Control"`
}

// VNCPage answers the takeover page: it opens noVNC connected to this
// service's WebSocket, in the mode asked.
func (s *Service) VNCPage(_ context.Context, in VNCMode) (Page, error) {
	if _, err := s.desk.Current(); err != nil {
		return Page{}, err
	}
	if _, err := os.Stat(filepath.Join(NoVNCDir, "vnc.html")); err != nil {
		return Page{}, fault.Errorf(fault.CodeUnavailable, "noVNC is not installed (%s)", NoVNCDir).
			WithDetails("scripts/setup.sh installs novnc and x11vnc")
	}
	view := "false"
	if in.Mode == "view" {
		view = "true"
	}
	// The page works out its own path, so it works under the gateway's
	// /_/display/ prefix and on the service's own port alike.
	html := `<!doctype html><meta charset="utf-8"><title>deckhand desktop</title>
<script>
const base = location.pathname.replace(/[^/]*$/, "");
const q = new URLSearchParams({autoconnect: "true", reconnect: "true", resize: "scale", shared: "true",
  view_only: "` + view + `", path: base.slice(1) + "websockify?mode=` + in.Mode + `"});
location.replace(base + "vnc.html?" + q.toString());
</script>`
	return Page{Body: []byte(html), ContentType: "text/html; charset=utf-8", CacheControl: "no-store"}, nil
}

// VNCFile names a file of the noVNC client.
type VNCFile struct {
	File string `path:"file" maxLength:"512" doc:"a path under the noVNC client"`
}

// VNCAsset answers one file of Debian's noVNC client.
func (s *Service) VNCAsset(_ context.Context, in VNCFile) (Page, error) {
	clean := path.Clean("/" + in.File)
	if clean == "/" || strings.Contains(clean, "\x00") {
		return Page{}, fault.NotFound("file", in.File)
	}
	b, err := os.ReadFile(filepath.Join(NoVNCDir, filepath.FromSlash(clean)))
	if err != nil {
		return Page{}, fault.NotFound("file", in.File)
	}
	ct := cmp.Or(mime.TypeByExtension(path.Ext(clean)), "application/octet-stream")
	return Page{Body: b, ContentType: ct, CacheControl: "no-cache"}, nil
}

var vncUpgrader = websocket.Upgrader{
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 64 << 10,
	Subprotocols:    []string{"binary"},
	// The host's request policy checked Host and Origin before any route
	// (reqpolicy.RequestPolicy): a cross-site page is refused there with a
	// 403 body.
	CheckOrigin: func(*http.Request) bool { return true },
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		reqpolicy.WriteHTTPErrorStatus(w, status, fault.Errorf(fault.CodeBadRequest, "WebSocket handshake: %v", reason))
	},
}

// ServeVNC is the takeover WebSocket: RFB between noVNC and the mode's
// x11vnc. A control connection first waits for the agent's running input
// to finish, then refuses the agent's input until it closes.
func (s *Service) ServeVNC(w http.ResponseWriter, r *http.Request, in VNCMode) {
	d, err := s.desk.Current()
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	srv, err := s.vncServer(d.Display(), in.Mode)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	upstream, err := net.DialTimeout("unix", srv.sock, 5*time.Second)
	if err != nil {
		reqpolicy.WriteHTTPError(w, fault.Errorf(fault.CodeUnavailable, "the VNC server does not answer: %v", err))
		return
	}
	defer upstream.Close()
	conn, err := vncUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // vncUpgrader.Error answered
	}
	defer conn.Close()
	t := &s.take
	if in.Mode == "control" {
		s.desk.Lock() // the agent's running input ends before the person's begins
		t.mu.Lock()
		t.drivers++
		t.mu.Unlock()
		s.desk.Unlock()
		s.desk.Timeline("takeover", map[string]string{"mode": in.Mode}, nil, nil)
		defer func() {
			t.mu.Lock()
			t.drivers--
			t.mu.Unlock()
			s.desk.Timeline("takeover-end", map[string]string{"mode": in.Mode}, nil, nil)
		}()
	} else {
		t.mu.Lock()
		t.viewers++
		t.mu.Unlock()
		defer func() { t.mu.Lock(); t.viewers--; t.mu.Unlock() }()
	}
	done := make(chan struct{})
	go func() { // VNC server to browser
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := upstream.Read(buf)
			if n > 0 {
				if werr := conn.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
					time.Now().Add(time.Second))
				return
			}
		}
	}()
	for { // browser to VNC server
		_, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		if _, err := upstream.Write(data); err != nil {
			break
		}
	}
	_ = upstream.Close()
	<-done
}

// vncServer answers the mode's x11vnc, started on a unix socket when
// there is none. Starts are serialized by startMu; mu (which the agent's
// input checks) is held only to read and record the servers.
func (s *Service) vncServer(display, mode string) (*vncServer, error) {
	t := &s.take
	t.startMu.Lock()
	defer t.startMu.Unlock()
	t.mu.Lock()
	srv := t.servers[mode]
	if t.dir == "" {
		dir, err := os.MkdirTemp("", "deckhand-vnc-") // 0700: only this user reaches the sockets
		if err != nil {
			t.mu.Unlock()
			return nil, fault.Internal("make the VNC socket directory", err)
		}
		t.dir, t.servers, t.spawner = dir, map[string]*vncServer{}, proc.NewSpawner()
	}
	dir, spawner := t.dir, t.spawner
	t.mu.Unlock()
	if srv != nil {
		select {
		case <-srv.done: // it exited: start another
		default:
			return srv, nil
		}
	}
	srv, err := startVNC(spawner, display, filepath.Join(dir, mode+".sock"), mode == "view")
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.servers == nil { // the service closed meanwhile
		_ = proc.KillGroup(srv.cmd.Process.Pid, syscall.SIGKILL)
		return nil, fault.Errorf(fault.CodeUnavailable, "the display service is stopping")
	}
	t.servers[mode] = srv
	return srv, nil
}

// startVNC starts x11vnc on display serving the unix socket sock and
// waits (15 s at most) until it accepts connections.
func startVNC(spawner *proc.Spawner, display, sock string, viewOnly bool) (*vncServer, error) {
	if _, err := exec.LookPath("x11vnc"); err != nil {
		return nil, fault.Errorf(fault.CodeUnavailable, "x11vnc is not installed").WithDetails("scripts/setup.sh installs it")
	}
	_ = os.Remove(sock)
	// no TCP listener at all (IPv4 port 0, IPv6 off), no password: the
	// socket's directory is the access control, the service's request
	// policy the person's
	args := []string{"-display", display, "-unixsock", sock, "-rfbport", "0", "-rfbportv6", "0", "-no6", "-noipv6",
		"-forever", "-shared", "-nopw", "-quiet", "-noxdamage", "-nossl", "-noxrecord"}
	if viewOnly {
		args = append(args, "-viewonly")
	}
	cmd := exec.Command("x11vnc", args...)
	attr, _, err := proc.Attr("")
	if err != nil {
		return nil, fault.Internal("prepare x11vnc", err)
	}
	cmd.SysProcAttr, cmd.Env = attr, proc.Env()
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := spawner.Start(cmd); err != nil {
		return nil, fault.Internal("start x11vnc", err)
	}
	srv := &vncServer{cmd: cmd, sock: sock, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(srv.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return srv, nil
		}
		select {
		case <-srv.done:
			return nil, fault.Errorf(fault.CodeUnavailable, "x11vnc exited at start on %s", display)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			proc.StopTree(cmd.Process.Pid, syscall.SIGKILL, 5*time.Second, srv.done)
			return nil, fault.Errorf(fault.CodeUnavailable, "x11vnc did not open its socket within 15 s")
		}
	}
}

// Close stops the VNC servers.
func (s *Service) Close() {
	t := &s.take
	t.mu.Lock()
	servers := t.servers
	t.servers = nil
	dir, spawner := t.dir, t.spawner
	t.dir = ""
	t.mu.Unlock()
	for _, srv := range servers {
		proc.StopTree(srv.cmd.Process.Pid, syscall.SIGTERM, 5*time.Second, srv.done)
	}
	if spawner != nil {
		spawner.Close()
	}
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
