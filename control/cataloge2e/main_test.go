package cataloge2e_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"deckhand/control/controltest"
)

func TestMain(m *testing.M) { controltest.Main(m) }

// server is the shared harness's server with this package's call shape.
type server struct{ *controltest.Server }

func serve(t testing.TB) server { return server{controltest.Start(t)} }

// Must sends a request and fails the test unless it answers want.
func (s server) Must(want int, method, path string, body any, bearer string) controltest.Resp {
	s.T.Helper()
	return s.Server.Must(s.Call(method, path, body, bearer), want)
}

// User creates a verified user name@example.com; it answers the user's
// token and id.
func (s server) User(admin, name string) (token, id string) {
	s.T.Helper()
	id, token = s.Server.User(admin, name+"@example.com")
	return token, id
}

func data(r controltest.Resp) map[string]any { return controltest.Data(r) }

// wantError checks the control envelope of a refusal and that the message
// names what it must.
func wantError(t *testing.T, r controltest.Resp, status int, errText string, names ...string) {
	t.Helper()
	if r.Status != status || r.Body["error"] != errText || r.Body["statusCode"] != float64(status) {
		t.Fatalf("status %d body %s, want %d %q", r.Status, r.Raw, status, errText)
	}
	msg, _ := r.Body["message"].(string)
	for _, n := range names {
		if !strings.Contains(msg, n) {
			t.Fatalf("message %q does not name %q", msg, n)
		}
	}
}

func get(s server, path, token string) *http.Response {
	s.T.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := s.HTTP.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	return res
}

func pngOf(t *testing.T, res *http.Response) image.Image {
	t.Helper()
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("icon: %d %s %q", res.StatusCode, res.Header.Get("Content-Type"), buf.Bytes())
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("icon is no PNG: %v", err)
	}
	return img
}

func pngB64(t *testing.T, w, h int) string {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func aliases(r controltest.Resp) string {
	list, _ := data(r)["images"].([]any)
	var out []string
	for _, v := range list {
		out = append(out, fmt.Sprint(v.(map[string]any)["alias"]))
	}
	return strings.Join(out, ",")
}

func pagination(r controltest.Resp) string {
	p, _ := data(r)["pagination"].(map[string]any)
	return fmt.Sprintf("total=%v page=%v limit=%v pages=%v", p["total"], p["page"], p["limit"], p["totalPages"])
}
