// Package notifications owns the container's notification streams: agent
// events from the contract.Notifier seam (a program crashed, a schedule
// failed, a port opened) and desktop notifications that programs on an X
// display raise through the freedesktop Notifications D-Bus interface,
// which this service serves on the display's session bus. Both become one
// sequence of stream messages, kept (the newest --notifications-keep) in
// the service's store, read over a WebSocket that resumes from a sequence
// number, per display, and dismissed through the API.
package notifications

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/atomicfile"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// AgentDisplay is the pseudo-display agent events are listed under.
const AgentDisplay = "agent"

// Settings are the notifications service's flags.
type Settings struct {
	// Bus is the session bus to serve org.freedesktop.Notifications on;
	// empty: $DBUS_SESSION_BUS_ADDRESS; "none": no D-Bus server.
	Bus string
	// Display names the X display the bus belongs to; empty: $DISPLAY.
	Display string
	// Keep is how many stream messages are kept for resuming.
	Keep int
}

// Flags declares --notifications-bus, --notifications-display and
// --notifications-keep.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Bus, "notifications-bus", "", "D-Bus session bus address to serve org.freedesktop.Notifications on (default $DBUS_SESSION_BUS_ADDRESS; none: off)")
	fs.StringVar(&s.Display, "notifications-display", "", "X display the session bus belongs to, :N (default $DISPLAY, else :0)")
	fs.IntVar(&s.Keep, "notifications-keep", 1000, "stream messages kept for clients resuming from a sequence number")
}

// Validate checks the flags.
func (s *Settings) Validate() error {
	if s.Keep < 0 || s.Keep > 1000000 {
		return fault.Invalid("--notifications-keep", "must be 0 (default) to 1000000")
	}
	if s.Display != "" {
		if _, err := normalizeDisplay(s.Display); err != nil {
			return fault.Invalid("--notifications-display", "must be an X display such as :0, got %q", s.Display)
		}
	}
	return nil
}

// Service is the notification-streams service.
type Service struct {
	deps    contract.ServiceDeps
	log     *slog.Logger
	display string
	busAddr string
	ingest  string // the ingest key, hex

	hub  *hub
	bus  *busServer
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// New builds the service, loads the kept messages and, when a session bus
// is configured, starts serving org.freedesktop.Notifications on it. When
// deps.Notifier is a *Relay (the agent's), the relay starts delivering
// agent events here.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	deps, set, err := contract.PrepareService("notifications", deps, set)
	if err != nil {
		return nil, err
	}
	keep := cmp.Or(set.Keep, 1000)
	display := cmp.Or(set.Display, os.Getenv("DISPLAY"))
	if d, err := normalizeDisplay(display); err == nil {
		display = d
	} else {
		display = ":0"
	}
	bus := cmp.Or(set.Bus, os.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	if bus == "none" {
		bus = ""
	}
	key, err := ingestKey(deps.DataDir)
	if err != nil {
		return nil, err
	}
	h, err := newHub(deps.Store, deps.Clock, keep)
	if err != nil {
		return nil, err
	}
	s := &Service{deps: deps, log: deps.Logger, display: display, busAddr: bus, ingest: key, hub: h, stop: make(chan struct{})}
	h.onExpire = s.expired
	if bus != "" {
		s.bus = &busServer{svc: s, addr: bus, display: display}
		s.wg.Go(func() { s.bus.run(s.stop) })
	}
	if r, ok := deps.Notifier.(*Relay); ok {
		r.Attach(s)
	}
	return s, nil
}

// ingestKey reads or makes <data>/notifications/ingest.key (0600): the
// agent's relay shows it to deliver events to an isolated service.
func ingestKey(dir string) (string, error) {
	path := filepath.Join(dir, IngestKeyFile)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) == 64 {
		return strings.TrimSpace(string(b)), nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	key := hex.EncodeToString(b[:])
	if err := atomicfile.Write(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("notifications: %w", err)
	}
	return key, nil
}

// IngestKeyFile is the ingest key's file in the service's data directory.
const IngestKeyFile = "ingest.key"

// Close stops the D-Bus server, expiry timers and stream clients.
func (s *Service) Close() error {
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.hub.close()
	})
	return nil
}

// HealthStatus says why desktop notifications are not captured while a
// configured session bus is not served; the service is still ok: agent
// events and the stream work without it.
func (s *Service) HealthStatus() (string, string) {
	if s.bus != nil {
		if err := s.bus.lastError(); err != "" {
			return "ok", "desktop notifications are not captured: session bus " + s.bus.addr + ": " + err
		}
	}
	return "ok", ""
}

// Notify takes an agent event (the contract.Notifier seam). It never
// blocks on stream clients.
func (s *Service) Notify(e contract.Event) {
	if e.Time.IsZero() {
		e.Time = s.deps.Clock.Now()
	}
	n := Notification{Kind: KindEvent, Display: AgentDisplay, Source: e.Source, EventKind: e.Kind, Level: cmp.Or(e.Level, "info"),
		Title: e.Title, Body: e.Body, Data: e.Data, CreatedAt: e.Time.UTC()}
	if _, err := s.hub.add(n, 0); err != nil {
		s.log.Error("notifications: event not kept", "kind", e.Kind, "err", err)
	}
}

func normalizeDisplay(d string) (string, error) {
	d = strings.TrimSpace(d)
	if d == AgentDisplay {
		return d, nil
	}
	if d != "" && d[0] != ':' {
		d = ":" + d
	}
	if len(d) < 2 || len(d) > 12 {
		return "", errors.New("bad display")
	}
	for i, c := range d[1:] {
		if !(c >= '0' && c <= '9') && !(c == '.' && i > 0) {
			return "", errors.New("bad display")
		}
	}
	return d, nil
}

// expired is called by the hub when a desktop notification's timeout ends.
func (s *Service) expired(n Notification) {
	if s.bus != nil && n.DBusID != 0 {
		s.bus.closed(n.DBusID, closeExpired)
	}
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "notifications",
		Title:   "deckhand notification streams",
		Version: platform.Version,
		Description: "Notifications raised in the container: agent events (kind event, display \"agent\": service.crashed, " +
			"program.crashed, schedule.failed, port.opened, from every service through the agent's notifier) and desktop " +
			"notifications (kind desktop) that programs on the X display send to org.freedesktop.Notifications, which this " +
			"service serves on the session bus (--notifications-bus, default $DBUS_SESSION_BUS_ADDRESS; it takes the name " +
			"when no other notification daemon holds it, and keeps retrying every 2 s while the bus is away; /health's detail " +
			"says why meanwhile). Notify, CloseNotification, GetCapabilities (body, actions, persistence) and GetServerInformation " +
			"are served; NotificationClosed is emitted on dismissal (reason 2), expiry (1) and CloseNotification (3). " +
			"expire_timeout -1 and 0 keep a notification until it is dismissed; a positive timeout (ms) expires it. " +
			"Every new, replaced or dismissed notification is a stream message with a sequence number (seq) that only " +
			"grows; the newest --notifications-keep (default 1000) are kept in the service's store, across restarts. " +
			"GET /api/v1/notifications/stream is a WebSocket: the server sends JSON text frames, first " +
			"{\"type\":\"hello\",\"seq\":<newest>,\"oldest\":<oldest kept>}, then every message after since (query; " +
			"0 = all kept) as {\"type\":\"notification\"|\"dismissed\",\"seq\",\"time\",\"notification\"}, then live ones. A " +
			"client reconnects with since=<last seq it saw> and misses nothing that is still kept; when messages after " +
			"since are gone, a {\"type\":\"gap\",\"from\",\"to\"} frame says which. A client that falls 256 messages behind " +
			"is disconnected (close 4000) and resumes the same way; a slow client never holds up the others or the " +
			"senders. Client frames {\"type\":\"dismiss\",\"ids\":[...]} dismiss too. Displays are :N (a bare N is read " +
			"as :N) or agent. Errors are {\"code\",\"details\",\"message\"}.",
	}
}
