package lazyre

import (
	"sync"
	"testing"
)

func TestMatchesAsCompiled(t *testing.T) {
	r := New(`^[a-z][a-z0-9_]{0,3}$`)
	if r.re != nil {
		t.Fatal("compiled before its first use")
	}
	var wg sync.WaitGroup
	for _, c := range []struct {
		s    string
		want bool
	}{{"a", true}, {"ab_9", true}, {"ab_99", false}, {"9a", false}, {"", false}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := r.MatchString(c.s); got != c.want {
				t.Errorf("%q: %v, want %v", c.s, got, c.want)
			}
		}()
	}
	wg.Wait()
	if r.String() != `^[a-z][a-z0-9_]{0,3}$` {
		t.Errorf("String: %q", r.String())
	}
}
