package capture

import "testing"

// TestFitScale: for every screen width up to 4096 and every max below it,
// the scaler's truncated width is max exactly, never a pixel short.
func TestFitScale(t *testing.T) {
	t.Parallel()
	for w := 1; w <= 4096; w++ {
		if s := fitScale(w, w); s != 1 {
			t.Fatalf("fitScale(%d, %d) = %v, want 1", w, w, s)
		}
		for m := 1; m < w; m++ {
			s := fitScale(w, m)
			if got := int(float64(w) * s); got != m || s >= 1 {
				t.Fatalf("fitScale(%d, %d) = %v: %d pixels wide", w, m, s, got)
			}
		}
	}
}
