// Package benchssh runs a private sshd on a loopback port for benchmarks
// that compare against ssh: its own host and user keys in a directory of
// the caller's, the system's sshd and its configuration untouched. It needs
// openssh-server and openssh-client (scripts/setup.sh --bench) and root
// (sshd's privilege separation).
package benchssh

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a running sshd.
type Server struct {
	Port int
	cmd  *exec.Cmd
	key  string
	log  *bytes.Buffer
}

// Start runs sshd with its files under dir and waits until a login works.
func Start(dir string) (*Server, error) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	d := filepath.Join(dir, "ssh")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	for _, k := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(d, k)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(d, "user.pub"))
	if err := os.WriteFile(filepath.Join(d, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_ = os.MkdirAll("/run/sshd", 0o755) // the privilege separation directory sshd insists on
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o755)
	conf := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s/host\nAuthorizedKeysFile %s/authorized_keys\n"+
		"PidFile %s/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"+
		"PermitRootLogin prohibit-password\nAllowUsers %s\nSetEnv HOME=%s\n", port, d, d, d, currentUser(), home)
	cfg := filepath.Join(d, "sshd_config")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	s := &Server{Port: port, key: filepath.Join(d, "user"), log: &bytes.Buffer{}}
	s.cmd = exec.Command(sshd, "-D", "-e", "-f", cfg)
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			out, err := s.Command("echo", "ok").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "ok") {
				s.Close()
				return nil, fmt.Errorf("ssh login: %v %s %s", err, out, s.log.String())
			}
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Close()
	return nil, fmt.Errorf("sshd did not listen: %s", s.log.String())
}

// Args is the ssh command line (without the remote command) that logs in.
func (s *Server) Args() []string {
	return []string{"ssh", "-F", "/dev/null", "-p", strconv.Itoa(s.Port), "-i", s.key,
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "BatchMode=yes", currentUser() + "@127.0.0.1"}
}

// Command is `ssh ... remote...`.
func (s *Server) Command(remote ...string) *exec.Cmd {
	a := append(s.Args(), remote...)
	return exec.Command(a[0], a[1:]...)
}

// Close stops sshd.
func (s *Server) Close() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
	}
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}
