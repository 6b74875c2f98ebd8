// Package output owns how every deckhand client command prints its result:
// the -o flag (table, json or yaml), one value rendered in the chosen
// format (Printer.Print), a stream of items for commands that follow
// (Printer.Item), and the table writer the table format uses. JSON is the
// value as the server sent it, indented; YAML is that same JSON document
// (same field names, same order); table is what the command draws for
// people. Diagnostics and progress go to stderr, never here, so the json
// and yaml outputs stay parseable.
package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// Format is the value of -o.
type Format string

// The formats every command takes.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// Formats lists them in the order help and completion show.
var Formats = []string{string(Table), string(JSON), string(YAML)}

// FlagName is the long name of the output flag; its shorthand is -o.
const FlagName = "output"

// String implements pflag.Value.
func (f *Format) String() string {
	if *f == "" {
		return string(Table)
	}
	return string(*f)
}

// Set implements pflag.Value: only the three formats are accepted.
func (f *Format) Set(v string) error {
	if g := strings.ToLower(strings.TrimSpace(v)); slices.Contains(Formats, g) {
		*f = Format(g)
		return nil
	}
	return fmt.Errorf("must be one of %s, not %q", strings.Join(Formats, ", "), v)
}

// Type implements pflag.Value (shown in help).
func (f *Format) Type() string { return "format" }

// AddFlag declares -o/--output on fs (a root command's persistent flags, so
// every command has it) and registers its completion on cmd.
func AddFlag(cmd *cobra.Command, fs *pflag.FlagSet) {
	f := Table
	fs.VarP(&f, FlagName, "o", "output format: "+strings.Join(Formats, ", "))
	_ = cmd.RegisterFlagCompletionFunc(FlagName, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return Formats, cobra.ShellCompDirectiveNoFileComp
	})
}

// Of is the format cmd was asked for (table when cmd has no -o flag).
func Of(cmd *cobra.Command) Format {
	if fl := cmd.Flags().Lookup(FlagName); fl != nil {
		if f, ok := fl.Value.(*Format); ok && *f != "" {
			return *f
		}
	}
	return Table
}

// Printer writes one command's output in its format.
type Printer struct {
	Format Format
	W      io.Writer
}

// New is the printer of cmd: its -o format, writing to cmd's stdout.
func New(cmd *cobra.Command) *Printer {
	return &Printer{Format: Of(cmd), W: cmd.OutOrStdout()}
}

// Structured reports whether the output is for programs (json or yaml):
// commands then leave out decorations such as hints.
func (p *Printer) Structured() bool { return p.Format == JSON || p.Format == YAML }

// Print writes v once. For json and yaml v is marshalled (a
// json.RawMessage or []byte holding JSON is used as it is, so a server's
// answer keeps its field order and number spelling); for table, table draws
// it. table may be nil for a value that has no table form of its own: the
// table format then prints v as YAML, which reads well.
func (p *Printer) Print(v any, table func(t *TableWriter)) error {
	return p.write(v, table, false)
}

// Line is Print for a value whose table form is one line of text.
func (p *Printer) Line(v any, format string, args ...any) error {
	return p.Print(v, func(t *TableWriter) { t.Line(format, args...) })
}

// Item writes one element of a stream (a followed log, new events): json
// writes it as one compact line (JSON lines, for jq and line-based tools),
// yaml as one document after a "---" line, table through row.
func (p *Printer) Item(v any, row func(t *TableWriter)) error {
	return p.write(v, row, true)
}

// write is Print, or Item when item is set.
func (p *Printer) write(v any, table func(t *TableWriter), item bool) error {
	switch {
	case p.Format == JSON:
		raw, err := toJSON(v)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if item {
			err = json.Compact(&buf, raw)
		} else {
			err = json.Indent(&buf, raw, "", "  ")
		}
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		buf.WriteByte('\n')
		_, err = p.W.Write(buf.Bytes())
		return err
	case p.Format == YAML, table == nil:
		return p.yaml(v, item)
	}
	t := NewTable(p.W)
	table(t)
	return t.Flush()
}

func (p *Printer) yaml(v any, doc bool) error {
	raw, err := toJSON(v)
	if err != nil {
		return err
	}
	out, err := JSONToYAML(raw)
	if err != nil {
		return err
	}
	if doc {
		out = append([]byte("---\n"), out...)
	}
	_, err = p.W.Write(out)
	return err
}

func toJSON(v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if len(x) == 0 {
			return []byte("null"), nil
		}
		return x, nil
	case []byte:
		if !json.Valid(x) {
			return nil, errors.New("output: the value is not JSON")
		}
		return x, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return raw, nil
}

// JSONToYAML renders a JSON document as block-style YAML with the same keys
// in the same order; strings that would read as another type (a decimal
// amount "10.00", "true", "null") stay quoted.
func JSONToYAML(raw []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	plain(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return buf.Bytes(), nil
}

// plain drops the flow and quoting styles the JSON parse recorded, so the
// encoder writes block YAML and quotes only where YAML needs it.
func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

// TableWriter draws the table format: aligned columns (tabwriter), plus
// free lines and key/value blocks around them.
type TableWriter struct {
	w  io.Writer
	tw *tabwriter.Writer
}

// NewTable writes aligned columns to w.
func NewTable(w io.Writer) *TableWriter {
	return &TableWriter{w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// Row writes one row; each cell is rendered with Cell.
func (t *TableWriter) Row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			_, _ = io.WriteString(t.tw, "\t")
		}
		_, _ = io.WriteString(t.tw, strings.NewReplacer("\t", " ", "\n", " ").Replace(Cell(c)))
	}
	_, _ = io.WriteString(t.tw, "\n")
}

// Line writes a line that is not part of the columns (a heading, a note);
// the columns written before it are aligned and flushed first.
func (t *TableWriter) Line(format string, args ...any) {
	_ = t.tw.Flush()
	fmt.Fprintf(t.w, format+"\n", args...)
}

// Flush aligns and writes what is pending.
func (t *TableWriter) Flush() error { return t.tw.Flush() }

// Column is one column of a table of JSON objects: its heading and the
// dotted path of the field it shows ("transaction.id").
type Column struct {
	Header string
	Field  string
}

// Cols builds columns from "HEADER=field.path" pairs.
func Cols(specs ...string) []Column {
	cols := make([]Column, len(specs))
	for i, s := range specs {
		h, f, _ := strings.Cut(s, "=")
		cols[i] = Column{Header: h, Field: f}
	}
	return cols
}

// Objects draws a list of JSON objects (as Decode returns them), one row
// each, under a header row; an empty list prints "(none)".
func (t *TableWriter) Objects(list any, cols []Column) {
	items, _ := list.([]any)
	if len(items) == 0 {
		t.Line("(none)")
		return
	}
	t.Header(cols)
	for _, it := range items {
		t.ObjectRow(it, cols)
	}
}

// Header writes the row of cols' headings.
func (t *TableWriter) Header(cols []Column) {
	hdr := make([]any, len(cols))
	for i, c := range cols {
		hdr[i] = c.Header
	}
	t.Row(hdr...)
}

// ObjectRow writes one JSON object as a row of cols.
func (t *TableWriter) ObjectRow(obj any, cols []Column) {
	row := make([]any, len(cols))
	for i, c := range cols {
		row[i] = Field(obj, c.Field)
	}
	t.Row(row...)
}

// Object draws one JSON object as "HEADER  value" lines.
func (t *TableWriter) Object(obj any, cols []Column) {
	for _, c := range cols {
		t.Row(c.Header, Field(obj, c.Field))
	}
}

// Decode parses JSON into plain values (maps, slices, json.Number, strings,
// bools, nil) for Field and the table helpers.
func Decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return v, nil
}

// Field follows a dotted path of object keys ("transaction.id") through a
// decoded JSON value; a missing step yields nil.
func Field(v any, path string) any {
	if path == "" {
		return v
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Cell renders a value for a table: nil as "-", lists joined with commas,
// objects as compact JSON.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		if len(x) == 0 {
			return "-"
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Cell(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		raw, _ := json.Marshal(x)
		return string(raw)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}
