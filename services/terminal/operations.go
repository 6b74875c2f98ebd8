package terminal

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"

	"deckhand/platform/fault"
)

// SessionRef names a session in the path.
type SessionRef struct {
	ID string `path:"terminal_id" doc:"terminal session id"`
}

// HistoryQuery asks for a session's scrollback.
type HistoryQuery struct {
	SessionRef
	Strip bool `query:"strip" default:"false" doc:"remove escape sequences and carriage returns"`
}

// Text is a text/plain answer.
type Text struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// RawQuery asks for output bytes from an offset.
type RawQuery struct {
	ID    string `query:"id" required:"true" doc:"terminal session id"`
	Since int64  `query:"since" minimum:"0" default:"0" doc:"absolute output offset (session's output_bytes is the end)"`
}

// RawOutput is output bytes with their offsets.
type RawOutput struct {
	Offset    int64  `header:"X-Terminal-Offset" doc:"offset of the first byte returned"`
	Next      int64  `header:"X-Terminal-Next" doc:"the offset to pass as since next time"`
	Truncated string `header:"X-Terminal-Truncated" doc:"true when the scrollback no longer holds since"`
	Body      []byte
}

// ScreenQuery asks for the current screen.
type ScreenQuery struct {
	ID     string `query:"id" required:"true" doc:"terminal session id"`
	Format string `query:"format" enum:"png,text" default:"png" doc:"png, or text: the screen's lines, trailing blanks trimmed"`
}

// Screen is the screen as PNG or text.
type Screen struct {
	ContentType string `header:"Content-Type" doc:"image/png, or text/plain with format=text"`
	Exact       string `header:"X-Terminal-Screen-Exact" doc:"false when output came faster than the model parses it"`
	Body        []byte
}

// AttachQuery is the WebSocket handshake's query.
type AttachQuery struct {
	ID    string `query:"id" doc:"session to attach; absent creates one"`
	Cols  *int   `query:"cols" minimum:"1" maximum:"1000" doc:"size of a new session, or resizes the attached one (with rows)"`
	Rows  *int   `query:"rows" minimum:"1" maximum:"1000" doc:"size of a new session, or resizes the attached one (with cols)"`
	Shell string `query:"shell" doc:"shell of a new session"`
	Cwd   string `query:"cwd" doc:"working directory of a new session"`
}

// Create starts a shell on a new PTY.
func (svc *Service) Create(_ context.Context, req CreateRequest) (CreateResponse, error) {
	s, err := svc.create(req)
	if err != nil {
		return CreateResponse{}, err
	}
	in := s.info()
	return CreateResponse{ID: in.ID, PID: in.PID, Shell: in.Shell, Cols: in.Cols, Rows: in.Rows, CreatedAt: in.CreatedAt}, nil
}

// List answers every session, oldest first.
func (svc *Service) List(context.Context) ([]SessionInfo, error) { return svc.list(), nil }

// Get answers one session.
func (svc *Service) Get(_ context.Context, in SessionRef) (SessionInfo, error) {
	s, err := svc.get(in.ID)
	if err != nil {
		return SessionInfo{}, err
	}
	return s.info(), nil
}

// History answers a session's scrollback as text.
func (svc *Service) History(_ context.Context, in HistoryQuery) (Text, error) {
	s, err := svc.get(in.ID)
	if err != nil {
		return Text{}, err
	}
	s.mu.Lock()
	data := s.ring.since(0)
	s.mu.Unlock()
	if in.Strip {
		data = stripANSI(data)
	}
	return Text{ContentType: "text/plain; charset=utf-8", Body: data}, nil
}

// Raw answers output bytes from an offset.
func (svc *Service) Raw(_ context.Context, in RawQuery) (RawOutput, error) {
	s, err := svc.get(in.ID)
	if err != nil {
		return RawOutput{}, err
	}
	s.mu.Lock()
	total, oldest := s.ring.total, s.ring.oldest()
	var data []byte
	if in.Since <= total {
		data = s.ring.since(in.Since)
	}
	s.mu.Unlock()
	if in.Since > total {
		return RawOutput{}, fault.Invalid("since", "is past the end of the output (%d bytes so far)", total)
	}
	first := max(in.Since, oldest)
	return RawOutput{Offset: first, Next: first + int64(len(data)), Truncated: strconv.FormatBool(first > in.Since), Body: data}, nil
}

// Screenshot answers the current screen as PNG or text.
func (svc *Service) Screenshot(_ context.Context, in ScreenQuery) (Screen, error) {
	s, err := svc.get(in.ID)
	if err != nil {
		return Screen{}, err
	}
	g := s.screen()
	out := Screen{Exact: strconv.FormatBool(g.exact)}
	if in.Format == "text" {
		out.ContentType, out.Body = "text/plain; charset=utf-8", []byte(g.text())
		return out, nil
	}
	b, err := g.png()
	if err != nil {
		return Screen{}, fault.Internal("render the screen", err)
	}
	out.ContentType, out.Body = "image/png", b
	return out, nil
}

// Delete ends a session and answers its final record.
func (svc *Service) Delete(ctx context.Context, in SessionRef) (SessionInfo, error) {
	s, err := svc.get(in.ID)
	if err != nil {
		return SessionInfo{}, err
	}
	if err := svc.remove(context.WithoutCancel(ctx), in.ID); err != nil {
		return SessionInfo{}, err
	}
	return s.info(), nil
}

func (svc *Service) list() []SessionInfo {
	svc.mu.Lock()
	all := slices.Collect(maps.Values(svc.sessions))
	svc.mu.Unlock()
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		out = append(out, s.info())
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// stripANSI drops escape sequences (CSI, OSC, DCS and two-byte ESC ones),
// carriage returns and other C0 controls except newline and tab.
func stripANSI(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		b := in[i]
		if b != 0x1b {
			if b >= 0x20 || b == '\n' || b == '\t' {
				out = append(out, b)
			}
			continue
		}
		if i+1 >= len(in) {
			break
		}
		i++
		switch in[i] {
		case '[': // CSI: parameters then one final byte 0x40-0x7e
			for i+1 < len(in) {
				i++
				if in[i] >= 0x40 && in[i] <= 0x7e {
					break
				}
			}
		case ']', 'P', '_', '^': // string until BEL or ST
			for i+1 < len(in) {
				i++
				if in[i] == 0x07 {
					break
				}
				if in[i] == 0x1b && i+1 < len(in) && in[i+1] == '\\' {
					i++
					break
				}
			}
		case '(', ')', '*', '+', '#', '%': // designators take one more byte
			if i+1 < len(in) {
				i++
			}
		}
	}
	return out
}
