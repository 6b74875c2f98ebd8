package platformtest_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
)

func TestWatchListeningFindsTheFirstAddressAndCopies(t *testing.T) {
	var tee platformtest.SyncBuffer
	ended := make(chan struct{})
	in := "starting\nlistening on http://127.0.0.1:4321 (pid 7)\nlistening on http://127.0.0.1:9999\nbye\n"
	found := platformtest.WatchListening(strings.NewReader(in), &tee, func() { close(ended) })
	if got := <-found; got != "http://127.0.0.1:4321" {
		t.Fatalf("found %q", got)
	}
	<-ended
	if tee.String() != in {
		t.Fatalf("copied %q, want %q", tee.String(), in)
	}
}

func TestFreePortBaseIsFree(t *testing.T) {
	base := platformtest.FreePortBase(t, 3)
	for off := 0; off <= 3; off++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off))
		if err != nil {
			t.Fatalf("port %d of the range is taken: %v", base+off, err)
		}
		ln.Close()
	}
}

// TestFreePortBasesNeverOverlap: ranges handed to parallel tests stay
// apart even though none of their ports is bound yet.
func TestFreePortBasesNeverOverlap(t *testing.T) {
	const span = 14
	var bases []int
	for range 300 {
		b := platformtest.FreePortBase(t, span)
		if b < 10000 || b+span >= 32768 {
			t.Fatalf("range %d-%d is outside 10000-32767", b, b+span)
		}
		for _, o := range bases {
			if b <= o+span && o <= b+span {
				t.Fatalf("ranges at %d and %d overlap", o, b)
			}
		}
		bases = append(bases, b)
	}
}
