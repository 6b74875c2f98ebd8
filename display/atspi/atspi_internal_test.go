package atspi

import (
	"reflect"
	"testing"
)

func TestStateNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		words []uint32
		want  []string
	}{
		{nil, []string{}},
		{[]uint32{1<<12 | 1<<8, 0}, []string{"enabled", "focused"}},
		{[]uint32{1 << 30, 1<<(41-32) | 1<<(43-32) | 1<<31}, []string{"visible", "checkable", "read-only"}},
	} {
		if got := stateNames(c.words); !reflect.DeepEqual(got, c.want) {
			t.Errorf("stateNames(%b) = %v, want %v", c.words, got, c.want)
		}
	}
}
