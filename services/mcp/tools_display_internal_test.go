package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// base64Member decodes what json.Marshal makes of bytes, and a string
// with escapes ("\/") as the JSON decoder does.
func TestBase64Member(t *testing.T) {
	t.Parallel()
	want := []byte{0xfb, 0xff, 0xbf, 0, 1, 2, 3}
	raw, _ := json.Marshal(want)
	escaped := bytes.ReplaceAll(raw, []byte("/"), []byte(`\/`))
	for _, in := range []json.RawMessage{raw, escaped} {
		if got, err := base64Member(in); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := base64Member(json.RawMessage(`"not base64!"`)); err == nil {
		t.Error("a string that is not base64 decoded")
	}
}
