package projects

import "testing"

// A signal reaches every wait on its container, coalesced, and none on
// another; a released wait gets nothing and leaves no entry behind.
func TestSignalsWakeTheirContainersWaits(t *testing.T) {
	var g signals
	a1, rel1 := g.sub("a")
	a2, rel2 := g.sub("a")
	b, relB := g.sub("b")
	g.fire("a")
	g.fire("a") // coalesced: one pending wake per wait, and fire never blocks
	for i, ch := range []<-chan struct{}{a1, a2} {
		select {
		case <-ch:
		default:
			t.Fatalf("wait %d on a was not woken", i+1)
		}
		select {
		case <-ch:
			t.Fatalf("wait %d on a was woken twice for coalesced signals", i+1)
		default:
		}
	}
	select {
	case <-b:
		t.Fatal("a signal on a woke a wait on b")
	default:
	}
	rel1()
	g.fire("a")
	select {
	case <-a1:
		t.Fatal("a released wait was woken")
	default:
	}
	<-a2
	rel2()
	relB()
	if len(g.subs) != 0 {
		t.Fatalf("released waits left entries: %v", g.subs)
	}
}
