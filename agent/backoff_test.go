package agent_test

import (
	"testing"
	"time"

	"deckhand/agent"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cases := []struct {
		name    string
		uptimes []time.Duration
		want    []time.Duration
	}{
		{"crash loop doubles to the cap", []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 10 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"stable uptime resets", []time.Duration{0, 0, 0, time.Minute, 0},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 100 * ms, 200 * ms}},
		{"just under stable does not reset", []time.Duration{0, 29 * time.Second},
			[]time.Duration{100 * ms, 200 * ms}},
		{"first crash after a long run", []time.Duration{time.Hour}, []time.Duration{100 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := agent.DefaultBackoff()
			for i, up := range tc.uptimes {
				if got := b.Next(up); got != tc.want[i] {
					t.Fatalf("crash %d (uptime %s): delay %s, want %s", i+1, up, got, tc.want[i])
				}
			}
		})
	}
}
