package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/proxy"
)

// TestKeptAliveConnectionJudgesEachRequest sends, on one kept-alive
// connection, requests for two containers, Host tricks and pipelined
// requests: each is routed by its own Host, the front's plain requests and
// those handed to the net/http server alike, and what a client says of
// forwarding or hop-by-hop headers does not reach the agent.
func TestKeptAliveConnectionJudgesEachRequest(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			// No length: the proxy sends it on chunked, piece by piece.
			for i := range 3 {
				fmt.Fprintf(w, "piece %d;", i)
				w.(http.Flusher).Flush()
			}
			return
		}
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", strconv.Itoa(3<<20))
			_, _ = io.Copy(w, io.LimitReader(zeros{}, 3<<20))
			return
		}
		fmt.Fprintf(w, "%s %s xff=%s xfh=%s secret=%q pauth=%q fwd=%q", r.Method, r.URL.RequestURI(),
			r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Secret"),
			r.Header.Get("Proxy-Authorization"), r.Header.Get("Forwarded"))
	}))
	defer app.Close()
	appPort := strconv.Itoa(app.Listener.Addr().(*net.TCPAddr).Port)
	a := agent(t, "proj", "ctr1")
	b := agent(t, "proj", "ctr2")
	cat := &catalog{byID: map[string]*proxy.Container{
		"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: a},
		"ctr2": {ID: "ctr2", ProjectID: "proj", Status: "running", Addr: b},
	}}
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test"}, cat))
	host1 := "proj-ctr1-p" + appPort + "-1.local.deckhand.test"
	host2 := "proj-ctr2-p" + appPort + "-1.local.deckhand.test"

	conn, err := net.Dial("tcp", px)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	send := func(raw string) {
		t.Helper()
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
	}
	read := func(method string) (*http.Response, string) {
		t.Helper()
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	expect := func(what string, resp *http.Response, body string, code int, has ...string) {
		t.Helper()
		if resp.StatusCode != code {
			t.Fatalf("%s: %d %q, want %d", what, resp.StatusCode, body, code)
		}
		for _, h := range has {
			if !strings.Contains(body, h) {
				t.Fatalf("%s: %q lacks %q", what, body, h)
			}
		}
	}

	// Container 1, then container 2, then 1 again on the same connection,
	// with forged forwarding and hop-by-hop headers.
	for i, host := range []string{host1, host2, strings.ToUpper(host1)} {
		send("GET /x?n=" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: " + host + "\r\nX-Forwarded-For: 6.6.6.6\r\n" +
			"X-Forwarded-Host: evil\r\nForwarded: for=6.6.6.6\r\nConnection: X-Secret\r\nX-Secret: 1\r\n" +
			"Proxy-Authorization: Basic eA==\r\n\r\n")
		resp, body := read("GET")
		expect("request "+strconv.Itoa(i), resp, body, 200, "GET /x?n="+strconv.Itoa(i)+" ", "xff=127.0.0.1 ",
			"xfh="+host+" ", `secret=""`, `pauth=""`, `fwd=""`)
		if resp.Close {
			t.Fatalf("request %d closed the kept-alive connection", i)
		}
	}
	// An absolute URI names the container, whatever the Host says.
	send("GET http://" + host2 + "/abs HTTP/1.1\r\nHost: " + host1 + "\r\n\r\n")
	resp, body := read("GET")
	expect("absolute URI", resp, body, 200, "GET /abs ", "xfh="+host2+" ")
	// Two requests in one write, then a stream and a spliced body, then a
	// HEAD: each answered in order, whole.
	send("GET /p1 HTTP/1.1\r\nHost: " + host1 + "\r\n\r\nGET /p2 HTTP/1.1\r\nHost: " + host2 + "\r\n\r\n")
	resp, body = read("GET")
	expect("pipelined 1", resp, body, 200, "GET /p1 ", "xfh="+host1+" ")
	resp, body = read("GET")
	expect("pipelined 2", resp, body, 200, "GET /p2 ", "xfh="+host2+" ")
	send("GET /stream HTTP/1.1\r\nHost: " + host1 + "\r\n\r\n")
	resp, body = read("GET")
	expect("stream", resp, body, 200, "piece 0;piece 1;piece 2;")
	send("GET /big HTTP/1.1\r\nHost: " + host2 + "\r\n\r\n")
	resp, body = read("GET")
	if resp.StatusCode != 200 || len(body) != 3<<20 || resp.Close {
		t.Fatalf("spliced body: %d, %d bytes, close %v", resp.StatusCode, len(body), resp.Close)
	}
	send("HEAD /big HTTP/1.1\r\nHost: " + host1 + "\r\n\r\n")
	resp, _ = read("HEAD")
	if resp.StatusCode != 200 || resp.ContentLength != 3<<20 {
		t.Fatalf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	// A trailing dot names no container; the connection serves on, and
	// each later request is judged by its own Host.
	send("GET / HTTP/1.1\r\nHost: " + host1 + ".\r\n\r\n")
	resp, body = read("GET")
	expect("trailing dot", resp, body, 404, "no container answers")
	send("GET /after HTTP/1.1\r\nHost: " + host2 + "\r\n\r\n")
	resp, body = read("GET")
	expect("after a refusal", resp, body, 200, "GET /after ", "xfh="+host2+" ")
	// Two Host headers: 400, however the connection was used before.
	send("GET / HTTP/1.1\r\nHost: " + host1 + "\r\nhost: " + host2 + "\r\n\r\n")
	resp, body = read("GET")
	expect("two Host headers", resp, body, 400)

	// The same tricks at a connection's first request, and two Host
	// headers after plain requests on a fresh one.
	for _, tc := range []struct{ what, raw string }{
		{"two Host headers first", "GET / HTTP/1.1\r\nHost: " + host1 + "\r\nHost: " + host2 + "\r\n\r\n"},
		{"two Host headers later", "GET / HTTP/1.1\r\nHost: " + host1 + "\r\n\r\nGET / HTTP/1.1\r\nHOST: " + host1 + "\r\nHost: " + host2 + "\r\n\r\n"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n"},
	} {
		c, err := net.Dial("tcp", px)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.WriteString(c, tc.raw)
		r := bufio.NewReader(c)
		var last *http.Response
		for n := strings.Count(tc.raw, "GET "); n > 0; n-- {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.what, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			last = resp
		}
		c.Close()
		if last.StatusCode != 400 {
			t.Errorf("%s: %d, want 400", tc.what, last.StatusCode)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRateLimitHoldsOnBothPaths floods one container through the proxy
// with plain GETs (the front's) and POSTs (the net/http server's): past
// its requests a second, either gets 429 with Retry-After, and the two
// paths count against the one bound.
func TestRateLimitHoldsOnBothPaths(t *testing.T) {
	a := agent(t, "proj", "ctr1")
	cat := &catalog{byID: map[string]*proxy.Container{"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: a}}}
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test", MaxRequestsPerSecond: 5}, cat))
	cl := &http.Client{Timeout: 10 * time.Second}
	codes := map[string]map[int]int{"GET": {}, "POST": {}}
	start := time.Now()
	for i := range 40 {
		method := "GET"
		var body io.Reader
		if i%2 == 1 {
			method, body = "POST", strings.NewReader("{}")
		}
		req, _ := http.NewRequest(method, "http://"+px+"/api/v1/files/stat?path=/", body)
		req.Host = "proj-ctr1-files-1.local.deckhand.test"
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes[method][resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests &&
			(resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "at most 5 requests a second")) {
			t.Fatalf("%s 429: %v %q", method, resp.Header, b)
		}
	}
	// 40 requests in under a second or two: at most 5 a started second
	// pass the bound, whichever path.
	seconds := int(time.Since(start)/time.Second) + 2
	passed := 40 - codes["GET"][http.StatusTooManyRequests] - codes["POST"][http.StatusTooManyRequests]
	if passed > 5*seconds || codes["GET"][http.StatusTooManyRequests] == 0 || codes["POST"][http.StatusTooManyRequests] == 0 {
		t.Fatalf("over %d s: %v", seconds, codes)
	}
}
