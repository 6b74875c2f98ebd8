package process_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/services/process"
)

// reader is one connection of a follower: it feeds what it receives, in
// order, to h and stops (dropping the connection without a goodbye) once
// it holds stopAt bytes in all, or at the end.
type reader func(t *testing.T, e *env, id string, since, stopAt int64, h hash.Hash) (next int64, end *process.Process, gaps int)

// smallWindow dials with a small receive buffer, as a client across a
// network has: what a dropped connection had in flight stays well within
// the quarter of the disk bound the service keeps before a follower's
// place (loopback would otherwise let several MiB sit in socket buffers).
var smallWindow = &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 256<<10) })
	}}
	return d.DialContext(ctx, network, addr)
}}

func wsReader(binaryFrames bool) reader {
	return func(t *testing.T, e *env, id string, since, stopAt int64, h hash.Hash) (int64, *process.Process, int) {
		t.Helper()
		u := "ws" + strings.TrimPrefix(e.url, "http") + "/api/v1/process/" + id + "/output?since=" + strconv.FormatInt(since, 10)
		if binaryFrames {
			u += "&binary=true"
		}
		conn, _, err := smallWindow.Dial(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		gaps := 0
		for {
			mt, raw, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("at %d: %v", since, err)
			}
			var off int64
			var data []byte
			if mt == websocket.BinaryMessage {
				off, data = int64(binary.BigEndian.Uint64(raw[1:9])), raw[9:]
			} else {
				var m struct {
					Type     string          `json:"type"`
					To       int64           `json:"to"`
					Offset   int64           `json:"offset"`
					Data     string          `json:"data"`
					Encoding string          `json:"encoding"`
					Process  process.Process `json:"process"`
				}
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				switch m.Type {
				case "end":
					return since, &m.Process, gaps
				case "gap":
					gaps++
					since = m.To
					continue
				}
				off, data = m.Offset, []byte(m.Data)
				if m.Encoding == "base64" {
					data, _ = base64.StdEncoding.DecodeString(m.Data)
				}
			}
			if off != since {
				t.Fatalf("chunk at %d, expected %d", off, since)
			}
			h.Write(data)
			since += int64(len(data))
			if since >= stopAt {
				return since, nil, gaps
			}
		}
	}
}

func sseReader(t *testing.T, e *env, id string, since, stopAt int64, h hash.Hash) (int64, *process.Process, int) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.url+"/api/v1/process/"+id+"/output?follow=true", nil)
	// Resume as EventSource does: Last-Event-ID is the offset to go on from.
	req.Header.Set("Last-Event-ID", strconv.FormatInt(since, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	gaps := 0
	var event, id2, data string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("at %d: %v", since, err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id2 = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && event != "":
			switch event {
			case "end":
				var m process.End
				_ = json.Unmarshal([]byte(data), &m)
				return since, &m.Process, gaps
			case "gap":
				var g process.Gap
				_ = json.Unmarshal([]byte(data), &g)
				gaps++
				since = g.To
			case "output":
				var c process.Chunk
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					t.Fatal(err)
				}
				b := []byte(c.Data)
				if c.Encoding == "base64" {
					b, _ = base64.StdEncoding.DecodeString(c.Data)
				}
				if c.Offset != since || id2 != strconv.FormatInt(since+int64(len(b)), 10) {
					t.Fatalf("chunk at %d id %s, expected %d", c.Offset, id2, since)
				}
				h.Write(b)
				since += int64(len(b))
				if since >= stopAt {
					return since, nil, gaps
				}
			}
			event, id2, data = "", "", ""
		}
	}
}

// writeData makes a file of size bytes: random binary, or text with
// multi-byte characters in random places.
func writeData(t *testing.T, size int, text bool) (path, sum string) {
	// Text is cut at size too: its end is then the start of a character,
	// which must arrive (as base64) when the output is complete.
	t.Helper()
	b := make([]byte, size)
	if text {
		words := []string{"héllo ", "wörld ", "€uro ", "日本語 ", "plain ", "🙂\n", "\n"}
		r := mrand.New(mrand.NewPCG(1, 2))
		b = b[:0]
		for len(b) < size {
			b = append(b, words[r.IntN(len(words))]...)
		}
		b = b[:size]
	} else {
		_, _ = rand.Read(b)
	}
	path = filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return path, hex.EncodeToString(s[:])
}

// TestFollowAcrossDisconnects: the output of cat is followed while the
// client drops its connection three times and waits before it resumes;
// the bytes received hash the same as the file (nothing lost, nothing
// twice). In the binary case the output is three times the kept window,
// and cat outruns it many times over during each wait: only the
// follower's place, held meanwhile, keeps the bytes. (The window must
// exceed twice what a dropped connection had in flight, socket buffers
// included, hence 32 MiB here.) The text cases check resuming at offsets
// and characters cut by the drops.
func TestFollowAcrossDisconnects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		size int
		text bool
		read reader
	}{
		{"websocket binary", 96 << 20, false, wsReader(true)},
		{"websocket text", 6 << 20, true, wsReader(false)},
		{"websocket base64", 4 << 20, false, wsReader(false)},
		{"sse text", 6 << 20, true, sseReader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(s *process.Settings) {
				s.OutputMemory, s.OutputDisk = 1<<20, 32<<20
			})
			path, want := writeData(t, tc.size, tc.text)
			p := e.start(t, map[string]any{"cmd": []string{"cat", path}, "hold_output": true})
			h := sha256.New()
			since := int64(0)
			for i := 1; i <= 3; i++ {
				var end *process.Process
				var gaps int
				since, end, gaps = tc.read(t, e, p.ID, since, int64(tc.size*i/4), h)
				if end != nil || gaps != 0 {
					t.Fatalf("drop %d: end %v gaps %d", i, end, gaps)
				}
				// Away long enough for cat to outrun the window many times over.
				time.Sleep(300 * time.Millisecond)
			}
			since, end, gaps := tc.read(t, e, p.ID, since, 1<<62, h)
			if end == nil || gaps != 0 || since != int64(tc.size) {
				t.Fatalf("end %+v gaps %d at %d", end, gaps, since)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != want {
				t.Fatalf("hash %s, want %s", got, want)
			}
			if end.State != "exited" || *end.ExitCode != 0 || end.OutputBytes != int64(tc.size) || !end.OutputComplete {
				t.Fatalf("%+v", end)
			}
		})
	}
}

// TestAbandonedFollowerIsReleased: a follower that drops and never comes
// back holds the process only for the resume grace; then the oldest
// output goes and the process runs to its end.
func TestAbandonedFollowerIsReleased(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s *process.Settings) {
		s.OutputMemory, s.OutputDisk, s.ResumeGrace = 64<<10, 1<<20, 300*time.Millisecond
	})
	p := e.start(t, map[string]any{"shell": "head -c 16000000 /dev/zero"})
	wsReader(true)(t, e, p.ID, 0, 100<<10, sha256.New())
	end := e.waitEnded(t, p.ID)
	if end.State != "exited" || end.OutputBytes != 16000000 || end.OutputKeptFrom < 16000000-(1<<20)-(64<<10) {
		t.Fatalf("%+v", end)
	}
	// A late resume is told what it missed.
	since, last, gaps := wsReader(false)(t, e, p.ID, 100<<10, 1<<62, sha256.New())
	if last == nil || gaps != 1 || since != 16000000 {
		t.Fatalf("%v %d %d", last, gaps, since)
	}
}

// TestFollowInteractive drives a process through its WebSocket: input
// frames, a resize and a signal.
func TestFollowInteractive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t, map[string]any{"shell": `trap 'echo got-int; exit 9' INT; read a; echo "read $a"; stty size; sleep 30 & wait`,
		"pty": map[string]int{"rows": 10, "cols": 20}})
	u := "ws" + strings.TrimPrefix(e.url, "http") + "/api/v1/process/" + p.ID + "/output"
	conn, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out strings.Builder
	readUntil := func(s string) *process.Process {
		for !strings.Contains(out.String(), s) {
			_, raw, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("waiting for %q in %q: %v", s, out.String(), err)
			}
			var m struct {
				Type    string          `json:"type"`
				Data    string          `json:"data"`
				Message string          `json:"message"`
				Process process.Process `json:"process"`
			}
			_ = json.Unmarshal(raw, &m)
			switch m.Type {
			case "output":
				out.WriteString(m.Data)
			case "error":
				out.WriteString("ERROR " + m.Message)
			case "end":
				return &m.Process
			}
		}
		return nil
	}
	mustWrite := func(mt int, b string) {
		if err := conn.WriteMessage(mt, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(websocket.TextMessage, `{"type":"resize","rows":12,"cols":34}`)
	mustWrite(websocket.BinaryMessage, "abc\n")
	readUntil("12 34")
	if !strings.Contains(out.String(), "read abc") {
		t.Fatalf("%q", out.String())
	}
	mustWrite(websocket.TextMessage, `{"type":"resize","rows":0,"cols":34}`)
	readUntil("ERROR size.rows")
	mustWrite(websocket.TextMessage, `{"type":"bogus"}`)
	readUntil("ERROR type")
	mustWrite(websocket.TextMessage, `{"type":"signal","signal":"INT"}`)
	readUntil("got-int")
	var end *process.Process
	for end == nil {
		end = readUntil("\x00never")
	}
	if end.State != "exited" || *end.ExitCode != 9 {
		t.Fatalf("%+v", end)
	}
	if mt, _, err := conn.ReadMessage(); err == nil || !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("after the end: %d %v", mt, err)
	}
}

// TestSplitCharactersStayText: a character cut between two reads of the
// pipe reaches a text follower whole, not as base64.
func TestSplitCharactersStayText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t, map[string]any{"shell": `printf 'a\342\202'; sleep 0.5; printf '\254b'`})
	resp, err := http.Get(e.url + "/api/v1/process/" + p.ID + "/output?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	if strings.Contains(body, "base64") || !strings.Contains(body, `"offset":0,"data":"a"}`) ||
		!strings.Contains(body, `"offset":1,"data":"€b"}`) || !strings.Contains(body, "event: end") {
		t.Fatalf("%s", body)
	}
}
