package process

import (
	"context"
	"encoding/base64"
	"unicode/utf8"

	"deckhand/platform/fault"
)

// Run runs a process to its end and answers its output and how it ended.
// The process is an ordinary one meanwhile (listed, signalled, followed);
// a client that goes away does not stop it.
func (s *Service) Run(ctx context.Context, in RunInput) (RunResult, error) {
	p, _, err := s.start(in.Spec, false, in.MaxOutputBytes, "run", false)
	if err != nil {
		return RunResult{}, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return RunResult{}, fault.Errorf(fault.CodeUnavailable, "the request ended before process %s did", p.id)
	}
	rec := p.snapshot()
	c := p.capture
	if c == nil {
		// A client_token replay of a run by another request's limit: what
		// the log still holds.
		c = p.head(in.MaxOutputBytes)
	}
	c.mu.Lock()
	out, errOut, truncated := c.out, c.err, c.truncated
	c.mu.Unlock()
	res := RunResult{ID: rec.ID, ExitCode: rec.ExitCode, Signal: rec.Signal, State: rec.State, EndReason: rec.EndReason,
		Error: rec.Error, DurationMS: rec.DurationMS, Truncated: truncated}
	if truncated {
		out, errOut = trimPartialRune(out), trimPartialRune(errOut)
	}
	if utf8.Valid(out) && utf8.Valid(errOut) {
		res.Stdout, res.Stderr = string(out), string(errOut)
	} else {
		res.Stdout, res.Stderr = base64.StdEncoding.EncodeToString(out), base64.StdEncoding.EncodeToString(errOut)
		res.Encoding = encodingBase64
	}
	if in.MaxChars > 0 {
		for _, s := range []*string{&res.Stdout, &res.Stderr} {
			if cut := firstChars(*s, in.MaxChars, res.Encoding != ""); len(cut) < len(*s) {
				*s, res.Truncated = cut, true
			}
		}
	}
	return res, nil
}

// firstChars is the first n characters of s; of base64, the longest
// whole groups of four within them, so the cut still decodes.
func firstChars(s string, n int, base64 bool) string {
	if base64 {
		return s[:min(len(s), n/4*4)]
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// trimPartialRune drops an incomplete UTF-8 sequence a cut left at the end
// of otherwise valid text.
func trimPartialRune(b []byte) []byte {
	for k := 1; k <= 3 && k <= len(b); k++ {
		if !utf8.FullRune(b[len(b)-k:]) && utf8.Valid(b[:len(b)-k]) {
			return b[:len(b)-k]
		}
	}
	return b
}

// head captures the first max bytes of each stream the log still holds;
// truncated when bytes before or beyond them are missing.
func (p *process) head(max int) *capture {
	c := p.log.Cursor(0)
	defer c.Close()
	h := &capture{max: max}
	for {
		pieces, gap, done, _ := c.Next(1 << 20)
		h.truncated = h.truncated || gap != nil
		for _, pc := range pieces {
			h.add(pc.Stream, pc.Data)
		}
		if done || len(pieces) == 0 || (len(h.out) >= max && len(h.err) >= max) {
			return h
		}
	}
}
