package tokenseal_test

import (
	"errors"
	"testing"

	"deckhand/platform/tokenseal"
)

// TestSealOpen: a sealed token opens with the token whose hash sealed it,
// for the container it names, and with nothing else.
func TestSealOpen(t *testing.T) {
	s, err := tokenseal.Seal(tokenseal.Hash("agt_prev"), "c1", "agt_new")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tokenseal.Open("agt_prev", "c1", s); err != nil || got != "agt_new" {
		t.Fatalf("open: %q %v", got, err)
	}
	again, _ := tokenseal.Seal(tokenseal.Hash("agt_prev"), "c1", "agt_new")
	if string(again.Box) == string(s.Box) {
		t.Fatal("two seals of one token are alike (nonce reused)")
	}
	moved := s
	moved.ContainerID = "c2"
	short := s
	short.Nonce = s.Nonce[:4]
	for name, tc := range map[string]struct {
		prev, container string
		s               tokenseal.Sealed
	}{
		"another token":     {"agt_other", "c1", s},
		"another container": {"agt_prev", "c2", s},
		"relabelled":        {"agt_prev", "c2", moved},
		"short nonce":       {"agt_prev", "c1", short},
	} {
		if _, err := tokenseal.Open(tc.prev, tc.container, tc.s); !errors.Is(err, tokenseal.ErrNotOpened) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
