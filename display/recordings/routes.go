package recordings

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes are the recordings' routes; start, stop, the list as an object
// and the timeline are MCP tools too.
func (s *Service) Routes() []platform.Route {
	op := core.Route
	rec := "Recordings: the screen as an ffmpeg x11grab child, mp4 (H.264) or webm (VP9), at most one at a time. "
	start := op(http.MethodPost, "/recordings", "startRecording", "Start recording the screen", rec+
		"It stops by itself at max_seconds or max_bytes (stop_reason time_limit or size_limit). Every display action "+
		"taken while it records (input, batch steps, element actions) goes on its timeline. 409 while another records, "+
		"and 409 naming --display-recordings-max-total when the kept videos and this one's max_bytes together would pass it.",
		platform.Op(s.StartRecording))
	start.Status = http.StatusCreated
	start.Tool = &platform.Tool{Name: "display_recording_start", Title: "Start recording the screen",
		Description: "Start recording the screen (one recording at a time). Every display action taken while it runs " +
			"goes to its timeline. Stop it with display_recording_stop; it also stops by itself at max_seconds.",
		Text: "recording {{.id}} started ({{.format}}, {{.framerate}} fps, at most {{.max_seconds}} s)"}
	stop := op(http.MethodPost, "/recordings/{id}/stop", "stopRecording", "Stop a recording",
		"Asks ffmpeg to finish the file and answers once it has (the video is then complete).", platform.Op(s.StopRecording))
	stop.Tool = &platform.Tool{Name: "display_recording_stop", Title: "Stop a recording",
		Description: "Stop a recording by id (from display_recording_start or display_recordings); it answers once the video is finished.",
		Text:        "recording {{.id}} {{.status}} ({{with .stop_reason}}{{.}}{{end}}), {{.bytes}} bytes, {{.events}} actions"}
	video := op(http.MethodGet, "/recordings/{id}", "getRecordingVideo", "Download a recording", rec+
		"The video of a stopped recording; 409 while it records.", platform.Op(s.RecordingVideo))
	video.ContentType = "video/mp4"
	vtt := op(http.MethodGet, "/recordings/{id}/timeline.vtt", "getRecordingTimelineVTT", "A recording's timeline as WebVTT",
		"The timeline as subtitles to play beside the video: each action is a cue from its moment to the next.",
		platform.Op(s.RecordingVTT))
	vtt.ContentType = "text/vtt"
	del := op(http.MethodDelete, "/recordings/{id}", "deleteRecording", "Delete a recording",
		"Stops it if it records, then deletes its video and timeline.", platform.CommandOp(s.DeleteRecording))
	del.Status = http.StatusNoContent
	timeline := op(http.MethodGet, "/recordings/{id}/timeline", "getRecordingTimeline", "A recording's timeline",
		"Every display action taken while it recorded: offset_ms from the start, time, action, args as sent, the "+
			"element for element actions, ok and error.", platform.Op(s.RecordingTimeline))
	timeline.Tool = &platform.Tool{Name: "display_recording_timeline", Title: "A recording's timeline",
		Description: "The display actions taken while a recording ran, in order, with their offset into the video.",
		Text: "{{range .events}}{{printf \"%7d\" .offset_ms}} ms {{.action}} {{with .element}}[{{.role}}] {{.name}}{{end}} " +
			"ok={{.ok}}\n{{end}}",
		ReadOnly: true, Idempotent: true}
	return []platform.Route{start,
		op(http.MethodGet, "/recordings", "listRecordings", "List recordings", rec+"Newest first.", platform.ReadOp(s.Recordings)),
		s.listRoute(),
		stop,
		video,
		timeline,
		vtt, del}
}
