package notifications

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// IngestURLEnv names the variable the agent gives its isolated children:
// the notifications service's base URL, for their Relay.
const IngestURLEnv = "DECKHAND_NOTIFICATIONS_INGEST_URL"

// IngestKeyHeader carries the ingest key.
const IngestKeyHeader = "X-Deckhand-Ingest-Key"

const (
	relayQueue   = 1024 // events waiting for delivery; more are dropped (and logged)
	relayPending = 256  // events kept until a notifications service appears
)

// Relay is the agent's contract.Notifier. It logs every event (as
// contract.LogNotifier does) and delivers it to the notifications service:
// directly when that service runs in the same process (it Attaches
// itself), else over HTTP to the service's loopback ingest route. Notify
// never blocks: events queue (bounded) for one delivery goroutine that
// exists only while there is something to deliver.
type Relay struct {
	log contract.LogNotifier

	mu       sync.Mutex
	queue    []contract.Event
	running  bool
	target   contract.Notifier
	url      string // ingest base URL of an isolated service
	keyFile  string
	key      string
	dropped  int
	client   *http.Client
	delivers sync.WaitGroup
}

// NewRelay makes a relay that logs to logger.
func NewRelay(logger *slog.Logger) *Relay {
	return &Relay{log: contract.LogNotifier{Logger: logger}, client: &http.Client{Timeout: 2 * time.Second}}
}

// Attach makes an in-process notifications service the destination; the
// events waiting for it are delivered.
func (r *Relay) Attach(n contract.Notifier) {
	r.mu.Lock()
	r.target = n
	r.mu.Unlock()
	r.kick()
}

// Forward makes an isolated notifications service, at base URL url with
// its data directory dir (where its ingest key is), the destination. The
// URL must be a loopback address.
func (r *Relay) Forward(url, dir string) {
	r.mu.Lock()
	r.url, r.keyFile, r.key = strings.TrimSuffix(url, "/"), filepath.Join(dir, IngestKeyFile), ""
	r.mu.Unlock()
	r.kick()
}

// Notify logs e and queues it for delivery.
func (r *Relay) Notify(e contract.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r.log.Notify(e)
	r.mu.Lock()
	limit := relayQueue
	if r.target == nil && r.url == "" {
		limit = relayPending
	}
	if len(r.queue) >= limit {
		r.queue = r.queue[1:] // the oldest goes: the newest matter most
		r.dropped++
	}
	r.queue = append(r.queue, e)
	r.mu.Unlock()
	r.kick()
}

// Wait waits for the delivery goroutine to finish what is queued (for a
// clean stop and for tests).
func (r *Relay) Wait() { r.delivers.Wait() }

func (r *Relay) kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running || len(r.queue) == 0 || (r.target == nil && r.url == "") {
		return
	}
	r.running = true
	r.delivers.Go(r.deliver)
}

func (r *Relay) deliver() {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 || (r.target == nil && r.url == "") {
			r.running = false
			dropped := r.dropped
			r.dropped = 0
			r.mu.Unlock()
			if dropped > 0 {
				r.log.Logger.Warn("notifications: events dropped while the queue was full", "dropped", dropped)
			}
			return
		}
		e := r.queue[0]
		r.queue = r.queue[1:]
		target, url := r.target, r.url
		r.mu.Unlock()
		if target != nil {
			target.Notify(e)
			continue
		}
		if err := r.post(url, e); err != nil {
			r.log.Logger.Warn("notifications: event not delivered", "kind", e.Kind, "err", err)
		}
	}
}

func (r *Relay) post(url string, e contract.Event) error {
	r.mu.Lock()
	key, file := r.key, r.keyFile
	r.mu.Unlock()
	if key == "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		key = strings.TrimSpace(string(b))
		r.mu.Lock()
		r.key = key
		r.mu.Unlock()
	}
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+IngestPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IngestKeyHeader, key)
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		r.mu.Lock()
		r.key = "" // the service made a new key: read it again next time
		r.mu.Unlock()
	}
	if resp.StatusCode/100 != 2 {
		return &fault.Error{Code: fault.CodeBackend, Message: "ingest answered " + resp.Status}
	}
	return nil
}

// IngestPath is the loopback-only route the relay posts events to.
const IngestPath = "/api/v1/notifications/ingest"

// checkIngest lets only the agent's relay post events: a request the
// gateway forwarded (it always adds X-Forwarded-For) finds no such route;
// the peer must be on this machine (loopback, or the address the connection
// arrived on, for a --bind other than loopback); and the key must match,
// compared in constant time.
func (s *Service) checkIngest(peer, local net.IP, forwarded, key string) error {
	if forwarded != "" {
		return &fault.Error{Code: fault.CodeNotFound, Details: "route",
			Message: "the ingest route is not served through the gateway"}
	}
	if peer == nil || !(peer.IsLoopback() || peer.Equal(local)) {
		return fault.Errorf(fault.CodeForbidden, "the ingest route takes events from the agent on this machine only")
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.ingest)) != 1 {
		return fault.Errorf(fault.CodeUnauthorized, "%s: wrong or missing ingest key", IngestKeyHeader)
	}
	return nil
}
