// Command deckhand-display serves the display service on an X display. The
// agent runs it as a supervised child (it links cgo and X libraries, which
// the agent itself must not need). Without a reachable display it still
// starts: every display path answers 503 DISPLAY_UNAVAILABLE, /health says
// "unavailable", and it keeps trying to connect, so an X server started
// later (or restarted) is picked up without restarting the service.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"deckhand/display/api"
	"deckhand/display/x11"
	"deckhand/platform"
	"deckhand/platform/config"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "deckhand-display:", err)
		os.Exit(1)
	}
}

type options struct {
	listen   string
	display  string
	data     string
	logLevel string
	retry    time.Duration
	domain   string
	origins  string
	// trustProxy: client address from X-Forwarded-For (--trust-proxy-headers)
	trustProxy bool
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	o := options{}
	cmd := &cobra.Command{
		Use:           "deckhand-display",
		Short:         "deckhand display service (screenshots, input, windows, clipboard on X11)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return config.ApplyEnv(cmd)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return run(ctx, o, config.Logger(stderr, o.logLevel))
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:7704", "address to serve on")
	f.StringVar(&o.display, "display", os.Getenv("DISPLAY"), "X display (:N); default $DISPLAY")
	f.StringVar(&o.data, "data", "", "data directory (unused by this service today; accepted for the agent)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.domain, "domain", "localhost", "{container_domain}: names under it are served and are allowed browser origins")
	f.BoolVar(&o.trustProxy, "trust-proxy-headers", false, "take the client address from X-Forwarded-For (only behind the platform proxy)")
	f.StringVar(&o.origins, "allowed-origins", "", "comma list of browser origins that may call the service besides its own and those under --domain")
	f.DurationVar(&o.retry, "retry", 2*time.Second, "how often to retry connecting to the display")
	return cmd
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	if o.data != "" {
		if err := os.MkdirAll(filepath.Clean(o.data), 0o700); err != nil {
			return fmt.Errorf("--data %s: %w", o.data, err)
		}
	}
	policy, err := platform.NewRequestPolicy(o.domain, platform.ParseOrigins(o.origins))
	if err != nil {
		return err
	}
	svc := api.New(platform.ServiceDeps{Name: "display", DataDir: o.data, Logger: log, Clock: platform.SystemClock{},
		Options: map[string]string{"display": o.display}}, nil)
	defer svc.Close()
	host := platform.NewHost(platform.HostConfig{
		Info: platform.Info{Name: "display", Title: "deckhand display service", Version: platform.Version,
			Description: "Screenshots, mouse, keyboard, windows, clipboard and input batches on an X11 display."},
		Logger:       log,
		HealthStatus: svc.HealthStatus,
		Policy:       policy,
		ProxyHeader:  proxyHeader(o.trustProxy),
	}, svc.Routes())
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	// the first connection attempt finishes before the first request, so a
	// supervisor's first health probe already sees "ok" when X is there
	ready := make(chan struct{})
	go keepConnected(ctx, svc, o, log, ready)
	<-ready
	errc := make(chan error, 1)
	go func() { errc <- host.Serve(ln) }()
	log.Info("display service listening", "addr", ln.Addr().String(), "display", o.display)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := host.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// keepConnected gives svc a driver whenever the display answers and takes it
// away when the connection drops.
func keepConnected(ctx context.Context, svc *api.Service, o options, log *slog.Logger, ready chan<- struct{}) {
	var once sync.Once
	markReady := func() { once.Do(func() { close(ready) }) }
	defer markReady()
	if o.display == "" {
		svc.SetUnavailable("no X display is configured (give --display :N or set DISPLAY)")
		log.Warn("display service has no display; serving 503 DISPLAY_UNAVAILABLE")
		return
	}
	logged := false
	drv, err := x11.Open(o.display, log) // first try before serving (see run)
	for {
		if err != nil {
			svc.SetUnavailable(fmt.Sprintf("cannot reach X display %s (is the X server running?)", o.display))
			markReady()
			if !logged {
				log.Warn("display unavailable; will keep retrying", "display", o.display, "err", err)
				logged = true
			}
		} else {
			log.Info("display connected", "display", o.display)
			logged = false
			svc.SetDriver(drv)
			markReady()
			select {
			case <-drv.Done():
				svc.SetUnavailable(fmt.Sprintf("lost the X display %s", o.display))
				log.Warn("display connection lost", "display", o.display)
				drv.Close()
			case <-ctx.Done():
				drv.Close() // idempotent: svc.Close may close it too
				return
			}
		}
		select {
		case <-time.After(o.retry):
		case <-ctx.Done():
			return
		}
		drv, err = x11.Open(o.display, log)
	}
}

// proxyHeader is the header the host trusts for the client address.
func proxyHeader(trust bool) string {
	if trust {
		return "X-Forwarded-For"
	}
	return ""
}
