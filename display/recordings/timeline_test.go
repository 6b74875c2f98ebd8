package recordings

import (
	"strings"
	"testing"

	"deckhand/display/core"
)

// What the desk's timeline is told while a recording runs goes on that
// recording's timeline, and its WebVTT has a cue per action with the
// element and the arguments.
func TestDeskTimelineIsTheRecordings(t *testing.T) {
	t.Parallel()
	desk := core.NewDesk(nil, nil)
	s := New(desk, t.TempDir())
	rec := &recording{Recording: Recording{ID: "r", Status: RecordingActive, StartedAt: desk.Clock.Now()}}
	s.rec.Store(&recorder{recs: map[string]*recording{"r": rec}, active: rec})
	field := &core.TimelineTarget{ID: "1.2~5", Role: "text", Name: "field 1.2~5"}
	desk.Timeline("element-set-value", map[string]string{"value": "hello"}, field, nil)
	desk.Timeline("click", nil, nil, nil)
	desk.Timeline("element-click", nil, field, nil)
	if len(rec.events) != 3 || rec.events[0].Action != "element-set-value" || rec.events[0].Element.ID != "1.2~5" ||
		string(rec.events[0].Args) != `{"value":"hello"}` || rec.events[2].Action != "element-click" || !rec.events[1].OK {
		t.Fatalf("timeline = %+v", rec.events)
	}
	if vtt := WebVTT(rec.events); strings.Count(vtt, " --> ") != 3 || !strings.Contains(vtt, `element-set-value "field 1.2~5" (text) {"value":"hello"}`) {
		t.Errorf("vtt:\n%s", vtt)
	}
}
