package cron

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
)

// A crontab is kept as its lines, each with its exact bytes: the service
// changes only the lines an operation names and writes every other line
// back untouched, so comments, variables and lines it does not understand
// survive byte for byte.

type lineKind int

const (
	kindOther   lineKind = iota // not understood: kept as is
	kindBlank                   // only blanks
	kindComment                 // # text (that is not a disabled entry)
	kindVar                     // NAME=value
	kindEntry                   // an entry, enabled or disabled (commented out)
)

// line is one line of a crontab.
type line struct {
	text string // without its terminator
	eol  string // "\n", or "" for a last line without one
	kind lineKind

	// kindVar
	name, value string

	// kindEntry
	disabled bool
	spec     string // schedule fields joined by single spaces
	user     string // system format only
	command  string
	// kindOther: why a line that looks like an entry is not one
	bad string
}

// doc is a parsed crontab.
type doc struct {
	system bool // /etc/crontab format: a user field after the schedule
	lines  []line
	// undo reverts what an edit staged in the store, when the crontab
	// write then fails (nothing partial is left).
	undo []func()
}

var varLine = regexp.MustCompile(`^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(.*?)[ \t]*$`)

// parseCrontab splits text into lines and classifies each.
func parseCrontab(text []byte, system bool) *doc {
	d := &doc{system: system}
	s := string(text)
	for len(s) > 0 {
		l := line{}
		var nl bool
		if l.text, s, nl = strings.Cut(s, "\n"); nl {
			l.eol = "\n"
		}
		d.lines = append(d.lines, classify(l, system))
	}
	return d
}

func classify(l line, system bool) line {
	t := strings.TrimLeft(l.text, " \t")
	switch {
	case t == "" || strings.TrimSpace(t) == "":
		l.kind = kindBlank
	case t[0] == '#':
		l.kind = kindComment
		if spec, user, cmd, err := splitEntry(strings.TrimLeft(t[1:], " \t"), system); err == nil {
			l.kind, l.disabled, l.spec, l.user, l.command = kindEntry, true, spec, user, cmd
		}
	case looksLikeEntry(t):
		spec, user, cmd, err := splitEntry(t, system)
		if err != nil {
			l.kind, l.bad = kindOther, err.Error()
			break
		}
		l.kind, l.spec, l.user, l.command = kindEntry, spec, user, cmd
	default:
		if m := varLine.FindStringSubmatch(l.text); m != nil {
			l.kind, l.name, l.value = kindVar, m[1], unquote(m[2])
		}
	}
	return l
}

// looksLikeEntry: a schedule starts with a digit, * or @.
func looksLikeEntry(t string) bool {
	return t != "" && (t[0] >= '0' && t[0] <= '9' || t[0] == '*' || t[0] == '@')
}

// unquote strips one pair of matching quotes, as cron does for values.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// splitEntry reads "<schedule> [user] <command>". The schedule is an @
// macro or five fields; it must parse (parseSpec) for the line to be an
// entry.
func splitEntry(t string, system bool) (spec, user, cmd string, err error) {
	nfields := 5
	if strings.HasPrefix(t, "@") {
		nfields = 1
	}
	if system {
		nfields++
	}
	var fields []string
	rest := t
	for len(fields) < nfields {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return "", "", "", errEntry("too few fields")
		}
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		fields, rest = append(fields, rest[:end]), rest[end:]
	}
	cmd = strings.TrimLeft(rest, " \t")
	if strings.TrimSpace(cmd) == "" {
		return "", "", "", errEntry("no command")
	}
	if system {
		user, fields = fields[len(fields)-1], fields[:len(fields)-1]
		if !validUser(user) {
			return "", "", "", errEntry("bad user " + strconv.Quote(user))
		}
	}
	spec = strings.Join(fields, " ")
	if _, err := parseSpec(spec, ""); err != nil {
		return "", "", "", err
	}
	return spec, user, cmd, nil
}

type errEntry string

func (e errEntry) Error() string { return string(e) }

var userName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)

func validUser(u string) bool { return len(u) <= 32 && userName.MatchString(u) }

// render is the text of the crontab.
func (d *doc) render() []byte {
	var b strings.Builder
	for _, l := range d.lines {
		b.WriteString(l.text)
		b.WriteString(l.eol)
	}
	return []byte(b.String())
}

// entryText is the line of an enabled entry.
func entryText(spec, user, command string) string {
	if user != "" {
		return spec + " " + user + " " + command
	}
	return spec + " " + command
}

// parsedEntry is an entry with what the lines around it give it.
type parsedEntry struct {
	ID       string
	Index    int // in doc.lines
	Line     line
	Comment  string
	hasNote  bool // Index-1 is this entry's comment line
	Timezone string
	Env      []string // NAME=value of the variables above it, in order
}

// entryID names an entry by what it does: its user, schedule and command
// (the same whether enabled or disabled), plus its occurrence among equal
// entries. Editing other lines never changes it.
func entryID(l line, occurrence int) string {
	sum := sha256.Sum256([]byte(l.user + "\x00" + l.spec + "\x00" + l.command))
	id := "e_" + hex.EncodeToString(sum[:6])
	if occurrence > 1 {
		id += "-" + strconv.Itoa(occurrence)
	}
	return id
}

// entries lists the entries in file order with their ids, comments,
// timezones (the last CRON_TZ above) and environments.
func (d *doc) entries() []parsedEntry {
	var (
		out  []parsedEntry
		seen = map[string]int{}
		tz   string
		env  []string
	)
	for i, l := range d.lines {
		switch l.kind {
		case kindVar:
			if l.name == "CRON_TZ" {
				tz = l.value
			}
			env = append(env, l.name+"="+l.value)
		case kindEntry:
			key := l.user + "\x00" + l.spec + "\x00" + l.command
			seen[key]++
			e := parsedEntry{ID: entryID(l, seen[key]), Index: i, Line: l, Timezone: tz, Env: append([]string(nil), env...)}
			e.Comment, e.hasNote = d.noteAbove(i)
			out = append(out, e)
		}
	}
	return out
}

// noteAbove is the comment of the entry at i: a comment line directly above
// it that is not part of a longer comment block (a block is a header or a
// section note, not this entry's).
func (d *doc) noteAbove(i int) (string, bool) {
	if i == 0 || !d.isNote(i-1) {
		return "", false
	}
	if i >= 2 && d.lines[i-2].kind == kindComment {
		return "", false
	}
	t := strings.TrimLeft(d.lines[i-1].text, " \t")
	t = strings.TrimPrefix(t[1:], " ")
	return strings.TrimRight(t, " \t\r"), true
}

func (d *doc) isNote(i int) bool { return d.lines[i].kind == kindComment }

// find is the entry with id.
func (d *doc) find(id string) (parsedEntry, bool) {
	for _, e := range d.entries() {
		if e.ID == id {
			return e, true
		}
	}
	return parsedEntry{}, false
}

// insert puts lines at index i.
func (d *doc) insert(i int, ls ...line) {
	d.lines = append(d.lines[:i], append(ls, d.lines[i:]...)...)
}

// remove deletes the lines [i, j).
func (d *doc) remove(i, j int) {
	d.lines = append(d.lines[:i], d.lines[j:]...)
}

// terminateLast gives the last line a newline before lines are appended.
func (d *doc) terminateLast() {
	if n := len(d.lines); n > 0 && d.lines[n-1].eol == "" {
		d.lines[n-1].eol = "\n"
	}
}

// newLine builds and classifies a line.
func (d *doc) newLine(text string) line {
	return classify(line{text: text, eol: "\n"}, d.system)
}

// problems lists the lines cron would refuse: lines that look like entries
// but do not parse, and CRON_TZ values that are not time zones.
func (d *doc) problems() (lineNo int, reason string) {
	for i, l := range d.lines {
		switch {
		case l.kind == kindOther && l.bad != "":
			return i + 1, l.bad
		case l.kind == kindVar && l.name == "CRON_TZ":
			if _, err := loadZone(l.value); err != nil {
				return i + 1, "CRON_TZ: unknown time zone " + strconv.Quote(l.value)
			}
		case strings.IndexByte(l.text, 0) >= 0:
			return i + 1, "NUL byte"
		}
	}
	return 0, ""
}
