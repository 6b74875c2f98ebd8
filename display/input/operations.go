package input

import (
	"context"
	"errors"
	"time"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// click moves to pt when given and clicks b n times.
func (s *Service) click(d desktop.Driver, pt *desktop.Point, b desktop.Button, n int) (desktop.Point, error) {
	if pt != nil {
		if err := d.MoveTo(*pt); err != nil {
			return desktop.Point{}, err
		}
	}
	for i := 0; i < n; i++ {
		if err := s.button(d, b, true); err != nil {
			return desktop.Point{}, err
		}
		if err := s.button(d, b, false); err != nil {
			return desktop.Point{}, err
		}
	}
	return d.Pointer()
}

// button presses or releases b and keeps account of what is held.
func (s *Service) button(d desktop.Driver, b desktop.Button, down bool) error {
	if err := d.Button(b, down); err != nil {
		return err
	}
	if b <= desktop.ButtonRight {
		if down {
			s.held.buttons[b] = true
		} else {
			delete(s.held.buttons, b)
		}
	}
	return nil
}

func (s *Service) key(d desktop.Driver, sym desktop.Keysym, down bool) error {
	if err := d.Key(sym, down); err != nil {
		return err
	}
	if down {
		s.held.keys[sym]++
	} else {
		delete(s.held.keys, sym)
	}
	return nil
}

// chord holds mods, taps sym repeat times, and releases the mods in
// reverse order, also when a press fails.
func (s *Service) chord(d desktop.Driver, sym desktop.Keysym, mods []desktop.Keysym, repeat int) (err error) {
	pressed := 0
	defer func() {
		for i := pressed - 1; i >= 0; i-- {
			if e := s.key(d, mods[i], false); e != nil && err == nil {
				err = e
			}
		}
	}()
	for _, m := range mods {
		if err := s.key(d, m, true); err != nil {
			return err
		}
		pressed++
	}
	for i := 0; i < repeat; i++ {
		if err := s.key(d, sym, true); err != nil {
			return err
		}
		if err := s.key(d, sym, false); err != nil {
			return err
		}
	}
	return nil
}

// awaitFocusAt gives the window manager a moment (up to 500 ms) to
// activate the window under p after a click, so that typing which follows
// reaches it and not the window focused before.
func (s *Service) awaitFocusAt(ctx context.Context, d desktop.Driver, p desktop.Point) {
	if top, err := d.UnderPointer(); err != nil || top == 0 {
		return // the bare desktop: nothing to focus
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if w, err := d.ActiveWindow(); err == nil &&
			(desktop.Rect{X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}).Contains(p) {
			return
		}
		if sleep(ctx, 10*time.Millisecond) != nil {
			return
		}
	}
}

// typeText types t rune by rune, waiting delay between runes.
func (s *Service) typeText(ctx context.Context, d desktop.Driver, t string, delay time.Duration) (int, error) {
	n := 0
	for _, r := range t {
		if r == '\r' {
			continue // "\r\n" is one Return
		}
		if n > 0 && delay > 0 {
			if err := sleep(ctx, delay); err != nil {
				return n, err
			}
		} else if ctx.Err() != nil {
			return n, fault.Errorf(fault.CodeTimeout, "typing stopped after %d characters: the request ended", n)
		}
		if err := d.TypeRune(r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fault.Errorf(fault.CodeTimeout, "stopped: the request ended")
	}
}

// drag presses at from, moves to to in steps over dur, releases; select
// answers the PRIMARY selection afterwards.
func (s *Service) drag(ctx context.Context, d desktop.Driver, from, to desktop.Point, b desktop.Button, dur time.Duration, sel bool) (DragResult, error) {
	res := DragResult{From: from, To: to}
	var before string
	if sel {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		clip, err := d.Selection(sctx, "PRIMARY")
		cancel()
		if err != nil {
			return res, err
		}
		before = clip.Text
	}
	if err := d.MoveTo(from); err != nil {
		return res, err
	}
	if err := s.button(d, b, true); err != nil {
		return res, err
	}
	steps := 10
	pause := dur / time.Duration(steps)
	var err error
	for i := 1; i <= steps && err == nil; i++ {
		p := desktop.Point{X: from.X + (to.X-from.X)*i/steps, Y: from.Y + (to.Y-from.Y)*i/steps}
		if err = d.MoveTo(p); err == nil && pause > 0 {
			err = sleep(ctx, pause)
		}
	}
	if e := s.button(d, b, false); err == nil {
		err = e
	}
	if err != nil || !sel {
		return res, err
	}
	// the application claims PRIMARY when it handles the release, a moment
	// later: wait (briefly) for the selection to change
	deadline := time.Now().Add(600 * time.Millisecond)
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		clip, err := d.Selection(sctx, "PRIMARY")
		cancel()
		if err != nil {
			return res, err
		}
		if clip.Text != before || !time.Now().Before(deadline) {
			res.Text = &clip.Text
			return res, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return res, err
		}
	}
}

// releaseAll releases what this service pressed and what the server
// reports down.
func (s *Service) releaseAll(d desktop.Driver) (ResetResult, error) {
	res := ResetResult{ReleasedKeys: []string{}, ReleasedButtons: []string{}}
	seenK := map[desktop.Keysym]bool{}
	seenB := map[desktop.Button]bool{}
	var firstErr error
	for sym := range s.held.keys {
		if err := d.Key(sym, false); err != nil && firstErr == nil {
			firstErr = err
		}
		seenK[sym] = true
		res.ReleasedKeys = append(res.ReleasedKeys, desktop.KeyName(sym))
	}
	for b := range s.held.buttons {
		if err := d.Button(b, false); err != nil && firstErr == nil {
			firstErr = err
		}
		seenB[b] = true
		res.ReleasedButtons = append(res.ReleasedButtons, b.String())
	}
	s.held.keys = map[desktop.Keysym]int{}
	s.held.buttons = map[desktop.Button]bool{}
	if err := d.Sync(); err != nil && firstErr == nil {
		firstErr = err
	}
	keys, buttons, err := d.ReleaseAll()
	if err != nil && firstErr == nil {
		firstErr = err
	}
	for _, k := range keys {
		if !seenK[k] {
			res.ReleasedKeys = append(res.ReleasedKeys, desktop.KeyName(k))
		}
	}
	for _, b := range buttons {
		if !seenB[b] {
			res.ReleasedButtons = append(res.ReleasedButtons, b.String())
		}
	}
	return res, firstErr
}

// press moves to pt when given, then presses or releases b.
func (s *Service) press(d desktop.Driver, pt *desktop.Point, b desktop.Button, down bool) (desktop.Point, error) {
	if pt != nil {
		if err := d.MoveTo(*pt); err != nil {
			return desktop.Point{}, err
		}
	}
	if err := s.button(d, b, down); err != nil {
		return desktop.Point{}, err
	}
	return d.Pointer()
}

// typeAt clicks pt, lets the window manager focus what was clicked,
// optionally clears the field, and types.
func (s *Service) typeAt(ctx context.Context, d desktop.Driver, pt desktop.Point, clear bool, t typing) (Typed, error) {
	if _, err := s.click(d, &pt, desktop.ButtonLeft, 1); err != nil {
		return Typed{}, err
	}
	if err := d.Sync(); err != nil {
		return Typed{}, err
	}
	s.awaitFocusAt(ctx, d, pt)
	if clear {
		if err := s.chord(d, desktop.RuneKeysym('a'), []desktop.Keysym{desktop.KeyControlL}, 1); err != nil {
			return Typed{}, err
		}
		if err := s.chord(d, desktop.KeyDelete, nil, 1); err != nil {
			return Typed{}, err
		}
	}
	n, err := s.typeText(ctx, d, t.text, t.delay)
	return Typed{X: &pt.X, Y: &pt.Y, Typed: n}, err
}

// wait polls the condition every 50 ms until it holds or the time is up.
func (s *Service) wait(ctx context.Context, d desktop.Driver, w *Wait) (WaitResult, error) {
	start := time.Now()
	res := WaitResult{Until: w.until}
	deadline := start.Add(w.timeout)
	var base uint64
	if w.until == "region-change" {
		var err error
		if base, err = d.Checksum(w.region); err != nil {
			return res, err
		}
	}
	for {
		switch w.until {
		case "window", "window-gone":
			wins, err := d.Windows()
			if err != nil {
				return res, err
			}
			var hit *desktop.Window
			for i := range wins {
				if w.match.matches(d, wins[i]) {
					hit = &wins[i]
					break
				}
			}
			if w.until == "window" && hit != nil {
				res.Met, res.Window = true, hit
			}
			if w.until == "window-gone" && hit == nil {
				res.Met = true
			}
		case "region-change":
			sum, err := d.Checksum(w.region)
			if err != nil {
				return res, err
			}
			res.Met = sum != base
		}
		now := time.Now()
		if res.Met || !now.Before(deadline) {
			if w.until == "timeout" {
				res.Met = true
			}
			res.ElapsedMS = now.Sub(start).Milliseconds()
			return res, nil
		}
		next := min(50*time.Millisecond, deadline.Sub(now))
		if err := sleep(ctx, next); err != nil {
			res.ElapsedMS = time.Since(start).Milliseconds()
			return res, nil
		}
	}
}

// resolveWindow is id, or the active window when id is nil.
func (s *Service) resolveWindow(d desktop.Driver, id *uint32) (uint32, error) {
	if id != nil {
		return *id, nil
	}
	w, err := d.ActiveWindow()
	if err != nil {
		return 0, err
	}
	return w.ID, nil
}

// closeWindow asks the window to close and waits (2 s at most) for it to
// be gone.
func (s *Service) closeWindow(ctx context.Context, d desktop.Driver, wid uint32) (Closed, error) {
	if err := d.CloseWindow(wid); err != nil {
		return Closed{}, err
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := d.Window(wid); err != nil {
			var pe *fault.Error
			if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
				return Closed{ID: wid, Closed: true}, nil
			}
			return Closed{}, err
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			break
		}
	}
	return Closed{ID: wid, Closed: false}, nil
}
