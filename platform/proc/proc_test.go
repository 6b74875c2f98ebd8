package proc_test

import (
	"strings"
	"syscall"
	"testing"

	"deckhand/platform/proc"
)

func TestParseSignal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want syscall.Signal
		err  string
	}{
		{"TERM", syscall.SIGTERM, ""}, {"sigusr1", syscall.SIGUSR1, ""}, {"SIGKILL", syscall.SIGKILL, ""},
		{"9", syscall.SIGKILL, ""}, {"64", 64, ""}, {"0", 0, "1 to 64"}, {"65", 0, "1 to 64"},
		{"BOGUS", 0, "unknown signal"}, {"", 0, "unknown signal"},
	}
	for _, tc := range cases {
		got, err := proc.ParseSignal(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
	if proc.SignalName(syscall.SIGHUP) != "HUP" || proc.SignalName(40) != "40" {
		t.Fatal("SignalName")
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	t.Parallel()
	tl := &proc.Tail{Max: 4}
	_, _ = tl.Write([]byte("ab"))
	if tl.String() != "ab" || tl.Truncated() {
		t.Fatal(tl.String())
	}
	_, _ = tl.Write([]byte("cdef"))
	if tl.String() != "cdef" || !tl.Truncated() {
		t.Fatal(tl.String())
	}
}

func TestReadLinesSplitsLongLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", proc.MaxLine+10)
	var got []string
	proc.ReadLines(strings.NewReader("a\r\nb\n"+long+"\nlast"), func(l string) { got = append(got, l) })
	if len(got) != 5 || got[0] != "a" || got[1] != "b" || len(got[2]) != proc.MaxLine || got[3] != "xxxxxxxxxx" || got[4] != "last" {
		t.Fatalf("%d lines: %q", len(got), got[:2])
	}
}
