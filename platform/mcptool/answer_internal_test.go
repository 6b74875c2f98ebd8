package mcptool

import (
	"bytes"
	"encoding/json"
	"testing"
)

// cutImage takes a leading image member out of an answer as json.Marshal
// writes it, and leaves any other answer to the JSON decoder.
func TestCutImage(t *testing.T) {
	t.Parallel()
	want := []byte{0xfb, 0xff, 0xbf, 0, 1, 2, 3}
	raw, _ := json.Marshal(struct {
		Image []byte `json:"image"`
		Width int    `json:"width"`
	}{want, 7})
	img, rest := cutImage(raw, "image")
	if !bytes.Equal(img, want) || string(rest) != `{"width":7}` {
		t.Errorf("%s: %v %s", raw, img, rest)
	}
	for _, in := range []string{`{"width":7,"image":"AAAA"}`, `{"image":"AA\/A"}`, `{"image":"not base64!"}`} {
		if img, rest := cutImage([]byte(in), "image"); img != nil || string(rest) != in {
			t.Errorf("%s: cut %v %s", in, img, rest)
		}
	}
	if img, rest := cutImage([]byte(`{"image":"AAAA"}`), "image"); len(img) != 3 || string(rest) != "{}" {
		t.Errorf("an image alone: %v %s", img, rest)
	}
}
