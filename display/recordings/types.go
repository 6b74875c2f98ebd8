package recordings

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"deckhand/display/core"
	"deckhand/platform/fault"
)

// Recording states and why a recording stopped.
const (
	RecordingActive  = "recording"
	RecordingStopped = "stopped"
	RecordingFailed  = "failed"

	StoppedByRequest   = "request"
	StoppedByTimeLimit = "time_limit"
	StoppedBySizeLimit = "size_limit"
	StoppedByShutdown  = "shutdown"
)

// Recording is one screen recording.
type Recording struct {
	ID         string     `json:"id" required:"true"`
	Status     string     `json:"status" required:"true" enum:"recording,stopped,failed"`
	Format     string     `json:"format" required:"true" enum:"mp4,webm" doc:"mp4 (H.264) or webm (VP9)"`
	Framerate  int        `json:"framerate" required:"true"`
	Width      int        `json:"width" required:"true"`
	Height     int        `json:"height" required:"true"`
	MaxSeconds int        `json:"max_seconds" required:"true"`
	MaxBytes   int64      `json:"max_bytes" required:"true"`
	StartedAt  time.Time  `json:"started_at" required:"true"`
	StoppedAt  *time.Time `json:"stopped_at" doc:"null while recording"`
	StopReason string     `json:"stop_reason,omitempty" enum:"request,time_limit,size_limit,shutdown" doc:"why it stopped"`
	Error      string     `json:"error,omitempty" doc:"failed: what ffmpeg said"`
	Bytes      int64      `json:"bytes" required:"true" doc:"the video's size so far"`
	Events     int        `json:"events" required:"true" doc:"actions in the timeline"`
}

// TimelineEvent is one display action taken while recording.
type TimelineEvent struct {
	OffsetMS int64                `json:"offset_ms" required:"true" doc:"since the recording started"`
	Time     time.Time            `json:"time" required:"true"`
	Action   string               `json:"action" required:"true" doc:"the action's name (click, type, click-element ...)"`
	Args     json.RawMessage      `json:"args,omitempty" doc:"the action's fields as sent"`
	Element  *core.TimelineTarget `json:"element,omitempty" doc:"the accessibility element acted on"`
	OK       bool                 `json:"ok" required:"true"`
	Error    string               `json:"error,omitempty"`
}

// Timeline answers GET .../recordings/{id}/timeline.
type Timeline struct {
	RecordingID string          `json:"recording_id" required:"true"`
	Events      []TimelineEvent `json:"events" required:"true"`
}

// StartRecording is POST .../recordings.
type StartRecording struct {
	Format     string `json:"format,omitempty" enum:"mp4,webm" doc:"mp4 (H.264, default: the least CPU) or webm (VP9)"`
	Framerate  int    `json:"framerate,omitempty" minimum:"1" maximum:"30" doc:"frames per second, default 10"`
	MaxSeconds int    `json:"max_seconds,omitempty" minimum:"1" maximum:"3600" doc:"the recording stops by itself after this, default 600"`
	MaxBytes   int64  `json:"max_bytes,omitempty" minimum:"1048576" maximum:"4294967296" doc:"the recording stops by itself at this size, default 500 MiB; ffmpeg then writes the frames in flight and the index, so the file can end up to a few hundred KiB larger"`
}

// RecordingRef names a recording in the path.
type RecordingRef struct {
	ID string `path:"id" format:"uuid" doc:"the recording's id"`
}

// ValidateParams checks the id's syntax.
func (r RecordingRef) ValidateParams() error {
	if _, err := uuid.Parse(r.ID); err != nil {
		return fault.Invalid("id", "must be a recording id (a UUID), got %q", r.ID)
	}
	return nil
}

// Video is a recording's video.
type Video struct {
	Body               []byte
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
}

// VTT is a timeline as WebVTT.
type VTT struct {
	Body        []byte
	ContentType string `header:"Content-Type"`
}
