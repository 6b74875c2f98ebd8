package platform

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestToolTextRenders(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src, answer string
		args              map[string]json.RawMessage
		want              string
	}{
		{"whole numbers print whole", "{{.id}} {{.size}} {{printf \"%5d\" .n}}", `{"id":4194311,"size":1.5,"n":7}`, nil, "4194311 1.5     7"},
		{"arg reads a string or JSON", `{{arg "key"}} {{arg "n"}} [{{arg "absent"}}]`, `{}`,
			map[string]json.RawMessage{"key": json.RawMessage(`"Return"`), "n": json.RawMessage(`3`)}, "Return 3 []"},
		{"join and indent", `{{indent .depth}}{{join .cmd " "}}`, `{"depth":2,"cmd":["sh","-c","true"]}`, nil, "    sh -c true"},
		{"join of null is empty", `[{{join .cmd " "}}]`, `{"cmd":null}`, nil, "[]"},
		{"runes count characters", `{{runes .v}}`, `{"v":"héllo"}`, nil, "5"},
		{"an absent member is nothing to with, if and or", `{{with .x}}x{{end}}{{if .y}}y{{end}}{{or .z "none"}}`, `{}`, nil, "none"},
		{"range with else", `{{range .l}}{{.}},{{else}}empty{{end}}`, `{"l":[]}`, nil, "empty"},
	} {
		x, err := ParseToolText(c.name, c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := x.Render([]byte(c.answer), c.args)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := ParseToolText("bad", "{{.x"); err == nil {
		t.Error("a broken template parsed")
	}
	x, _ := ParseToolText("f", "{{printf \"%d\" .n}}")
	if _, err := x.Render([]byte(`not json`), nil); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("an answer that is no JSON: %v", err)
	}
}

// BenchmarkToolTextRender: what reading an answer through its Text costs
// a tool call: a pointer action's answer, and a list of 20 processes as
// process_list says it.
//
//	go test -run '^$' -bench ToolTextRender -benchmem ./platform/
func BenchmarkToolTextRender(b *testing.B) {
	var procs []map[string]any
	for i := 0; i < 20; i++ {
		procs = append(procs, map[string]any{"id": "00ef33efd01ccb46", "state": "running", "cmd": []string{"/bin/sh", "-c", "sleep 30"},
			"cwd": "/home/user", "pid": 4242 + i, "started_at": "2026-11-30T03:15:11.628592546Z", "duration_ms": 1234})
	}
	list, _ := json.Marshal(map[string]any{"processes": procs})
	for _, bc := range []struct {
		name, src string
		answer    []byte
	}{
		{"pointer", "done; the pointer is at {{.x}},{{.y}}", []byte(`{"x":350,"y":250}`)},
		{"list20", "{{range .processes}}{{.id}} {{.state}} {{join .cmd \" \"}}\n{{end}}", list},
	} {
		b.Run(bc.name, func(b *testing.B) {
			x, err := ParseToolText(bc.name, bc.src)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := x.Render(bc.answer, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
