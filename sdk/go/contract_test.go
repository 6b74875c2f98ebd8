package deckhand_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// signedIn is a client of the shared control plane signed in as a new
// user holding credit.
func signedIn(t testing.TB, email, credit string) *deckhand.Client {
	t.Helper()
	if _, err := control.User(email, credit); err != nil {
		t.Fatal(err)
	}
	c, err := deckhand.New(control.URL, deckhand.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Login(context.Background(), email, harness.UserPass); err != nil {
		t.Fatal(err)
	}
	return c
}

func container(t *testing.T, url string) *deckhand.Container {
	t.Helper()
	c, err := deckhand.NewContainer(url, deckhand.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoginMeAndAnAuthToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := signedIn(t, "me@example.com", "")
	me, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me.Id == nil || *me.Id == "" {
		t.Fatalf("me has no id: %+v", me)
	}
	tok, err := c.CreateToken(ctx, "sdk test")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Token == nil || !strings.HasPrefix(*tok.Token, "svc_") {
		t.Fatalf("created token has no secret: %+v", tok)
	}
	// The token alone signs a new client in as the same user.
	byToken, err := deckhand.New(control.URL, deckhand.Options{Token: *tok.Token})
	if err != nil {
		t.Fatal(err)
	}
	me2, err := byToken.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if *me2.Id != *me.Id {
		t.Fatalf("token user %s, session user %s", *me2.Id, *me.Id)
	}
}

func TestAnErrorCarriesTheServersStatusCodeAndMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := signedIn(t, "errors@example.com", "")
	_, err := c.TransferToAI(ctx, "-1", "")
	var e *deckhand.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *deckhand.Error, got %T %v", err, err)
	}
	if e.Status != 400 || e.Code != "Bad Request" || !strings.Contains(e.Message, "amount") {
		t.Fatalf("error %+v", e)
	}
	_, err = c.TransferToAI(ctx, "1.00", "")
	if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "insufficient balance") {
		t.Fatalf("transfer beyond the balance: %v", err)
	}
	// A container service's error carries its own code and the field.
	_, err = container(t, agent.URL).Run(ctx, process.RunInput{Cmd: &[]string{"true"}, Cwd: ptr("relative")})
	if !errors.As(err, &e) || e.Status != 400 || e.Code != "INVALID" || e.Details != "cwd" {
		t.Fatalf("run with a relative cwd: %#v", err)
	}
	if deckhand.ErrorCode(err) != "INVALID" {
		t.Fatalf("ErrorCode: %q", deckhand.ErrorCode(err))
	}
}

func TestPaginationVisitsEveryTransactionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := signedIn(t, "pages@example.com", "20.00")
	for range 6 {
		if _, err := c.TransferToAI(ctx, "0.50", ""); err != nil {
			t.Fatal(err)
		}
	}
	var raw struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	}
	if err := c.Call(ctx, "GET", "/api/v1/wallet/transactions", nil, nil, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Pagination.Total < 7 {
		t.Fatalf("total %d, want at least the credit and 6 transfers", raw.Pagination.Total)
	}
	seen := map[string]bool{}
	for tx, err := range c.Transactions(ctx, 2) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[*tx.Id] {
			t.Fatalf("transaction %s seen twice", *tx.Id)
		}
		seen[*tx.Id] = true
	}
	if len(seen) != raw.Pagination.Total {
		t.Fatalf("iterated %d, the server counts %d", len(seen), raw.Pagination.Total)
	}
	// Stopping early stops fetching: break after 3.
	n := 0
	for _, err := range c.Transactions(ctx, 2) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	// Any paginated list: the fees of the 6 transfers, 4 to a page.
	fees := 0
	for f, err := range deckhand.Pages[map[string]any](ctx, c, "/api/v1/wallet/ai-fees", nil, "fees", 4) {
		if err != nil {
			t.Fatal(err)
		}
		if f["id"] == nil && f["transaction_id"] == nil {
			t.Fatalf("fee without an id: %v", f)
		}
		fees++
	}
	if fees != 6 {
		t.Fatalf("%d fees, want one per transfer", fees)
	}
	// A page size the server refuses is an error of the iteration.
	for _, err := range c.Transactions(ctx, 101) {
		if deckhand.ErrorCode(err) != "Bad Request" {
			t.Fatalf("limit 101: %v", err)
		}
	}
}

func TestInvoicePDF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := signedIn(t, "invoice@example.com", "5.00")
	r, err := c.TransferToAI(ctx, "2.00", "invoice-test")
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.GenerateInvoice(ctx, *r.TransactionId)
	if err != nil {
		t.Fatal(err)
	}
	var pdf bytes.Buffer
	n, err := c.InvoicePDF(ctx, *g.InvoiceId, &pdf)
	if err != nil {
		t.Fatal(err)
	}
	if n < 500 || !bytes.HasPrefix(pdf.Bytes(), []byte("%PDF-")) {
		t.Fatalf("not a PDF (%d bytes): %.40q", n, pdf.Bytes())
	}
	found := false
	for inv, err := range c.Invoices(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || *inv.Id == *g.InvoiceId
	}
	if !found {
		t.Fatalf("invoice %s is not listed", *g.InvoiceId)
	}
}

func TestATamperedAnswerIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := signedIn(t, "tamper@example.com", "")
	p := newProxy(t, hostOf(control.URL))
	c, err := deckhand.New(p.URL(), deckhand.Options{Token: good.Token()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Me(ctx); err != nil {
		t.Fatalf("through an honest proxy: %v", err)
	}
	// One byte of the body changes on the way.
	p.mu.Lock()
	p.rewrite = func(b []byte) []byte {
		return bytes.Replace(b, []byte("tamper@example.com"), []byte("tamper@exbmple.com"), 1)
	}
	p.mu.Unlock()
	me, err := c.Me(ctx)
	var se *deckhand.SignatureError
	if !errors.As(err, &se) || !errors.Is(err, deckhand.ErrBadSignature) || me != nil {
		t.Fatalf("a tampered answer: %v %+v", err, me)
	}
	// The signature header removed.
	p.mu.Lock()
	p.rewrite = func(b []byte) []byte {
		return bytes.Replace(b, []byte("X-Service-Signature:"), []byte("X-Service-Signaturf:"), 1)
	}
	p.mu.Unlock()
	if _, err := c.Me(ctx); !errors.Is(err, deckhand.ErrSignatureMissing) {
		t.Fatalf("an unsigned answer: %v", err)
	}
	// The generated client goes through the same check.
	if _, err := c.API().GetMeWithResponse(ctx); !errors.Is(err, deckhand.ErrSignatureMissing) {
		t.Fatalf("generated client, unsigned answer: %v", err)
	}
}

func TestAnAnswerOutsideTheReplayWindowIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := signedIn(t, "replay@example.com", "")
	for _, skew := range []time.Duration{-301 * time.Second, 301 * time.Second} {
		c, err := deckhand.New(control.URL, deckhand.Options{Token: good.Token(), Now: func() time.Time { return time.Now().Add(skew) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Me(ctx); !errors.Is(err, deckhand.ErrReplayWindow) {
			t.Fatalf("clock %v off: %v", skew, err)
		}
	}
	for _, skew := range []time.Duration{-200 * time.Second, 200 * time.Second} {
		c, _ := deckhand.New(control.URL, deckhand.Options{Token: good.Token(), Now: func() time.Time { return time.Now().Add(skew) }})
		if _, err := c.Me(ctx); err != nil {
			t.Fatalf("clock %v off, inside the window: %v", skew, err)
		}
	}
}

func TestAKeyRotationIsPickedUpByItsUnknownKid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp, err := harness.StartControl(bin, filepath.Join(t.TempDir(), "control"))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	c, err := deckhand.New(cp.URL, deckhand.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Login(ctx, harness.AdminEmail, harness.AdminPass); err != nil {
		t.Fatal(err)
	}
	before := deckhand.KeyFetches(c)
	if err := cp.RotateKeys(bin); err != nil {
		t.Fatal(err)
	}
	// The server reloads on SIGHUP; once it signs with the new kid, which
	// this client has not seen, the client fetches the set again at once:
	// no call fails on the way.
	deadline := time.Now().Add(30 * time.Second)
	for deckhand.KeyFetches(c) == before {
		if _, err := c.Me(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the client never fetched the rotated key set")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := c.Me(ctx); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
}

func TestRunAndStreamOutput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := container(t, agent.URL)
	r, err := c.Run(ctx, process.RunInput{Shell: ptr("echo out; echo err >&2; exit 3")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "out\n" || r.Stderr != "err\n" || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Fatalf("run: %+v", r)
	}
	p, err := c.Start(ctx, process.StartInput{Cmd: &[]string{"sh", "-c", "for i in 1 2 3; do echo line $i; done; echo oops >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	end, err := c.StreamTo(ctx, p.Id, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "line 1\nline 2\nline 3\n" || stderr.String() != "oops\n" || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Fatalf("stream: %q %q %+v", stdout.String(), stderr.String(), end)
	}
}

func TestStreamResumesAfterAForcedDisconnect(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct := container(t, agent.URL)
	p := newProxy(t, hostOf(agent.URL))
	via := container(t, p.URL())
	// The process writes "first", waits for a line on stdin, then writes
	// "second": the connection is cut in between, while it waits.
	proc, err := direct.Start(ctx, process.StartInput{Shell: ptr("echo first; read x; echo second-$x"), KeepStdinOpen: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	var once sync.Once
	end, err := via.Stream(ctx, proc.Id, deckhand.StreamOptions{}, func(o deckhand.Output) error {
		got.Write(o.Data)
		if strings.Contains(got.String(), "first\n") {
			once.Do(func() {
				p.cut()
				if err := direct.WriteStdin(ctx, proc.Id, []byte("go\n")); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "first\nsecond-go\n" {
		t.Fatalf("output %q: every byte once, in order", got.String())
	}
	if end.State != "exited" || p.dialCount() < 2 {
		t.Fatalf("end %+v after %d connections", end, p.dialCount())
	}
}

// rnd is n deterministic pseudo-random bytes.
type rnd struct {
	r *rand.ChaCha8
	n int64
}

func (r *rnd) Read(b []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), r.n)]
	_, _ = r.r.Read(b)
	r.n -= int64(len(b))
	return len(b), nil
}

func TestA100MBFileRoundTripsThroughDroppedConnections(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("100 MB transfer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const size = 100 << 20
	p := newProxy(t, hostOf(agent.URL))
	c := container(t, p.URL())
	src := &rnd{r: rand.NewChaCha8([32]byte{1, 2, 3}), n: size}
	want := sha256.New()
	p.cutOnceAfter(37 << 20) // mid-upload, mid-chunk
	up, err := c.Upload(ctx, "/big.bin", io.TeeReader(src, want), size, deckhand.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSum := hex.EncodeToString(want.Sum(nil))
	if up.SHA256 != wantSum || up.Size != size || up.Reconnects < 1 {
		t.Fatalf("upload %+v, want sha %s and a reconnect", up, wantSum)
	}
	got := sha256.New()
	var n countWriter
	p.cutOnceAfter(61 << 20) // mid-download
	down, err := c.Download(ctx, "/big.bin", io.MultiWriter(got, &n))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got.Sum(nil)) != wantSum || down.SHA256 != wantSum || int64(n) != size || down.Reconnects < 1 {
		t.Fatalf("download %+v (%d bytes), want sha %s and a reconnect", down, n, wantSum)
	}
}

type countWriter int64

func (c *countWriter) Write(b []byte) (int, error) { *c += countWriter(len(b)); return len(b), nil }

func TestTerminalIsAReadWriteCloser(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	term, err := container(t, agent.URL).Attach(ctx, deckhand.TerminalOptions{Shell: "/bin/sh", Cols: 100, Rows: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	var rw io.ReadWriteCloser = term
	if _, err := io.WriteString(rw, "echo hello-$((6*7)); exit 3\n"); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(rw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(all, []byte("hello-42")) || term.ExitCode() == nil || *term.ExitCode() != 3 {
		t.Fatalf("terminal said %q, exit %v", all, term.ExitCode())
	}
}

func TestUnknownGatewayPathIsATypedError(t *testing.T) {
	t.Parallel()
	_, err := container(t, agent.URL).Checksum(context.Background(), "/no/such/file")
	var e *deckhand.Error
	if !errors.As(err, &e) || e.Status != http.StatusNotFound || e.Code == "" {
		t.Fatalf("checksum of a missing file: %#v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestScreenshot(t *testing.T) {
	t.Parallel()
	var png bytes.Buffer
	_, err := container(t, agent.URL).Screenshot(context.Background(), &png)
	if !hasDisplay {
		if deckhand.ErrorCode(err) != "DISPLAY_UNAVAILABLE" {
			t.Fatalf("without a display: %v", err)
		}
		t.Skip("no Xvfb or no deckhand-display beside the binaries: the display service is unavailable")
	}
	if err != nil || !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Fatalf("screenshot: %v (%d bytes)", err, png.Len())
	}
}

func TestCancellingTheContextEndsAStream(t *testing.T) {
	t.Parallel()
	c := container(t, agent.URL)
	p, err := c.Start(context.Background(), process.StartInput{Shell: ptr("echo ready; exec sleep 600")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.Call(context.Background(), http.MethodDelete, "process", "/api/v1/process/"+p.Id, nil, nil, nil)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = c.Stream(ctx, p.Id, deckhand.StreamOptions{}, func(o deckhand.Output) error {
		cancel() // the process goes on writing nothing: only the context can end the stream
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stream after cancel: %v", err)
	}
}
