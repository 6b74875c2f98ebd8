package files

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/webdav"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
)

// davLocks is a webdav.LockSystem with shared locks besides exclusive
// ones (x/net's memLS and its LOCK handler know only exclusive locks; the
// service answers shared LOCK requests itself and keeps both kinds here).
// Locks live in memory: a restart of the service releases them, as with
// x/net's own lock system. Time is the service's clock, not the one x/net
// passes in, so tests can move it.
type davLocks struct {
	mu      sync.Mutex
	clock   clockpkg.Clock
	byToken map[string]*davLock
}

// maxLockTimeout caps a lock's life. RFC 4918 10.7 lets the server pick a
// shorter timeout than asked for; a lock that never expires outlives the
// client that took it (a crashed client's lock would block others until
// the service restarts). Clients refresh a lock they still need.
const maxLockTimeout = time.Hour

// capTimeout bounds d (negative: Infinite) by maxLockTimeout.
func capTimeout(d time.Duration) time.Duration {
	if d < 0 || d > maxLockTimeout {
		return maxLockTimeout
	}
	return d
}

// lockTimeout reads a LOCK request's Timeout header as x/net does (the
// first of a list; none or Infinite means as long as allowed) and caps it.
func lockTimeout(h string) (time.Duration, error) {
	h, _, _ = strings.Cut(h, ",")
	h = strings.TrimSpace(h)
	if h == "" || h == "Infinite" {
		return maxLockTimeout, nil
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(h, "Second-"), 10, 32)
	if err != nil || !strings.HasPrefix(h, "Second-") {
		return 0, fault.Invalid("Timeout", "must be Infinite or Second-N (locks last at most %d seconds)", int(maxLockTimeout/time.Second))
	}
	return capTimeout(time.Duration(n) * time.Second), nil
}

func timeoutHeader(d time.Duration) string {
	return "Second-" + strconv.FormatInt(int64(d/time.Second), 10)
}

type davLock struct {
	token   string
	details webdav.LockDetails
	shared  bool
	expiry  time.Time
	held    bool
}

func newDAVLocks(clock clockpkg.Clock) *davLocks {
	return &davLocks{clock: clock, byToken: map[string]*davLock{}}
}

func cleanName(n string) string {
	return "/" + strings.Trim(n, "/")
}

// covers reports whether l applies to name.
func (l *davLock) covers(name string) bool {
	root := l.details.Root
	if name == root {
		return true
	}
	if l.details.ZeroDepth {
		return false
	}
	return root == "/" || strings.HasPrefix(name, root+"/")
}

func (ls *davLocks) expire(now time.Time) {
	for t, l := range ls.byToken {
		if !l.held && now.After(l.expiry) {
			delete(ls.byToken, t)
		}
	}
}

func (ls *davLocks) create(d webdav.LockDetails, shared bool) (string, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.clock.Now()
	ls.expire(now)
	d.Root = cleanName(d.Root)
	d.Duration = capTimeout(d.Duration)
	n := &davLock{details: d, shared: shared}
	for _, l := range ls.byToken {
		if (l.covers(d.Root) || n.covers(l.details.Root)) && !(l.shared && shared) {
			return "", webdav.ErrLocked
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	n.token = fmt.Sprintf("opaquelocktoken:%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
	n.expiry = now.Add(d.Duration)
	ls.byToken[n.token] = n
	return n.token, nil
}

func (ls *davLocks) Create(_ time.Time, d webdav.LockDetails) (string, error) {
	return ls.create(d, false)
}

func (ls *davLocks) Confirm(_ time.Time, name0, name1 string, conditions ...webdav.Condition) (func(), error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.expire(ls.clock.Now())
	find := func(name string) *davLock {
		name = cleanName(name)
		for _, c := range conditions {
			if l := ls.byToken[c.Token]; l != nil && !l.held && l.covers(name) {
				return l
			}
		}
		return nil
	}
	var held []*davLock
	for _, name := range []string{name0, name1} {
		if name == "" {
			continue
		}
		l := find(name)
		if l == nil {
			return nil, webdav.ErrConfirmationFailed
		}
		if len(held) == 0 || held[0] != l {
			l.held = true
			held = append(held, l)
		}
	}
	return func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		for _, l := range held {
			l.held = false
		}
	}, nil
}

func (ls *davLocks) Refresh(_ time.Time, token string, duration time.Duration) (webdav.LockDetails, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.clock.Now()
	ls.expire(now)
	l := ls.byToken[token]
	if l == nil {
		return webdav.LockDetails{}, webdav.ErrNoSuchLock
	}
	if l.held {
		return webdav.LockDetails{}, webdav.ErrLocked
	}
	l.details.Duration = capTimeout(duration)
	l.expiry = now.Add(l.details.Duration)
	return l.details, nil
}

func (ls *davLocks) Unlock(_ time.Time, token string) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.expire(ls.clock.Now())
	l := ls.byToken[token]
	if l == nil {
		return webdav.ErrNoSuchLock
	}
	if l.held {
		return webdav.ErrLocked
	}
	delete(ls.byToken, token)
	return nil
}

type lockInfo struct {
	XMLName xml.Name `xml:"DAV: lockinfo"`
	Scope   struct {
		Shared    *struct{} `xml:"shared"`
		Exclusive *struct{} `xml:"exclusive"`
	} `xml:"lockscope"`
	Owner struct {
		Inner string `xml:",innerxml"`
	} `xml:"owner"`
}

// sharedLockRequest reports whether a LOCK body asks for a shared lock.
func sharedLockRequest(raw []byte) (lockInfo, bool) {
	var li lockInfo
	if len(raw) == 0 || xml.Unmarshal(raw, &li) != nil {
		return li, false
	}
	return li, li.Scope.Shared != nil
}

// lockShared answers a LOCK request for a shared lock on name (r within
// the root).
func (s *Service) lockShared(name, r, href, depthHeader string, li lockInfo, timeout time.Duration) (DavAnswer, error) {
	d := webdav.LockDetails{Root: name, Duration: timeout, OwnerXML: li.Owner.Inner}
	switch depthHeader {
	case "", "infinity":
	case "0":
		d.ZeroDepth = true
	default:
		return DavAnswer{}, fault.Invalid("Depth", "must be 0 or infinity for LOCK")
	}
	token, err := s.dav.locks.create(d, true)
	if err != nil {
		return DavAnswer{}, &davCondError{cond: "no-conflicting-lock",
			err: fault.Errorf(CodeLocked, "%s is locked by a conflicting lock", name).WithDetails("path")}
	}
	status := http.StatusOK
	err = s.id.run(func() error {
		if _, err := s.root.Lstat(r); err == nil {
			return nil
		}
		f, err := s.root.OpenFile(r, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			status = http.StatusCreated
			return f.Close()
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrExist) {
		_ = s.dav.locks.Unlock(time.Now(), token)
		return DavAnswer{}, fsError(name, err)
	}
	depth := "infinity"
	if d.ZeroDepth {
		depth = "0"
	}
	answer := `<?xml version="1.0" encoding="utf-8"?>` +
		`<D:prop xmlns:D="DAV:"><D:lockdiscovery><D:activelock>` +
		`<D:locktype><D:write/></D:locktype><D:lockscope><D:shared/></D:lockscope>` +
		`<D:depth>` + depth + `</D:depth><D:owner>` + li.Owner.Inner + `</D:owner>` +
		`<D:timeout>` + timeoutHeader(timeout) + `</D:timeout>` +
		`<D:locktoken><D:href>` + token + `</D:href></D:locktoken>` +
		`<D:lockroot><D:href>` + html.EscapeString(href) + `</D:href></D:lockroot>` +
		`</D:activelock></D:lockdiscovery></D:prop>`
	return DavAnswer{Status: status, LockToken: "<" + token + ">", Timeout: timeoutHeader(timeout),
		Type: "application/xml; charset=utf-8", Length: int64(len(answer)), Body: strings.NewReader(answer)}, nil
}

// locked reports whether a live lock covers name.
func (ls *davLocks) locked(name string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.expire(ls.clock.Now())
	name = cleanName(name)
	for _, l := range ls.byToken {
		if l.covers(name) {
			return true
		}
	}
	return false
}
