// Command deckhand-display serves the display service on an X display. The
// agent runs it as a supervised child (it links cgo and X libraries, which
// the agent itself must not need). Without a reachable display it still
// starts: every display path answers 503 DISPLAY_UNAVAILABLE, /health says
// "unavailable", and it keeps trying to connect, so an X server started
// later (or restarted) is picked up without restarting the service.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"deckhand/display/api"
	"deckhand/display/atspi"
	"deckhand/display/x11"
	"deckhand/platform"
	"deckhand/platform/clock"
	"deckhand/platform/config"
	"deckhand/platform/contract"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "deckhand-display:", err)
		os.Exit(1)
	}
}

type options struct {
	listen   string
	set      api.Settings
	common   contract.CommonSettings
	data     string
	logLevel string
	retry    time.Duration
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
	o.set.Flags(f)
	o.common.Flags(f)
	f.StringVar(&o.data, "data", "", "the agent's data directory: the service keeps its data in <data>/display (none: no store)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&o.retry, "retry", 2*time.Second, "how often to retry connecting to the display")
	return cmd
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	log = log.With("service", "display") // ServiceDeps.Logger names its service
	deps := contract.ServiceDeps{Name: "display", Logger: log, Clock: clock.SystemClock{}, Common: o.common,
		Journal: contract.LogJournal{Logger: log}, Notifier: contract.LogNotifier{Logger: log}}
	if o.data != "" {
		dir, db, err := contract.OpenServiceData(o.data, "display")
		if err != nil {
			return err
		}
		defer db.Close()
		deps.DataDir, deps.Store = dir, db
	}
	if err := o.set.Validate(); err != nil {
		return err
	}
	svc := api.New(deps, nil)
	defer svc.Close()
	svc.LimitRecordings(o.set.RecordingsMaxTotal)
	host, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	// the first connection attempt finishes before the first request, so a
	// supervisor's first health probe already sees "ok" when X is there
	ready := make(chan struct{})
	go keepConnected(ctx, svc, o, log, ready)
	go keepAccessible(ctx, svc, o.retry, log)
	<-ready
	log.Info("display service listening", "addr", ln.Addr().String(), "display", o.set.Display)
	return platform.ServeUntil(ctx, host, ln, 10*time.Second)
}

// keepConnected gives svc a driver whenever the display answers and takes it
// away when the connection drops.
func keepConnected(ctx context.Context, svc *api.Service, o options, log *slog.Logger, ready chan<- struct{}) {
	var once sync.Once
	markReady := func() { once.Do(func() { close(ready) }) }
	defer markReady()
	if o.set.Display == "" {
		svc.SetUnavailable("no X display is configured (give --display :N or set DISPLAY)")
		log.Warn("display service has no display; serving 503 DISPLAY_UNAVAILABLE")
		return
	}
	logged := false
	drv, err := x11.Open(o.set.Display, log) // first try before serving (see run)
	for {
		if err != nil {
			svc.SetUnavailable(fmt.Sprintf("cannot reach X display %s (is the X server running?)", o.set.Display))
			markReady()
			if !logged {
				log.Warn("display unavailable; will keep retrying", "display", o.set.Display, "err", err)
				logged = true
			}
		} else {
			log.Info("display connected", "display", o.set.Display)
			logged = false
			svc.SetDriver(drv)
			markReady()
			select {
			case <-drv.Done():
				svc.SetUnavailable(fmt.Sprintf("lost the X display %s", o.set.Display))
				log.Warn("display connection lost", "display", o.set.Display)
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
		drv, err = x11.Open(o.set.Display, log)
	}
}

// keepAccessible gives svc the accessibility bus whenever it can be reached
// (the session bus starts at-spi-bus-launcher on demand) and takes it away
// when the connection drops.
func keepAccessible(ctx context.Context, svc *api.Service, retry time.Duration, log *slog.Logger) {
	logged := false
	for {
		addr, err := atspi.Address(ctx)
		var bus *atspi.Bus
		if err == nil {
			bus, err = atspi.Connect(ctx, addr)
		}
		if err != nil {
			if !logged {
				log.Warn("accessibility bus unavailable; will keep retrying", "err", err)
				logged = true
			}
		} else {
			log.Info("accessibility bus connected", "addr", addr)
			logged = false
			svc.SetAccessibility(bus)
			select {
			case <-bus.Done():
				svc.SetAccessibility(nil)
				log.Warn("accessibility bus connection lost")
				bus.Close()
			case <-ctx.Done():
				return // svc.Close closes it
			}
		}
		select {
		case <-time.After(max(retry, 5*time.Second)):
		case <-ctx.Done():
			return
		}
	}
}
