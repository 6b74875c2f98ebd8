package cron

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"

	"deckhand/platform/fault"
)

// CodeInvalidSchedule is a schedule (or a crontab line) cron would refuse.
const CodeInvalidSchedule = "INVALID_SCHEDULE"

func init() { fault.RegisterCode(CodeInvalidSchedule, http.StatusBadRequest) }

// invalidSchedule names the field (or "crontab line N") and the rule.
func invalidSchedule(field, format string, args ...any) *fault.Error {
	return &fault.Error{Code: CodeInvalidSchedule, Field: field, Details: field,
		Message: field + ": " + fmt.Sprintf(format, args...)}
}

// parser reads what crontab(5) allows: five fields (names for months and
// days included) and the @ macros. @every is robfig's own and no cron
// daemon reads it, so it is refused; @reboot is handled before robfig.
var parser = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// schedule is a parsed schedule; reboot schedules have no times.
type schedule struct {
	reboot bool
	sched  robfig.Schedule
	loc    *time.Location
}

// parseSpec parses a crontab schedule in zone tz ("" = the service's local
// zone, as the cron daemon uses).
func parseSpec(spec, tz string) (schedule, error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return schedule{}, errEntry("empty schedule")
	case strings.ContainsAny(spec, "\n\r\x00"):
		return schedule{}, errEntry("must be one line")
	case spec == "@reboot":
		return schedule{reboot: true}, nil
	case strings.HasPrefix(spec, "@every"):
		return schedule{}, errEntry("@every is not crontab syntax (use five fields or @hourly, @daily, @weekly, @monthly, @yearly, @reboot)")
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		return schedule{}, errEntry("set the time zone with a CRON_TZ= line, not in the schedule")
	}
	if !strings.HasPrefix(spec, "@") {
		f := strings.Fields(spec)
		if len(f) != 5 {
			return schedule{}, errEntry(fmt.Sprintf("expected five fields (minute hour day-of-month month day-of-week), got %d", len(f)))
		}
		f[4] = sundaySeven(f[4])
		spec = strings.Join(f, " ")
	}
	loc, err := loadZone(tz)
	if err != nil {
		return schedule{}, err
	}
	s, err := parser.Parse(spec)
	if err != nil {
		return schedule{}, errEntry(err.Error())
	}
	switch v := s.(type) {
	case *robfig.SpecSchedule:
		v.Location = loc
	}
	return schedule{sched: s, loc: loc}, nil
}

// sundaySeven maps cron's 7 (Sunday, as crontab(5) allows) to robfig's 0.
func sundaySeven(dow string) string {
	parts := strings.Split(dow, ",")
	for i, p := range parts {
		switch {
		case p == "7":
			parts[i] = "0"
		case strings.HasSuffix(p, "-7") && !strings.Contains(p, "/"):
			parts[i] = strings.TrimSuffix(p, "-7") + "-6,0"
		}
	}
	return strings.Join(parts, ",")
}

func loadZone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, errEntry(fmt.Sprintf("unknown time zone %q", tz))
	}
	return loc, nil
}

// next is the schedule's next n times after t, in the schedule's zone.
func (s schedule) next(t time.Time, n int) []time.Time {
	out := []time.Time{}
	if s.reboot || s.sched == nil {
		return out
	}
	for len(out) < n {
		t = s.sched.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t.In(s.loc))
	}
	return out
}
