package mcptool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"deckhand/platform/mcptool"
)

func TestSummarizeKeepsNoContent(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(map[string]any{"path": "/etc/x", "content": "s3cret", "text": "typed s3cret",
		"cmd": []string{"echo", "hi"}, "env": map[string]string{"TOKEN": "s3cret"}, "long": strings.Repeat("x", 200)})
	got := mcptool.Summarize(raw)
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "s3cret") {
		t.Fatalf("a secret reached the summary: %s", b)
	}
	if got["path"] != "/etc/x" || got["content"] != "<8 bytes>" || len(got["long"].(string)) > 90 {
		t.Fatalf("summary %s", b)
	}
}
