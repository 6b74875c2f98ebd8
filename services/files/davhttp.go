package files

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// DavInput is a WebDAV request: the resource, the headers WebDAV reads and
// the body. Every WebDAV method takes it.
type DavInput struct {
	Path   string `path:"path" doc:"the resource below /dav/, percent-encoded as sent"`
	Target platform.Target

	Depth       string `header:"Depth" doc:"PROPFIND: 0 or 1 on a collection (infinity, or none, is 403); COPY, LOCK: 0 or infinity"`
	Destination string `header:"Destination" doc:"COPY, MOVE: the target's URL on this server"`
	Overwrite   string `header:"Overwrite" doc:"COPY, MOVE: F refuses to replace an existing target"`
	If          string `header:"If" doc:"lock tokens and entity tags the request is conditional on (RFC 4918 10.4)"`
	LockToken   string `header:"Lock-Token" doc:"UNLOCK: the lock, as <token>"`
	Timeout     string `header:"Timeout" doc:"LOCK: Second-N or Infinite; at most Second-3600 is granted"`
	IfMatch     string `header:"If-Match" doc:"the resource's ETag as last read"`
	IfNoneMatch string `header:"If-None-Match" doc:"GET: ETags the client holds (304); PUT: * refuses to replace"`
	Range       string `header:"Range" doc:"GET of a file: one range, as the REST download takes it"`
	IfRange     string `header:"If-Range" doc:"GET of a file: the ETag the range is for"`
	Accept      string `header:"Accept" doc:"application/json first: errors as the service's JSON error instead of DAV:error"`

	ContentLength int64  `header:"Content-Length" minimum:"0" doc:"a PUT over --files-max-upload is refused before its body is read"`
	OCChecksum    string `header:"OC-Checksum" doc:"PUT: SHA1:<hex> or MD5:<hex> the content must have (ownCloud's header)"`
	OCMtime       string `header:"X-OC-Mtime" doc:"PUT: the file's modification time, seconds since 1970 (ownCloud's header)"`

	ForwardedPrefix string `header:"X-Forwarded-Prefix" doc:"set by the agent's gateway: the prefix hrefs and Destination carry"`
	ForwardedHost   string `header:"X-Forwarded-Host" doc:"set by the agent's gateway: the host Destination names"`

	Body io.Reader
}

// DavAnswer is a WebDAV answer: its status, the headers WebDAV sets and
// its body (a multistatus streamed as it is built, a file, a DAV:error).
type DavAnswer struct {
	Status       int
	Length       int64  `header:"Content-Length"`
	Type         string `header:"Content-Type"`
	ETag         string `header:"ETag"`
	LastModified string `header:"Last-Modified"`
	AcceptRanges string `header:"Accept-Ranges"`
	Range        string `header:"Content-Range"`
	NoSniff      string `header:"X-Content-Type-Options"`
	CSP          string `header:"Content-Security-Policy" doc:"the sandbox, for files a browser could run as a page"`
	Allow        string `header:"Allow" doc:"OPTIONS: the methods the resource takes"`
	DAV          string `header:"DAV" doc:"OPTIONS: the compliance classes (1, 2)"`
	AuthorVia    string `header:"MS-Author-Via" doc:"OPTIONS: DAV"`
	LockToken    string `header:"Lock-Token" doc:"LOCK: the new lock's token"`
	Timeout      string `header:"Timeout" doc:"LOCK: the lock's granted lifetime"`
	OCMtime      string `header:"X-OC-Mtime" doc:"PUT: accepted when X-OC-Mtime was applied"`
	RetryAfter   string `header:"Retry-After" doc:"with 503: seconds to wait before asking again"`
	Connection   string `header:"Connection" doc:"close after an error answer to a request whose body was left unread"`
	Body         io.Reader
}

// DAV answers a WebDAV request with golang.org/x/net/webdav; a failure is
// a DAV:error, or the JSON error when Accept prefers it.
func (s *Service) DAV(ctx context.Context, in DavInput) (DavAnswer, error) {
	var bodyRead bool
	out, err := s.serveDAV(ctx, in, &bodyRead)
	if err == nil {
		return out, nil
	}
	if acceptsJSON(in.Accept) {
		return DavAnswer{}, err // the host writes the JSON error (and closes a connection with an unread body)
	}
	ans := s.davError(ctx, in, err)
	// An error answer keeps the connection when the request had no body
	// or its body was read whole (WebDAV clients probe many missing
	// names); else the unread rest would be taken for the next request, so
	// the connection closes after the answer. What is left is read up to
	// 8 MiB first (as net/http does), so a client still sending sees the
	// answer rather than a reset.
	if !bodyRead {
		if n, err := io.CopyN(io.Discard, in.Body, 8<<20); n > 0 || err != io.EOF {
			ans.Connection = "close"
		}
	}
	return ans, nil
}

// acceptsJSON reports whether an Accept header prefers application/json
// to XML.
func acceptsJSON(accept string) bool {
	best, bestQ := "", -1.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		switch mt = strings.ToLower(strings.TrimSpace(mt)); mt {
		case "application/xml", "text/xml", "application/json":
			if q > bestQ {
				best, bestQ = mt, q
			}
		}
	}
	return best == "application/json" && bestQ > 0
}

// serveDAV runs x/net/webdav on a request built from the input. The body
// is handed over as the host's stream; GET of a file goes through the
// REST download (sendfile, ranges); PROPFIND's multistatus is streamed
// (streamDAV); other answers are small and buffered.
func (s *Service) serveDAV(ctx context.Context, in DavInput, bodyRead *bool) (DavAnswer, error) {
	if err := s.checkLength(in.ContentLength); err != nil {
		return DavAnswer{}, err
	}
	if strings.ContainsRune(in.Path, '#') {
		return DavAnswer{}, fault.Invalid("path", "must not carry a fragment (#)")
	}
	u, err := url.ParseRequestURI("/dav/" + in.Path)
	if err != nil {
		return DavAnswer{}, fault.Invalid("path", "is not a valid URL path")
	}
	name := strings.TrimPrefix(u.Path, "/dav")
	// Behind the agent's gateway (/_/files/dav/...) hrefs in answers and
	// the Destination of COPY/MOVE carry the gateway's prefix, which it
	// passes as X-Forwarded-Prefix (and strips from clients).
	h := s.dav.h
	host := in.Target.Host
	if fp := in.ForwardedPrefix; fp != "" && validPrefix(fp) {
		if in.ForwardedHost != "" {
			host = in.ForwardedHost // the Destination header names the gateway's host
		}
		hc := *h
		hc.Prefix = fp + "/dav"
		h = &hc
		u.Path = fp + u.Path
	}
	method := in.Target.Method
	r, err := rel("path", name)
	if err != nil {
		return DavAnswer{}, err
	}
	if method == http.MethodGet || method == http.MethodHead {
		// Everything but a collection (files, links to them, and fifos,
		// devices and sockets, which it refuses) goes through the REST
		// download, with its headers.
		if dir, err := s.isDir(r); err == nil && !dir {
			fc, err := s.fileContent(name, false, FileConditions{IfNoneMatch: in.IfNoneMatch, Range: in.Range, IfRange: in.IfRange})
			return fc.davAnswer(), err
		}
	}
	st := &reqState{cond: WriteInput{Path: name, Overwrite: true, IfMatch: in.IfMatch, IfNoneMatch: in.IfNoneMatch},
		noFollow: method == "COPY" || method == "MOVE" || method == "DELETE"}
	if method == http.MethodPut {
		if in.OCChecksum != "" {
			if st.ocSum, err = parseOCChecksum(in.OCChecksum); err != nil {
				return DavAnswer{}, err
			}
		}
		if in.OCMtime != "" {
			n, err := strconv.ParseInt(in.OCMtime, 10, 64)
			if err != nil || n < 0 {
				return DavAnswer{}, fault.Invalid("X-OC-Mtime", "must be whole seconds since 1970-01-01 UTC")
			}
			t := time.Unix(n, 0)
			st.ocMtime = &t
		}
	}
	var lockLife time.Duration
	if method == "LOCK" {
		if lockLife, err = lockTimeout(in.Timeout); err != nil {
			return DavAnswer{}, err
		}
	}
	depth := in.Depth
	rb := in.Body
	if method == "PROPFIND" || method == "PROPPATCH" || method == "LOCK" {
		// XML request bodies are small; x/net accepts a namespace prefix
		// bound to "" (invalid in XML Namespaces 1.0), so check first.
		raw, err := io.ReadAll(io.LimitReader(rb, 1<<20+1))
		if err != nil {
			return DavAnswer{}, fault.Invalid("body", "could not be read")
		}
		if len(raw) > 1<<20 {
			return DavAnswer{}, fault.Invalid("body", "must be at most 1 MiB of XML")
		}
		*bodyRead = true
		if d := strings.ToLower(strings.TrimSpace(depth)); method == "PROPFIND" && (d == "" || d == "infinity") {
			// RFC 4918 9.1 lets a server refuse infinite depth on a
			// collection; a walk of the whole tree is one request's worth
			// of unbounded work (a few links to "." make it exponential).
			// On anything else infinity means 0, and x/net is told 0, so a
			// file swapped for a directory meanwhile is not walked either.
			if dir, _ := s.isDir(r); dir {
				return DavAnswer{}, finiteDepthOnly()
			}
			depth = "0"
		}
		if err := checkNamespaces(raw); err != nil {
			return DavAnswer{}, err
		}
		st.checksums = method == "PROPFIND" && asksChecksums(raw)
		if method == "LOCK" {
			if li, shared := sharedLockRequest(raw); shared {
				return s.lockShared(name, r, u.Path, in.Depth, li, lockLife)
			}
			// x/net writes the Timeout it read into the answer: hand it
			// the capped one.
			in.Timeout = timeoutHeader(lockLife)
		}
		rb = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, stateKey{}, st), method, u.String(), rb)
	if err != nil {
		return DavAnswer{}, fault.Invalid("path", "is not a valid URL path")
	}
	req.RequestURI = u.RequestURI()
	req.Host = host
	req.ContentLength = in.ContentLength
	for k, v := range map[string]string{"Depth": depth, "Destination": in.Destination, "Overwrite": in.Overwrite, "If": in.If,
		"Lock-Token": in.LockToken, "Timeout": in.Timeout, "If-Match": in.IfMatch, "If-None-Match": in.IfNoneMatch} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if err := s.davPreconditions(req, name); err != nil {
		return DavAnswer{}, err
	}
	if method == "PROPFIND" {
		return s.streamDAV(ctx, h, req, st, name)
	}
	rw := &davBuffer{h: http.Header{}}
	h.ServeHTTP(rw, req)
	if err := s.davOutcome(req, rw.status, st, name); err != nil {
		return DavAnswer{}, err
	}
	out := rw.answer()
	if method == "LOCK" {
		out.Timeout = timeoutHeader(lockLife)
	}
	if st.ocMtime != nil && out.Status < 300 {
		out.OCMtime = "accepted" // how ownCloud says the time was kept
	}
	return out, nil
}

// davAnswer is a download as a WebDAV answer.
func (fc FileContent) davAnswer() DavAnswer {
	return DavAnswer{Status: fc.Status, Length: fc.Length, Type: fc.Type, ETag: fc.ETag, LastModified: fc.LastModified,
		AcceptRanges: fc.AcceptRanges, Range: fc.Range, NoSniff: fc.NoSniff, CSP: fc.CSP, Body: fc.Body}
}

// davAnswerOf copies what x/net set into an answer.
func davAnswerOf(status int, h http.Header, body io.Reader, length int64) DavAnswer {
	out := DavAnswer{Status: cmp.Or(status, http.StatusOK), Length: length, Body: body,
		Type: h.Get("Content-Type"), ETag: h.Get("ETag"), Allow: h.Get("Allow"), DAV: h.Get("DAV"),
		AuthorVia: h.Get("MS-Author-Via"), LockToken: h.Get("Lock-Token")}
	if out.Type == "" && length != 0 {
		out.Type = "text/plain; charset=utf-8" // x/net's status texts
	}
	return out
}

// davBuffer is the ResponseWriter of x/net's small answers.
type davBuffer struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *davBuffer) Header() http.Header { return w.h }

func (w *davBuffer) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *davBuffer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

func (w *davBuffer) answer() DavAnswer {
	if w.status == http.StatusNoContent || w.status == http.StatusNotModified {
		return davAnswerOf(w.status, w.h, nil, 0)
	}
	return davAnswerOf(w.status, w.h, bytes.NewReader(w.body.Bytes()), int64(w.body.Len()))
}

// streamDAV runs x/net's PROPFIND in a goroutine of its own and streams
// its multistatus: x/net writes each response element as the walk builds
// it, and the status and headers go out with the first 16 KiB of them, so
// the answer is never held whole in memory and a client that stops
// reading stops the walk. An answer that fails before its first byte (404, a bad
// body) is answered as any other error.
func (s *Service) streamDAV(ctx context.Context, h *webdav.Handler, req *http.Request, st *reqState, name string) (DavAnswer, error) {
	// The goroutine outlives this method (the host sends the body after it
	// returns), so its request holds nothing of the host's.
	req = req.WithContext(context.WithValue(context.Background(), stateKey{}, st))
	pr, pw := io.Pipe()
	// x/net writes each element (a few hundred bytes) on its own; the host
	// sends each read of the body as one chunk, so the elements go out
	// gathered.
	rw := &davStream{h: http.Header{}, w: bufio.NewWriterSize(pw, 16<<10), started: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rw, req)
		_ = rw.w.Flush()
		_ = pw.Close()
	}()
	select {
	case <-rw.started:
	case <-done:
		select {
		case <-rw.started:
		default:
			if err := s.davOutcome(req, rw.status, st, name); err != nil {
				return DavAnswer{}, err
			}
			return davAnswerOf(rw.status, rw.h, nil, 0), nil
		}
	}
	rid := platform.RequestIDOf(ctx)
	body := &davStreamBody{PipeReader: pr, done: done, after: func() {
		if rw.failed {
			s.deps.Logger.Error("PROPFIND ended early", "request_id", rid, "path", name, "err", st.xerr)
		}
	}}
	return davAnswerOf(rw.status, rw.h, body, -1), nil
}

// davStreamBody is a streamed multistatus as the host reads it. The host
// closes it when it is sent or the client is gone; the walk then ends at
// its next write, and Close waits for it.
type davStreamBody struct {
	*io.PipeReader
	done  chan struct{}
	after func()
}

func (b *davStreamBody) Close() error {
	_ = b.PipeReader.CloseWithError(io.ErrClosedPipe)
	<-b.done
	b.after()
	return nil
}

// davStream is the ResponseWriter of a streamed answer: the body of a
// success goes into the pipe, that of an error answer (x/net's status
// text) is dropped.
type davStream struct {
	h       http.Header
	status  int
	w       *bufio.Writer // into the pipe the host reads
	started chan struct{}
	// failed: x/net gave up after the answer started (a multistatus it
	// had to cut short); the status text it then writes is dropped.
	failed bool
}

func (w *davStream) Header() http.Header { return w.h }

func (w *davStream) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	} else if code >= 400 {
		w.failed = true
	}
}

func (w *davStream) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 || w.failed {
		return len(p), nil
	}
	select {
	case <-w.started:
	default:
		close(w.started)
	}
	return w.w.Write(p)
}
