package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RecordingArgs name a recording.
type RecordingArgs struct {
	ID string `json:"id" jsonschema:"a recording id from display_recording_start or display_recordings"`
}

// RecordingsResult answers display_recordings.
type RecordingsResult struct {
	Recordings []Recording `json:"recordings"`
}

// Recording is one screen recording as the display's routes answer it.
type Recording struct {
	ID         string     `json:"id"`
	Status     string     `json:"status" jsonschema:"recording, stopped or failed"`
	Format     string     `json:"format" jsonschema:"mp4 (H.264) or webm (VP9)"`
	Framerate  int        `json:"framerate"`
	Width      int        `json:"width"`
	Height     int        `json:"height"`
	MaxSeconds int        `json:"max_seconds"`
	MaxBytes   int64      `json:"max_bytes"`
	StartedAt  time.Time  `json:"started_at"`
	StoppedAt  *time.Time `json:"stopped_at"`
	StopReason string     `json:"stop_reason,omitempty" jsonschema:"request, time_limit, size_limit or shutdown"`
	Error      string     `json:"error,omitempty"`
	Bytes      int64      `json:"bytes" jsonschema:"the video's size so far"`
	Events     int        `json:"events" jsonschema:"actions in the timeline"`
}

// TimelineStep is one display action taken while a recording ran.
type TimelineStep struct {
	OffsetMS int64  `json:"offset_ms" jsonschema:"milliseconds since the recording started"`
	Action   string `json:"action" jsonschema:"click, type, key, click-element ..."`
	Element  string `json:"element,omitempty" jsonschema:"the accessibility element acted on: [role] name"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
}

// TimelineResult answers display_recording_timeline.
type TimelineResult struct {
	RecordingID string         `json:"recording_id"`
	Steps       []TimelineStep `json:"steps"`
}

// addRecordingTools exposes the display's recordings: a model can record
// what it does so a person can watch it step by step afterwards (the video
// itself is downloaded over HTTP: GET /_/display/api/v1/display/recordings/{id}).
// Starting and stopping are the display's routes (their views are here);
// the list and the timeline are answered as objects shaped for a model.
func (s *Service) addRecordingTools() {
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	views["display_recording_start"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		r, err := as[Recording](out)
		return structuredResult(fmt.Sprintf("recording %s started (%s, %d fps, at most %d s)", r.ID, r.Format, r.Framerate, r.MaxSeconds), out), err
	}}
	views["display_recording_stop"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		r, err := as[Recording](out)
		return structuredResult(fmt.Sprintf("recording %s %s (%s), %d bytes, %d actions", r.ID, r.Status, r.StopReason, r.Bytes, r.Events), out), err
	}}
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_recordings", Title: "List recordings",
		Description: "The screen recordings, newest first: status, size, how many actions each timeline holds.",
		Annotations: read},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, RecordingsResult, error) {
			out := RecordingsResult{Recordings: []Recording{}}
			if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "display",
				path: displayPrefix + "/recordings"}, &out.Recordings); err != nil {
				return nil, RecordingsResult{}, toolErr(err)
			}
			var b strings.Builder
			for _, r := range out.Recordings {
				fmt.Fprintf(&b, "%s %s %s, %d bytes, %d actions, started %s\n", r.ID, r.Status, r.Format, r.Bytes, r.Events, r.StartedAt.Format(time.RFC3339))
			}
			return textResult(b.String()), out, nil
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_recording_timeline", Title: "A recording's timeline",
		Description: "The display actions taken while a recording ran, in order, with their offset into the video.",
		Annotations: read},
		func(ctx context.Context, req *mcp.CallToolRequest, in RecordingArgs) (*mcp.CallToolResult, TimelineResult, error) {
			var tl struct {
				RecordingID string `json:"recording_id"`
				Events      []struct {
					OffsetMS int64 `json:"offset_ms"`
					Action   string
					Element  *struct{ Role, Name string }
					OK       bool
					Error    string
				}
			}
			if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "display",
				path: displayPrefix + "/recordings/" + url.PathEscape(in.ID) + "/timeline"}, &tl); err != nil {
				return nil, TimelineResult{}, toolErr(err)
			}
			out := TimelineResult{RecordingID: tl.RecordingID, Steps: []TimelineStep{}}
			var b strings.Builder
			for _, e := range tl.Events {
				st := TimelineStep{OffsetMS: e.OffsetMS, Action: e.Action, OK: e.OK, Error: e.Error}
				if e.Element != nil {
					st.Element = fmt.Sprintf("[%s] %s", e.Element.Role, e.Element.Name)
				}
				out.Steps = append(out.Steps, st)
				fmt.Fprintf(&b, "%7d ms %s %s ok=%v\n", st.OffsetMS, st.Action, st.Element, st.OK)
			}
			return textResult(b.String()), out, nil
		})
}
