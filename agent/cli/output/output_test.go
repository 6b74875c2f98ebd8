package output_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"deckhand/agent/cli/output"
)

const answer = `{"id":"t1","amount":"10.00","count":3,"ok":true,"none":null,"tags":["a","b"],"nested":{"z":1,"a":"yes"}}`

// Every format renders the same value: JSON keeps the server's field order
// and spelling, YAML is that document (decimal strings stay strings), the
// table is what the command draws.
func TestPrintFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		format output.Format
		check  func(t *testing.T, out string)
	}{
		{output.JSON, func(t *testing.T, out string) {
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil || m["amount"] != "10.00" {
				t.Fatalf("%v %s", err, out)
			}
			if strings.Index(out, `"id"`) > strings.Index(out, `"amount"`) || strings.Index(out, `"z"`) > strings.Index(out, `"a": "yes"`) {
				t.Fatalf("field order changed:\n%s", out)
			}
		}},
		{output.YAML, func(t *testing.T, out string) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(out), &m); err != nil || m["amount"] != "10.00" || m["count"] != 3 || m["none"] != nil {
				t.Fatalf("%v %#v\n%s", err, m, out)
			}
			if !strings.HasPrefix(out, "id: t1\namount: \"10.00\"\n") || strings.Contains(out, "{") {
				t.Fatalf("not block YAML in order:\n%s", out)
			}
		}},
		{output.Table, func(t *testing.T, out string) {
			if out != "ID      t1\nAMOUNT  10.00\nTAGS    a,b\nNONE    -\nOK      yes\nZ       1\n" {
				t.Fatalf("%q", out)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(string(tc.format), func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			p := &output.Printer{Format: tc.format, W: &buf}
			d, err := output.Decode([]byte(answer))
			if err != nil {
				t.Fatal(err)
			}
			err = p.Print(json.RawMessage(answer), func(tw *output.TableWriter) {
				tw.Object(d, output.Cols("ID=id", "AMOUNT=amount", "TAGS=tags", "NONE=none", "OK=ok", "Z=nested.z"))
			})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, buf.String())
		})
	}
}

// A value with no table form prints as YAML.
func TestPrintFallback(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &output.Printer{Format: output.Table, W: &buf}
	if err := p.Print(map[string]int{"n": 1}, nil); err != nil || buf.String() != "n: 1\n" {
		t.Fatalf("%v %q", err, buf.String())
	}
}

// A stream is JSON lines in json, documents in yaml, rows in table.
func TestItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format output.Format
		want   string
	}{
		{output.JSON, "{\"a\":1,\"b\":[2]}\n{\"a\":1,\"b\":[2]}\n"},
		{output.YAML, "---\na: 1\nb:\n  - 2\n---\na: 1\nb:\n  - 2\n"},
		{output.Table, "1\n1\n"},
	} {
		var buf bytes.Buffer
		p := &output.Printer{Format: tc.format, W: &buf}
		for range 2 {
			if err := p.Item(json.RawMessage(`{"a": 1, "b": [2]}`), func(t *output.TableWriter) { t.Line("1") }); err != nil {
				t.Fatal(err)
			}
		}
		if buf.String() != tc.want {
			t.Fatalf("%s: %q", tc.format, buf.String())
		}
	}
}

// -o takes the three formats only, and completes them.
func TestFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want output.Format
		err  bool
	}{
		{nil, output.Table, false},
		{[]string{"-o", "json"}, output.JSON, false},
		{[]string{"--output=YAML"}, output.YAML, false},
		{[]string{"-o", "xml"}, "", true},
	} {
		var got output.Format
		root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true}
		output.AddFlag(root, root.PersistentFlags())
		sub := &cobra.Command{Use: "sub", RunE: func(cmd *cobra.Command, _ []string) error { got = output.Of(cmd); return nil }}
		root.AddCommand(sub)
		root.SetArgs(append([]string{"sub"}, tc.args...))
		err := root.Execute()
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Fatalf("%v: %v %q", tc.args, err, got)
		}
		if tc.err && !strings.Contains(err.Error(), "table, json, yaml") {
			t.Fatalf("%v: %v", tc.args, err)
		}
	}
}
