package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/display/api"
)

// RecordingStartArgs are display_recording_start's arguments (the display
// service's defaults apply to what is left out).
type RecordingStartArgs struct {
	Format     string `json:"format,omitempty" jsonschema:"mp4 (H.264, default) or webm (VP9)"`
	MaxSeconds int    `json:"max_seconds,omitempty" jsonschema:"stop by itself after this many seconds, 1-3600 (default 600)"`
	Framerate  int    `json:"framerate,omitempty" jsonschema:"frames per second, 1-30 (default 10)"`
}

// RecordingArgs name a recording.
type RecordingArgs struct {
	ID string `json:"id" jsonschema:"a recording id from display_recording_start or display_recordings"`
}

// RecordingsResult answers display_recordings.
type RecordingsResult struct {
	Recordings []api.Recording `json:"recordings"`
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
func (s *Service) addRecordingTools() {
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	act := &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_recording_start", Title: "Start recording the screen",
		Description: "Start recording the screen (one recording at a time). Every display action taken while it runs " +
			"goes to its timeline. Stop it with display_recording_stop; it also stops by itself at max_seconds.",
		Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in RecordingStartArgs) (*mcp.CallToolResult, api.Recording, error) {
			var r api.Recording
			body := api.StartRecording{Format: in.Format, MaxSeconds: in.MaxSeconds, Framerate: in.Framerate}
			if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "display",
				path: displayPrefix + "/recordings", body: body}, &r); err != nil {
				return nil, api.Recording{}, toolErr(err)
			}
			return textResult(fmt.Sprintf("recording %s started (%s, %d fps, at most %d s)", r.ID, r.Format, r.Framerate, r.MaxSeconds)), r, nil
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_recording_stop", Title: "Stop a recording",
		Description: "Stop a recording; it answers once the video is finished.", Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in RecordingArgs) (*mcp.CallToolResult, api.Recording, error) {
			var r api.Recording
			if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "display",
				path: displayPrefix + "/recordings/" + url.PathEscape(in.ID) + "/stop", body: map[string]any{}}, &r); err != nil {
				return nil, api.Recording{}, toolErr(err)
			}
			return textResult(fmt.Sprintf("recording %s %s (%s), %d bytes, %d actions", r.ID, r.Status, r.StopReason, r.Bytes, r.Events)), r, nil
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_recordings", Title: "List recordings",
		Description: "The screen recordings, newest first: status, size, how many actions each timeline holds.",
		Annotations: read},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, RecordingsResult, error) {
			out := RecordingsResult{Recordings: []api.Recording{}}
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
			var tl api.Timeline
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
