package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/proxyperm"
)

// maxDocument bounds a document read from a file or the control plane.
const maxDocument = 4 << 20

// readFile reads and compiles --permissions-file; the stamp is the hash of
// its bytes.
func (a *Authorizer) readFile() (*state, error) {
	f, err := os.Open(a.cfg.PermissionsFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxDocument {
		return nil, fmt.Errorf("larger than %d bytes", maxDocument)
	}
	sum := sha256.Sum256(raw)
	stamp := "sha256:" + hex.EncodeToString(sum[:8])
	if cur := a.cur.Load(); cur.policy != nil && cur.etag == stamp {
		return cur, nil
	}
	d, err := proxyperm.Decode(raw)
	if err != nil {
		return nil, err
	}
	p, err := compile(d)
	if err != nil {
		return nil, err
	}
	return &state{policy: p, etag: stamp}, nil
}

// watchFile re-reads the file every Poll; a version that does not read or
// validate is refused whole and the one in force stays.
func (a *Authorizer) watchFile(ctx context.Context) {
	t := time.NewTicker(a.cfg.Poll)
	defer t.Stop()
	var lastErr string
	var lastMod time.Time
	var lastSize int64 = -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if fi, err := os.Stat(a.cfg.PermissionsFile); err == nil && fi.ModTime().Equal(lastMod) && fi.Size() == lastSize {
			continue
		} else if err == nil {
			lastMod, lastSize = fi.ModTime(), fi.Size()
		}
		st, err := a.readFile()
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				a.cfg.Journal.Record(contract.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "error",
					Message: "permissions file refused; the document in force stays",
					Fields:  map[string]any{"file": a.cfg.PermissionsFile, "error": msg}})
			}
			lastMod = time.Time{} // try again next tick
			continue
		}
		lastErr = ""
		a.apply(st, "file")
	}
}
