package cron

import (
	"context"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/platform/fault"
)

// Entry is one crontab entry as the API shows it.
type Entry struct {
	ID       string      `json:"id" required:"true" doc:"stable id: a hash of the entry's user, schedule and command, with -N for the Nth identical entry; editing other lines never changes it, changing this entry's schedule, user or command gives it a new id (the answer names it)"`
	Line     int         `json:"line" required:"true" doc:"1-based line number in the crontab"`
	Schedule string      `json:"schedule" required:"true" doc:"five fields or an @ macro (@reboot, @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually)"`
	Command  string      `json:"command" required:"true" doc:"as cron reads it: run by $SHELL -c; an unescaped % ends the command and the rest (with % as newlines) is its stdin"`
	User     *string     `json:"user" doc:"the user field of a system-format crontab (/etc/crontab, /etc/cron.d); null in a user crontab"`
	Comment  string      `json:"comment" required:"true" doc:"the one comment line directly above the entry, without '# ' (a line of a longer comment block is not an entry's comment)"`
	Enabled  bool        `json:"enabled" required:"true" doc:"false: the line is commented out"`
	Timezone string      `json:"timezone" required:"true" doc:"zone of next_runs: the last CRON_TZ= above the entry, else the service's local zone"`
	NextRuns []time.Time `json:"next_runs" required:"true" doc:"the next 5 times, in timezone; empty for @reboot and for disabled entries"`
	Overlap  string      `json:"overlap" required:"true" enum:"allow,skip,queue" doc:"built-in runner: a run due while the previous one still runs starts anyway (allow, cron's own behaviour), is skipped and recorded as skipped, or waits its turn (queue, at most 100 waiting)"`
	Catchup  string      `json:"catchup" required:"true" enum:"none,last,all" doc:"built-in runner: after downtime, missed times are dropped (none, cron's own behaviour), the latest one runs once (last) or every one runs in order (all, at most 100)"`
	Raw      string      `json:"raw" required:"true" doc:"the entry's line exactly as written"`
}

// EntryList is the answer of GET /api/v1/cron/entries.
type EntryList struct {
	Entries []Entry `json:"entries" required:"true"`
	ETag    string  `json:"etag" required:"true" doc:"the crontab's ETag, also in the ETag header"`
	Crontab string  `json:"crontab" required:"true" doc:"which crontab: a path or the crontab command"`
	Format  string  `json:"format" required:"true" enum:"user,system"`
	Runner  bool    `json:"runner" required:"true" doc:"the built-in runner runs these entries (--cron-runner)"`
}

// CreateEntry is the body of POST /api/v1/cron/entries.
type CreateEntry struct {
	Schedule string `json:"schedule" required:"true"`
	Command  string `json:"command" required:"true"`
	User     string `json:"user" doc:"required in a system-format crontab, refused in a user crontab"`
	Comment  string `json:"comment" doc:"written as one '# comment' line above the entry"`
	Enabled  *bool  `json:"enabled" doc:"default true; false writes the line commented out"`
	Overlap  string `json:"overlap" enum:"allow,skip,queue" doc:"default allow"`
	Catchup  string `json:"catchup" enum:"none,last,all" doc:"default none"`
}

// Validate checks what does not depend on the crontab's format.
func (r *CreateEntry) Validate() error {
	if err := checkSchedule(r.Schedule); err != nil {
		return err
	}
	if err := checkCommand(r.Command); err != nil {
		return err
	}
	return checkCommon(&r.User, &r.Comment, &r.Overlap, &r.Catchup)
}

// UpdateEntry is the body of PATCH /api/v1/cron/entries/{id}: absent
// fields keep their value.
type UpdateEntry struct {
	Schedule *string `json:"schedule"`
	Command  *string `json:"command"`
	User     *string `json:"user"`
	Comment  *string `json:"comment" doc:"\"\" removes the comment line"`
	Enabled  *bool   `json:"enabled"`
	Overlap  *string `json:"overlap" enum:"allow,skip,queue"`
	Catchup  *string `json:"catchup" enum:"none,last,all"`
}

// Validate checks the fields given.
func (r *UpdateEntry) Validate() error {
	if r.Schedule != nil {
		if err := checkSchedule(*r.Schedule); err != nil {
			return err
		}
	}
	if r.Command != nil {
		if err := checkCommand(*r.Command); err != nil {
			return err
		}
	}
	return checkCommon(r.User, r.Comment, r.Overlap, r.Catchup)
}

func checkSchedule(spec string) error {
	if strings.TrimSpace(spec) == "" {
		return invalidSchedule("schedule", "is required")
	}
	if _, err := parseSpec(spec, ""); err != nil {
		return invalidSchedule("schedule", "%s", err.Error())
	}
	return nil
}

func checkCommand(cmd string) error {
	switch {
	case strings.TrimSpace(cmd) == "":
		return fault.Invalid("command", "is required")
	case strings.ContainsAny(cmd, "\n\r\x00"):
		return fault.Invalid("command", "must be one line without NUL")
	case !utf8.ValidString(cmd):
		return fault.Invalid("command", "must be UTF-8")
	case len(cmd) > 4000:
		return fault.Invalid("command", "must be at most 4000 bytes")
	}
	return nil
}

func checkCommon(user, comment, overlap, catchup *string) error {
	if user != nil && *user != "" && !validUser(*user) {
		return fault.Invalid("user", "must be a user name (letters, digits, _ . -; at most 32)")
	}
	if comment != nil {
		c := *comment
		switch {
		case strings.ContainsAny(c, "\n\r\x00") || !utf8.ValidString(c) || len(c) > 1000:
			return fault.Invalid("comment", "must be one UTF-8 line of at most 1000 bytes")
		}
		if _, _, _, err := splitEntry(strings.TrimSpace(c), false); err == nil {
			return fault.Invalid("comment", "reads as a commented-out entry; reword it")
		}
		if _, _, _, err := splitEntry(strings.TrimSpace(c), true); err == nil {
			return fault.Invalid("comment", "reads as a commented-out entry; reword it")
		}
	}
	if overlap != nil && *overlap != "" && !validOverlap[*overlap] {
		return fault.Invalid("overlap", "must be allow, skip or queue")
	}
	if catchup != nil && *catchup != "" && !validCatchup[*catchup] {
		return fault.Invalid("catchup", "must be none, last or all")
	}
	return nil
}

var (
	validOverlap = map[string]bool{"allow": true, "skip": true, "queue": true}
	validCatchup = map[string]bool{"none": true, "last": true, "all": true}
)

// checkUser applies the format's rule for the user field.
func (s *Service) checkUser(user string) error {
	switch {
	case s.system && user == "":
		return fault.Invalid("user", "is required in a system-format crontab (%s)", s.backend.where())
	case !s.system && user != "":
		return fault.Invalid("user", "a user crontab has no user field (%s)", s.backend.where())
	}
	return nil
}

// entryOf renders a parsed entry.
func (s *Service) entryOf(pe parsedEntry, pol Policy, now time.Time) Entry {
	e := Entry{ID: pe.ID, Line: pe.Index + 1, Schedule: pe.Line.spec, Command: pe.Line.command,
		Comment: pe.Comment, Enabled: !pe.Line.disabled, Timezone: pe.Timezone, NextRuns: []time.Time{},
		Overlap: pol.overlap(), Catchup: pol.catchup(), Raw: pe.Line.text}
	if s.system {
		u := pe.Line.user
		e.User = &u
	}
	if e.Timezone == "" {
		e.Timezone = localZone()
	}
	if sch, err := parseSpec(pe.Line.spec, pe.Timezone); err == nil && e.Enabled {
		e.NextRuns = sch.next(now, 5)
	}
	return e
}

// localZone names the service's local zone.
func localZone() string {
	if tz := os.Getenv("TZ"); tz != "" {
		return strings.TrimPrefix(tz, ":")
	}
	if link, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(link, "zoneinfo/"); i >= 0 {
			return link[i+len("zoneinfo/"):]
		}
	}
	name, _ := time.Now().Zone()
	return name
}

// EntryFilter is the query of GET /api/v1/cron/entries.
type EntryFilter struct {
	Enabled *bool `query:"enabled" doc:"only enabled (true) or disabled (false) entries"`
}

// EntryListAnswer is the entry list with the crontab's ETag.
type EntryListAnswer struct {
	ETag string `header:"ETag" doc:"the crontab's ETag"`
	Body EntryList
}

// EntryRef names an entry.
type EntryRef struct {
	ID string `path:"id" doc:"the entry's id"`
}

// Precondition is the crontab's version an edit expects.
type Precondition struct {
	IfMatch string `header:"If-Match" doc:"the crontab's ETag as last read; a stale one answers 412 and nothing is written. Optional: without it the edit applies to the current crontab"`
}

// EntryChange is an edit of one entry without a body (delete, enable,
// disable).
type EntryChange struct {
	EntryRef
	Precondition
}

// NewEntry is POST /api/v1/cron/entries.
type NewEntry struct {
	Precondition
	Body CreateEntry
}

// EntryEdit is PATCH /api/v1/cron/entries/{id}.
type EntryEdit struct {
	EntryRef
	Precondition
	Body UpdateEntry
}

// EntryAnswer is an entry with the crontab's ETag after the call.
type EntryAnswer struct {
	ETag string `header:"ETag" doc:"the crontab's ETag"`
	Body Entry
}

func answer(e Entry, etag string, err error) (EntryAnswer, error) {
	if err != nil {
		return EntryAnswer{}, err
	}
	return EntryAnswer{ETag: etag, Body: e}, nil
}

// List is the crontab's entries in file order.
func (s *Service) List(ctx context.Context, f EntryFilter) (EntryListAnswer, error) {
	raw, err := s.backend.read(ctx)
	s.note(err)
	if err != nil {
		return EntryListAnswer{}, err
	}
	l, err := s.listOf(parseCrontab(raw, s.system), etagOf(raw))
	if err != nil {
		return EntryListAnswer{}, err
	}
	if f.Enabled != nil {
		keep := []Entry{}
		for _, e := range l.Entries {
			if e.Enabled == *f.Enabled {
				keep = append(keep, e)
			}
		}
		l.Entries = keep
	}
	return EntryListAnswer{ETag: l.ETag, Body: l}, nil
}

func (s *Service) listOf(d *doc, etag string) (EntryList, error) {
	pols, err := s.policies()
	if err != nil {
		return EntryList{}, err
	}
	format := "user"
	if s.system {
		format = "system"
	}
	out := EntryList{Entries: []Entry{}, ETag: etag, Crontab: s.backend.where(), Format: format, Runner: s.set.Runner}
	now := s.deps.Clock.Now()
	for _, pe := range d.entries() {
		out.Entries = append(out.Entries, s.entryOf(pe, pols[pe.ID], now))
	}
	return out, nil
}

// Get is one entry and the crontab's ETag.
func (s *Service) Get(ctx context.Context, ref EntryRef) (EntryAnswer, error) {
	l, err := s.List(ctx, EntryFilter{})
	if err != nil {
		return EntryAnswer{}, err
	}
	for _, e := range l.Body.Entries {
		if e.ID == ref.ID {
			return EntryAnswer{ETag: l.ETag, Body: e}, nil
		}
	}
	return EntryAnswer{}, fault.NotFound("entry", ref.ID)
}

// entryAt answers the entry on line index of d.
func (s *Service) entryAt(d *doc, index int) (Entry, string, error) {
	l, err := s.listOf(d, etagOf(d.render()))
	if err != nil {
		return Entry{}, "", err
	}
	for _, e := range l.Entries {
		if e.Line == index+1 {
			return e, l.ETag, nil
		}
	}
	return Entry{}, "", fault.Internal("find the written entry", nil)
}

// Create appends an entry (and its comment line) at the end of the crontab.
func (s *Service) Create(ctx context.Context, in NewEntry) (EntryAnswer, error) {
	req := in.Body
	if err := req.Validate(); err != nil {
		return EntryAnswer{}, err
	}
	if err := s.checkUser(req.User); err != nil {
		return EntryAnswer{}, err
	}
	index := -1
	d, err := s.modify(ctx, in.IfMatch, func(d *doc) error {
		d.terminateLast()
		var add []line
		if n := len(d.lines); n > 0 && d.lines[n-1].kind == kindComment {
			// Keep the new entry apart from a comment above it, which
			// would otherwise read as its comment (or join a block).
			add = append(add, line{eol: "\n", kind: kindBlank})
		}
		if req.Comment != "" {
			add = append(add, d.newLine("# "+strings.TrimSpace(req.Comment)))
		}
		text := entryText(strings.Join(strings.Fields(req.Schedule), " "), req.User, strings.TrimSpace(req.Command))
		if req.Enabled != nil && !*req.Enabled {
			text = "# " + text
		}
		l := d.newLine(text)
		if l.kind != kindEntry {
			return invalidSchedule("schedule", "the entry does not read back as one (%s)", l.bad)
		}
		index = len(d.lines) + len(add)
		d.insert(len(d.lines), append(add, l)...)
		return s.stagePolicy(d, index, "", Policy{Overlap: req.Overlap, Catchup: req.Catchup})
	})
	if err != nil {
		return EntryAnswer{}, err
	}
	return answer(s.entryAt(d, index))
}

// Update changes an entry in place; lines it does not change keep their
// bytes (changing only policies leaves the crontab untouched).
func (s *Service) Update(ctx context.Context, in EntryEdit) (EntryAnswer, error) {
	return answer(s.update(ctx, in.IfMatch, in.ID, in.Body))
}

func (s *Service) update(ctx context.Context, ifMatch, id string, req UpdateEntry) (Entry, string, error) {
	if err := req.Validate(); err != nil {
		return Entry{}, "", err
	}
	index := -1
	d, err := s.modify(ctx, ifMatch, func(d *doc) error {
		pe, ok := d.find(id)
		if !ok {
			return fault.NotFound("entry", id)
		}
		l := pe.Line
		spec, user, command, enabled := l.spec, l.user, l.command, !l.disabled
		if req.Schedule != nil {
			spec = strings.Join(strings.Fields(*req.Schedule), " ")
		}
		if req.User != nil {
			user = *req.User
		}
		if req.Command != nil {
			command = strings.TrimSpace(*req.Command)
		}
		if req.Enabled != nil {
			enabled = *req.Enabled
		}
		if err := s.checkUser(user); err != nil {
			return err
		}
		index = pe.Index
		if spec != l.spec || user != l.user || command != l.command || enabled == l.disabled {
			text := entryText(spec, user, command)
			if spec == l.spec && user == l.user && command == l.command {
				text = toggled(l.text, enabled) // keep the line's own spacing
			} else if !enabled {
				text = "# " + text
			}
			nl := d.newLine(text)
			nl.eol = l.eol
			if nl.kind != kindEntry {
				return invalidSchedule("schedule", "the entry does not read back as one (%s)", nl.bad)
			}
			d.lines[index] = nl
		}
		if req.Comment != nil {
			c := strings.TrimSpace(*req.Comment)
			switch {
			case pe.hasNote && c == "":
				d.remove(index-1, index)
				index--
			case pe.hasNote:
				d.lines[index-1] = d.newLine("# " + c)
			case c != "":
				add := []line{d.newLine("# " + c)}
				if index > 0 && d.lines[index-1].kind == kindComment {
					add = append([]line{{eol: "\n", kind: kindBlank}}, add...)
				}
				d.insert(index, add...)
				index += len(add)
			}
		}
		pol, err := s.policy(id)
		if err != nil {
			return err
		}
		if req.Overlap != nil {
			pol.Overlap = *req.Overlap
		}
		if req.Catchup != nil {
			pol.Catchup = *req.Catchup
		}
		return s.stagePolicy(d, index, id, pol)
	})
	if err != nil {
		return Entry{}, "", err
	}
	return s.entryAt(d, index)
}

// toggled comments a line out ("# " + line) or back in (without the '#'
// and the blanks after it).
func toggled(text string, enabled bool) string {
	t := strings.TrimLeft(text, " \t")
	if enabled {
		if strings.HasPrefix(t, "#") {
			return strings.TrimLeft(t[1:], " \t")
		}
		return text
	}
	if strings.HasPrefix(t, "#") {
		return text
	}
	return "# " + text
}

// Delete removes an entry and its comment line; it answers the entry.
func (s *Service) Delete(ctx context.Context, in EntryChange) (EntryAnswer, error) {
	id := in.ID
	var gone Entry
	d, err := s.modify(ctx, in.IfMatch, func(d *doc) error {
		pe, ok := d.find(id)
		if !ok {
			return fault.NotFound("entry", id)
		}
		pols, err := s.policies()
		if err != nil {
			return err
		}
		gone = s.entryOf(pe, pols[id], s.deps.Clock.Now())
		from := pe.Index
		if pe.hasNote {
			from--
		}
		d.remove(from, pe.Index+1)
		return s.dropPolicy(d, id)
	})
	if err != nil {
		return EntryAnswer{}, err
	}
	return EntryAnswer{ETag: etagOf(d.render()), Body: gone}, nil
}

// Enable uncomments an entry's line; its id stays.
func (s *Service) Enable(ctx context.Context, in EntryChange) (EntryAnswer, error) {
	yes := true
	return answer(s.update(ctx, in.IfMatch, in.ID, UpdateEntry{Enabled: &yes}))
}

// Disable comments an entry's line out; its id stays.
func (s *Service) Disable(ctx context.Context, in EntryChange) (EntryAnswer, error) {
	no := false
	return answer(s.update(ctx, in.IfMatch, in.ID, UpdateEntry{Enabled: &no}))
}
