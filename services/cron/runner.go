package cron

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/timeloop"
)

// The built-in runner (--cron-runner) schedules the crontab's enabled
// entries itself. robfig/cron parses each schedule and computes its next
// times; the loop around it is platform/timeloop's, because robfig's Cron
// can neither catch up after downtime nor run on an injected clock. Each
// step re-reads
// the crontab when it changed on disk (the file's mtime/size/inode each
// tick; `crontab -l` every 5 s with the crontab command), and keeps a
// checkpoint in the store: after a restart, times between the checkpoint
// and now are "missed" and the entry's catch-up policy decides.

const (
	// grace: a time that came due less than this ago still runs as
	// scheduled (a quick restart does not lose it); older ones are missed.
	grace = time.Minute
	// maxCatchup bounds the missed runs "all" replays and the queue.
	maxCatchup = 100
	maxQueue   = 100
	// commandReread is how often the crontab command is re-read for changes.
	commandReread   = 5 * time.Second
	checkpointEvery = 10 * time.Second
)

type job struct {
	id, spec, user, command string
	env                     []string
	tz                      string
	sched                   schedule
	next                    time.Time
}

type fire struct {
	job     job
	at      *time.Time
	trigger string
}

type runner struct {
	s  *Service
	on bool

	ctx    context.Context // cancelled by close: runs in progress are killed
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	jobs    map[string]*job
	etag    string
	active  map[string]int
	waiting map[string][]queued
	// lastEnded is when the last run ended (Activity).
	lastEnded time.Time

	stampSeen  string
	readAt     time.Time
	checkpoint time.Time
	savedAt    time.Time
}

type queued struct {
	f   fire
	run Run
}

func newRunner(s *Service) *runner {
	r := &runner{s: s, jobs: map[string]*job{}, active: map[string]int{}, waiting: map[string][]queued{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

func (r *runner) now() time.Time { return r.s.deps.Clock.Now() }

// start closes records a previous process left running and, with the
// runner on, schedules the entries from the checkpoint (catch-up) and runs
// @reboot entries once per boot.
func (r *runner) start(on bool) error {
	r.on = on
	if err := r.s.markInterrupted(r.now()); err != nil {
		return err
	}
	if !on {
		close(r.done)
		return nil
	}
	var cp time.Time
	if ok, err := r.s.loadState(keyCheckpoint, &cp); err != nil {
		return err
	} else if ok {
		r.checkpoint = cp
	}
	d, err := r.s.readDoc(context.Background())
	if err == nil {
		r.load(d, etagOf(d.render()))
		r.runReboot(d)
	} else {
		r.s.log.Error("cron: read the crontab", "err", err)
	}
	// The first tick (catch-up included) happens before New returns.
	r.tick(r.now())
	go r.loop()
	return nil
}

// jobsOf are the enabled entries of d.
func (r *runner) jobsOf(d *doc) map[string]*job {
	out := map[string]*job{}
	for _, pe := range d.entries() {
		if pe.Line.disabled {
			continue
		}
		sch, err := parseSpec(pe.Line.spec, pe.Timezone)
		if err != nil {
			continue // a CRON_TZ that is not a zone: cron would refuse the crontab too
		}
		out[pe.ID] = &job{id: pe.ID, spec: pe.Line.spec, user: pe.Line.user, command: pe.Line.command,
			env: pe.Env, tz: pe.Timezone, sched: sch}
	}
	return out
}

// load replaces the scheduled entries with d's. An entry that stays keeps
// its next time; a new one starts from the checkpoint at the first load
// (so missed times are seen) and from now later.
func (r *runner) load(d *doc, etag string) {
	if !r.on {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if etag == r.etag && len(r.jobs) > 0 {
		return
	}
	first := r.etag == ""
	r.etag = etag
	now := r.now()
	jobs := r.jobsOf(d)
	for id, j := range jobs {
		if old, ok := r.jobs[id]; ok && old.tz == j.tz {
			j.next = old.next
			continue
		}
		from := now
		if first && !r.checkpoint.IsZero() && r.checkpoint.Before(now) {
			from = r.checkpoint
		}
		if t := j.sched.next(from, 1); len(t) == 1 {
			j.next = t[0]
		}
	}
	r.jobs = jobs
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// runReboot runs the @reboot entries when this is the first start of the
// runner since the machine booted (the boot id differs from the stored one).
func (r *runner) runReboot(d *doc) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return
	}
	id := strings.TrimSpace(string(boot))
	var seen string
	if _, err := r.s.loadState(keyBootID, &seen); err != nil || seen == id {
		return
	}
	if err := r.s.saveState(keyBootID, id); err != nil {
		return
	}
	for _, j := range r.jobsOf(d) {
		if j.sched.reboot {
			r.fire(fire{job: *j, trigger: "reboot"})
		}
	}
}

func (r *runner) loop() {
	defer close(r.done)
	timeloop.Run(r.ctx, r.s.deps.Clock, r.wake, func(now time.Time) time.Time {
		r.reloadIfChanged()
		r.tick(now)
		r.mu.Lock()
		defer r.mu.Unlock()
		var next time.Time
		for _, j := range r.jobs {
			if !j.next.IsZero() && (next.IsZero() || j.next.Before(next)) {
				next = j.next
			}
		}
		return next
	})
}

// reloadIfChanged re-reads the crontab when it changed on disk.
func (r *runner) reloadIfChanged() {
	st := r.s.backend.stamp()
	if st != "" && st == r.stampSeen {
		return
	}
	if st == "" && time.Since(r.readAt) < commandReread {
		return
	}
	r.stampSeen, r.readAt = st, time.Now()
	d, err := r.s.readDoc(r.ctx)
	if err != nil {
		return // /health reports it; the entries loaded last keep running
	}
	r.load(d, etagOf(d.render()))
}

// tick fires every time that came due up to now: on time ones as
// scheduled, missed ones by the entry's catch-up policy.
func (r *runner) tick(now time.Time) {
	r.mu.Lock()
	var fires []fire
	for _, id := range slices.Sorted(maps.Keys(r.jobs)) {
		j := r.jobs[id]
		var due []time.Time
		for !j.next.IsZero() && !j.next.After(now) {
			due = append(due, j.next)
			nt := j.sched.next(j.next, 1)
			if len(nt) == 0 {
				j.next = time.Time{}
				break
			}
			j.next = nt[0]
			if len(due) > 10*maxCatchup {
				// Far behind (a very old checkpoint): skip ahead.
				if nt := j.sched.next(now, 1); len(nt) == 1 {
					j.next = nt[0]
				}
				break
			}
		}
		var missed []time.Time
		for _, t := range due {
			if now.Sub(t) >= grace {
				missed = append(missed, t)
				continue
			}
			fires = append(fires, fire{job: *j, at: &t, trigger: "schedule"})
		}
		if len(missed) > 0 {
			pol, _ := r.s.policy(id)
			var replay []time.Time
			switch pol.catchup() {
			case "last":
				replay = missed[len(missed)-1:]
			case "all":
				replay = missed
				if len(replay) > maxCatchup {
					replay = replay[len(replay)-maxCatchup:]
				}
			}
			var cf []fire
			for _, t := range replay {
				cf = append(cf, fire{job: *j, at: &t, trigger: "catchup"})
			}
			fires = append(cf, fires...)
		}
	}
	if now.After(r.checkpoint) {
		r.checkpoint = now
	}
	save := len(fires) > 0 || now.Sub(r.savedAt) >= checkpointEvery || now.Before(r.savedAt)
	cp := r.checkpoint
	r.mu.Unlock()
	if save {
		if err := r.s.saveState(keyCheckpoint, cp); err == nil {
			r.savedAt = now
		}
	}
	for _, f := range fires {
		r.fire(f)
	}
}

// fire starts a run of f's entry, or queues or skips it by the entry's
// overlap policy; it answers the run's record.
func (r *runner) fire(f fire) (Run, error) {
	pol, err := r.s.policy(f.job.id)
	if err != nil {
		return Run{}, err
	}
	run := Run{EntryID: f.job.id, Schedule: f.job.spec, Command: f.job.command, User: f.job.user,
		Trigger: f.trigger, ScheduledAt: f.at, StartedAt: r.now(), Output: ""}
	r.mu.Lock()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		return Run{}, fault.Errorf(fault.CodeUnavailable, "the cron service is stopping")
	}
	if r.active[f.job.id] > 0 {
		switch pol.overlap() {
		case "skip":
			r.mu.Unlock()
			return r.skipped(run, "skipped: the previous run still runs (overlap=skip)")
		case "queue":
			if len(r.waiting[f.job.id]) >= maxQueue {
				r.mu.Unlock()
				return r.skipped(run, "skipped: 100 runs already wait (overlap=queue)")
			}
			run.Status = "queued"
			if err := r.s.saveRun(&run); err != nil {
				r.mu.Unlock()
				return Run{}, fault.Internal("record the run", err)
			}
			r.waiting[f.job.id] = append(r.waiting[f.job.id], queued{f: f, run: run})
			r.mu.Unlock()
			return run, nil
		}
	}
	run.Status = "running"
	if err := r.s.saveRun(&run); err != nil {
		r.mu.Unlock()
		return Run{}, fault.Internal("record the run", err)
	}
	r.active[f.job.id]++
	r.wg.Add(1)
	r.mu.Unlock()
	go r.execute(f, run)
	return run, nil
}

func (r *runner) skipped(run Run, why string) (Run, error) {
	end := run.StartedAt
	run.Status, run.EndedAt, run.Error = "skipped", &end, why
	if err := r.s.saveRun(&run); err != nil {
		return Run{}, fault.Internal("record the run", err)
	}
	return run, nil
}

// execute runs one command, then the next queued run of the same entry.
func (r *runner) execute(f fire, run Run) {
	defer r.wg.Done()
	for {
		run.Status, run.StartedAt = "running", r.now()
		if err := r.s.saveRun(&run); err != nil {
			r.s.log.Error("cron: record run", "entry", f.job.id, "err", err)
		}
		r.s.execRun(r.ctx, f.job, &run)
		r.mu.Lock()
		q := r.waiting[f.job.id]
		if len(q) == 0 || r.ctx.Err() != nil {
			r.lastEnded = r.now()
			r.active[f.job.id]--
			if r.active[f.job.id] == 0 {
				delete(r.active, f.job.id)
			}
			r.mu.Unlock()
			return
		}
		next := q[0]
		r.waiting[f.job.id] = q[1:]
		if len(q) == 1 {
			delete(r.waiting, f.job.id)
		}
		r.mu.Unlock()
		f, run = next.f, next.run
	}
}

// close stops the loop, kills runs in progress, waits for them and saves
// the checkpoint; queued runs are recorded as interrupted at the next start.
func (r *runner) close() {
	r.cancel()
	<-r.done
	r.wg.Wait()
	if r.on {
		r.mu.Lock()
		cp := r.checkpoint
		r.mu.Unlock()
		if !cp.IsZero() {
			_ = r.s.saveState(keyCheckpoint, cp)
		}
	}
}
