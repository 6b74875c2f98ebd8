package journal

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// maxSocketPath is what a unix socket address holds (sun_path, less NUL).
const maxSocketPath = 107

// socketPath keeps a socket path usable: a data directory too deep for a
// socket address gets a private directory under the temporary directory,
// named after it, so every process of the agent finds the same one.
func socketPath(p string) string {
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(os.TempDir(), "deckhand-"+strconv.Itoa(os.Getuid())+"-"+hex.EncodeToString(sum[:8]), "ingest.sock")
}

// ingestServer takes entries from the agent's other processes on a unix
// socket only its user can open (mode 0600 in a 0700 directory): nothing
// reachable over the network, and not through the gateway.
type ingestServer struct {
	ln  net.Listener
	srv *http.Server
}

func listenIngest(s *Service, path string) (*ingestServer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("journal ingest socket: %w", err)
	}
	// The store lock says no other journal runs on this data: a socket
	// file left here is stale.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("journal ingest socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("journal ingest socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("journal ingest socket %s: %w", path, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ingest", func(w http.ResponseWriter, r *http.Request) {
		var batch []contract.JournalEntry
		rejected := 0
		sc := bufio.NewScanner(http.MaxBytesReader(w, r.Body, 64<<20))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var e contract.JournalEntry
			if len(sc.Bytes()) == 0 {
				continue
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				rejected++
				continue
			}
			batch = append(batch, e)
		}
		if err := sc.Err(); err != nil {
			reqpolicy.WriteHTTPError(w, fault.Invalid("body", "must be JSON lines of journal entries: %v", err))
			return
		}
		_ = s.Ingest(batch)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"accepted":%d,"rejected":%d}`, len(batch), rejected)
	})
	is := &ingestServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = is.srv.Serve(ln) }()
	return is, nil
}

func (is *ingestServer) close() {
	_ = is.srv.Close()
}
