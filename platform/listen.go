package platform

import (
	"fmt"
	"net"
	"os"

	"github.com/coreos/go-systemd/v22/activation"
)

// Listen returns the listening socket systemd handed over (socket
// activation: LISTEN_FDS and LISTEN_PID name this process) or, without one,
// binds addr. flag names the address flag in errors. The activation
// variables are cleared so children the process starts never take the
// socket for theirs. Only the first stream socket is used; a unit passes one.
func Listen(flag, addr string) (net.Listener, error) {
	if os.Getenv("LISTEN_FDS") != "" {
		lns, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("socket activation: %w", err)
		}
		var ln net.Listener
		for _, l := range lns {
			switch {
			case l == nil:
			case ln == nil:
				ln = l
			default:
				_ = l.Close()
			}
		}
		if ln != nil {
			return ln, nil
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln, nil
}
