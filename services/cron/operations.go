package cron

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
)

// ValidateRequest is the body of POST /api/v1/cron/validate.
type ValidateRequest struct {
	Schedule string `json:"schedule" required:"true"`
	Timezone string `json:"timezone" doc:"IANA zone for next_runs (default: the service's local zone), as a CRON_TZ= line above the entry would set it"`
	Count    int    `json:"count" minimum:"1" maximum:"100" doc:"how many next times (default 5)"`
}

// Validate checks the schedule, the zone and the count.
func (r *ValidateRequest) Validate() error {
	if err := checkSchedule(r.Schedule); err != nil {
		return err
	}
	if _, err := loadZone(r.Timezone); err != nil {
		return invalidSchedule("timezone", "%s", err.Error())
	}
	if r.Count != 0 && (r.Count < 1 || r.Count > 100) {
		return fault.Invalid("count", "must be 1 to 100")
	}
	return nil
}

// ValidateResult is the answer of a valid schedule.
type ValidateResult struct {
	Schedule string      `json:"schedule" required:"true" doc:"normalised: fields separated by one space"`
	Timezone string      `json:"timezone" required:"true"`
	Reboot   bool        `json:"reboot" required:"true" doc:"@reboot: runs at boot, has no next times"`
	NextRuns []time.Time `json:"next_runs" required:"true"`
}

// CrontabWritten is the answer of PUT /api/v1/cron/crontab.
type CrontabWritten struct {
	ETag    string `json:"etag" required:"true"`
	Bytes   int    `json:"bytes" required:"true"`
	Entries int    `json:"entries" required:"true"`
	Backup  string `json:"backup" required:"true" doc:"where the previous content was kept"`
}

// ValidateSchedule answers a valid request's normalised schedule and next
// times (the binder ran req.Validate).
func (s *Service) ValidateSchedule(_ context.Context, req ValidateRequest) (ValidateResult, error) {
	spec := strings.Join(strings.Fields(req.Schedule), " ")
	sch, _ := parseSpec(spec, req.Timezone)
	n := cmp.Or(req.Count, 5)
	tz := req.Timezone
	if tz == "" {
		tz = localZone()
	}
	return ValidateResult{Schedule: spec, Timezone: tz, Reboot: sch.reboot, NextRuns: sch.next(s.deps.Clock.Now(), n)}, nil
}

// RawCrontab is the crontab's exact bytes with its ETag.
type RawCrontab struct {
	ETag string `header:"ETag" doc:"the crontab's ETag"`
	Body []byte
}

// Raw is the crontab's bytes and ETag.
func (s *Service) Raw(ctx context.Context) (RawCrontab, error) {
	raw, err := s.backend.read(ctx)
	s.note(err)
	if err != nil {
		return RawCrontab{}, err
	}
	return RawCrontab{ETag: etagOf(raw), Body: raw}, nil
}

// CrontabPut is PUT /api/v1/cron/crontab: the new content, as sent.
type CrontabPut struct {
	IfMatch string `header:"If-Match" doc:"required: the ETag of GET /api/v1/cron/crontab, or * (428 without it)"`
	Body    []byte
}

// CrontabWrittenAnswer is CrontabWritten with the new ETag as a header.
type CrontabWrittenAnswer struct {
	ETag string `header:"ETag" doc:"the crontab's new ETag"`
	Body CrontabWritten
}

// PutRaw replaces the crontab when If-Match is its current ETag (or *).
func (s *Service) PutRaw(ctx context.Context, in CrontabPut) (CrontabWrittenAnswer, error) {
	if strings.TrimSpace(in.IfMatch) == "" {
		return CrontabWrittenAnswer{}, &fault.Error{Code: fault.CodePreconditionRequired, Details: "If-Match",
			Message: "If-Match: required to replace the crontab (the ETag of GET /api/v1/cron/crontab, or *)"}
	}
	content := in.Body
	if n, why := parseCrontab(content, s.system).problems(); n > 0 {
		return CrontabWrittenAnswer{}, invalidSchedule("crontab line "+strconv.Itoa(n), "%s", why)
	}
	d, err := s.modify(ctx, in.IfMatch, func(d *doc) error {
		d.lines = parseCrontab(content, s.system).lines
		return nil
	})
	if err != nil {
		return CrontabWrittenAnswer{}, err
	}
	w := CrontabWritten{ETag: etagOf(content), Bytes: len(content), Entries: len(d.entries()), Backup: s.backend.backupPath()}
	return CrontabWrittenAnswer{ETag: w.ETag, Body: w}, nil
}

// RunNow starts an entry's command now.
func (s *Service) RunNow(ctx context.Context, ref EntryRef) (Run, error) {
	id := ref.ID
	d, err := s.readDoc(ctx)
	if err != nil {
		return Run{}, err
	}
	pe, ok := d.find(id)
	if !ok {
		return Run{}, fault.NotFound("entry", id)
	}
	sch, _ := parseSpec(pe.Line.spec, pe.Timezone)
	return s.run.fire(fire{job: job{id: pe.ID, spec: pe.Line.spec, user: pe.Line.user, command: pe.Line.command,
		env: pe.Env, tz: pe.Timezone, sched: sch}, trigger: "manual"})
}
