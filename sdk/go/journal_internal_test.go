package deckhand

import (
	"strings"
	"testing"
)

// A journal stream: entries with ids, an id-only position move,
// keep-alive comments, multi-line data.
func TestReadEvents(t *testing.T) {
	t.Parallel()
	stream := ": keep-alive\n\n" +
		"id: c1\nevent: entry\ndata: {\"a\":1}\n\n" +
		"id: c2\n\n" +
		"event: gap\ndata: line one\ndata: line two\n\n" +
		"id: c3\nevent: entry\ndata:{\"b\":2}\n\n"
	var got []event
	if err := readEvents(strings.NewReader(stream), func(e event) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []event{
		{ID: "c1", Event: "entry", Data: `{"a":1}`, HasData: true},
		{ID: "c2", Event: "message"},
		{ID: "c2", Event: "gap", Data: "line one\nline two", HasData: true},
		{ID: "c3", Event: "entry", Data: `{"b":2}`, HasData: true},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
