package tunnel

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"deckhand/platform/fault"
)

// Session is one forwarded connection.
type Session struct {
	ID   string `json:"id"`
	Kind string `json:"kind" enum:"websocket,proxy" doc:"websocket: a WebSocket tunnel (the deckhand tunnel client); proxy: an upstream connection of the reverse proxy"`
	Port int    `json:"port"`
	// Target is the address dialled inside the container.
	Target    string    `json:"target"`
	Client    string    `json:"client" doc:"the client's address as this service sees it"`
	StartedAt time.Time `json:"started_at"`
	BytesIn   int64     `json:"bytes_in" doc:"bytes from the client to the port"`
	BytesOut  int64     `json:"bytes_out" doc:"bytes from the port to the client"`
}

// SessionList is the answer of GET /api/v1/tunnel/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// Tunnel is the open sessions to one target.
type Tunnel struct {
	Port     int       `json:"port"`
	Target   string    `json:"target"`
	Sessions int       `json:"sessions" doc:"open sessions to this target"`
	Kinds    []string  `json:"kinds" doc:"kinds of those sessions"`
	Since    time.Time `json:"since" doc:"start of the oldest open session"`
	BytesIn  int64     `json:"bytes_in"`
	BytesOut int64     `json:"bytes_out"`
	IDs      []string  `json:"session_ids"`
}

// TunnelList is the answer of GET /api/v1/tunnel/tunnels.
type TunnelList struct {
	Tunnels []Tunnel `json:"tunnels"`
}

// session is a live forwarded connection.
type session struct {
	Session
	in, out   atomic.Int64
	mIn, mOut prometheus.Counter
	cutFn     func(reason string)
	cutOnce   sync.Once
	closeOnce sync.Once
	doneOnce  sync.Once
	svc       *Service
}

func (ss *session) addIn(n int)  { ss.in.Add(int64(n)); ss.mIn.Add(float64(n)) }
func (ss *session) addOut(n int) { ss.out.Add(int64(n)); ss.mOut.Add(float64(n)) }

// cut ends both ends of the session.
func (ss *session) cut(reason string) {
	ss.cutOnce.Do(func() { ss.cutFn(reason) })
}

func (ss *session) snapshot() Session {
	c := ss.Session
	c.BytesIn, c.BytesOut = ss.in.Load(), ss.out.Load()
	return c
}

// open registers a session; it is refused while the service is closing.
func (s *Service) open(kind string, port int, target, client string, cut func(string)) (*session, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	ss := &session{Session: Session{ID: "tun_" + hex.EncodeToString(b[:]), Kind: kind, Port: port, Target: target,
		Client: client, StartedAt: s.deps.Clock.Now().UTC()}, cutFn: cut, svc: s}
	ss.mIn, ss.mOut = s.metrics.portCounters(port)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fault.Errorf(fault.CodeUnavailable, "the tunnel service is stopping")
	}
	s.sessions[ss.ID] = ss
	s.wg.Add(1) // done by finish, so Close waits for the session's goroutines
	s.metrics.sessionsOpen.WithLabelValues(kind).Inc()
	s.metrics.sessionsTotal.WithLabelValues(kind).Inc()
	return ss, nil
}

// release forgets a session that ended.
func (s *Service) release(ss *session) {
	ss.closeOnce.Do(func() {
		s.mu.Lock()
		delete(s.sessions, ss.ID)
		s.mu.Unlock()
		s.metrics.sessionsOpen.WithLabelValues(ss.Kind).Dec()
	})
}

// finish is the session owner's last word: the session is released and
// Close no longer waits for it.
func (s *Service) finish(ss *session) {
	s.release(ss)
	ss.doneOnce.Do(s.wg.Done)
}

// Sessions lists the open sessions, oldest first.
func (s *Service) Sessions(context.Context) SessionList {
	s.mu.Lock()
	out := make([]Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss.snapshot())
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Session) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	return SessionList{Sessions: out}
}

// Cut ends a session (both its ends) and answers its final record.
func (s *Service) Cut(_ context.Context, id string) (Session, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return Session{}, fault.NotFound("session", id)
	}
	ss.cut("session deleted")
	s.release(ss)
	return ss.snapshot(), nil
}

// Tunnels groups the open sessions by target.
func (s *Service) Tunnels(ctx context.Context) TunnelList {
	by := map[string]*Tunnel{}
	var order []string
	for _, ss := range s.Sessions(ctx).Sessions {
		t := by[ss.Target]
		if t == nil {
			t = &Tunnel{Port: ss.Port, Target: ss.Target, Since: ss.StartedAt}
			by[ss.Target] = t
			order = append(order, ss.Target)
		}
		t.Sessions++
		t.BytesIn += ss.BytesIn
		t.BytesOut += ss.BytesOut
		t.IDs = append(t.IDs, ss.ID)
		if !slices.Contains(t.Kinds, ss.Kind) {
			t.Kinds = append(t.Kinds, ss.Kind)
		}
	}
	out := make([]Tunnel, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	slices.SortFunc(out, func(a, b Tunnel) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Target, b.Target))
	})
	return TunnelList{Tunnels: out}
}
