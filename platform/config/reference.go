package config

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docDefault is the annotation that holds a flag's default as the
// reference states it, for a default computed from where the binary runs.
const docDefault = "deckhand_doc_default"

// DocDefault sets how the reference states the default of flag name in
// fs: for a default computed from the machine or the user running the
// binary (a home directory), which would otherwise print as the value of
// whoever generated the page.
func DocDefault(fs *pflag.FlagSet, name, text string) {
	if err := fs.SetAnnotation(name, docDefault, []string{text}); err != nil {
		panic(err) // a flag declared in the same function: a typo is a bug
	}
}

// Reference is the command-line reference of a binary in Markdown,
// generated from its command tree: every visible command with its usage,
// description and flags, each flag with its environment variable (see
// EnvName), type and default. docs/reference/cli holds it for each
// binary; their tests fail when it no longer matches the flags.
func Reference(root *cobra.Command) []byte {
	var b bytes.Buffer
	name := root.Name()
	fmt.Fprintf(&b, "<!-- Generated from %s's flags by `make docs-flags`; do not edit. -->\n\n", name)
	fmt.Fprintf(&b, "# %s command-line reference\n\n", name)
	fmt.Fprintf(&b, "Every flag can also be set with the environment variable beside it; a flag given on the command line beats the variable.")
	if root.HasAvailablePersistentFlags() {
		fmt.Fprintf(&b, " The flags of `%s` are taken by every command.", name)
	}
	b.WriteString("\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && !c.IsAvailableCommand() {
			return
		}
		writeCommand(&b, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.Bytes()
}

func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	about := c.Long
	if strings.TrimSpace(about) == "" {
		about = c.Short
	}
	if about = strings.TrimSpace(about); about != "" {
		b.WriteString(prose(about) + "\n\n")
	}
	if c.Runnable() {
		fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	}
	subs := available(c.Commands())
	if len(subs) > 0 {
		b.WriteString("| Command | |\n|---|---|\n")
		for _, s := range subs {
			fmt.Fprintf(b, "| [`%s`](#%s) | %s |\n", s.Name(), anchor(s.CommandPath()), cell(s.Short))
		}
	}
	var flags []*pflag.Flag
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			flags = append(flags, f)
		}
	})
	if len(flags) == 0 {
		return
	}
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	if len(subs) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("| Flag | Environment | Type | Default | Description |\n|---|---|---|---|---|\n")
	for _, f := range flags {
		flag := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			flag = "`-" + f.Shorthand + "`, " + flag
		}
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s |\n", flag, EnvName(f.Name), f.Value.Type(), defaultOf(f), cell(f.Usage))
	}
}

func available(cmds []*cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cmds {
		if c.IsAvailableCommand() {
			out = append(out, c)
		}
	}
	return out
}

// defaultOf is the flag's default as the reference shows it: its
// DocDefault, else its value when it has one.
func defaultOf(f *pflag.Flag) string {
	if d := f.Annotations[docDefault]; len(d) > 0 {
		return cell(d[0])
	}
	switch f.DefValue {
	case "", "[]":
		return ""
	}
	return "`" + f.DefValue + "`"
}

// prose is help text as Markdown shows it: <data> and *.domain as
// written, not as a tag or emphasis.
var prose = strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`, `\`, `\\`).Replace

// cell is help text inside one Markdown table cell: one line, with its
// pipes escaped.
func cell(s string) string {
	return strings.ReplaceAll(prose(strings.Join(strings.Fields(s), " ")), "|", `\|`)
}

// anchor is the heading id GitHub gives "## path".
func anchor(path string) string { return strings.ReplaceAll(strings.ToLower(path), " ", "-") }
