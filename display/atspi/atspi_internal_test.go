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

func TestLeast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                  string
		at, size, view, vsize int32
		want                  int32
	}{
		{"inside", 110, 20, 100, 100, 0},
		{"below", 250, 20, 100, 100, 70},
		{"above", 40, 20, 100, 100, -60},
		{"overlapping the end", 190, 20, 100, 100, 10},
		{"larger than the view, start shown", 100, 300, 100, 100, 0},
		{"larger than the view, below", 150, 300, 100, 100, 50},
	} {
		if got := least(c.at, c.size, c.view, c.vsize); got != c.want {
			t.Errorf("%s: least(%d, %d, %d, %d) = %d, want %d", c.name, c.at, c.size, c.view, c.vsize, got, c.want)
		}
	}
}
