package platform_test

import (
	"errors"
	"fmt"
	"testing"

	"deckhand/platform"
	"deckhand/platform/store"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	nf := platform.NotFound("image", "x")
	cases := []struct {
		name string
		err  error
		code string // "" means nil
		same bool   // the typed error itself comes back
	}{
		{"nil", nil, "", false},
		{"untyped", errors.New("disk"), platform.CodeInternal, false},
		{"database gone", fmt.Errorf("read: %w", store.ErrUnavailable), platform.CodeUnavailable, false},
		{"typed", nf, platform.CodeNotFound, true},
		{"typed, wrapped", fmt.Errorf("wrapped: %w", nf), platform.CodeNotFound, true},
	}
	for _, c := range cases {
		err := platform.Wrap("op", c.err)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", c.name, err)
			}
			continue
		}
		var pe *platform.Error
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v, want code %s", c.name, err, c.code)
		}
		if c.same && err != error(nf) {
			t.Errorf("%s: %v is not the typed error itself", c.name, err)
		}
	}
}
