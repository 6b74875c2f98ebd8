package x11_test

import (
	"testing"

	"deckhand/display/api"
	"deckhand/display/x11"
)

// A second X server split into two RandR monitors (Xinerama heads to
// clients), reached by name as --display :N does.
func TestMultipleScreens(t *testing.T) {
	needX(t)
	disp := freeDisplay(140)
	stop, err := startX(t.TempDir(), disp, "XVFB_SCREEN=1920x600x24", "XVFB_MONITORS=800x600+0+0 1120x600+800+0", "XVFB_XTERM=0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	d, err := x11.Open(disp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	info, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	want := []api.Screen{{Index: 0, X: 0, Y: 0, Width: 800, Height: 600}, {Index: 1, X: 800, Y: 0, Width: 1120, Height: 600}}
	if info.Width != 1920 || info.Height != 600 || len(info.Displays) != 2 || info.Displays[0] != want[0] || info.Displays[1] != want[1] {
		t.Fatalf("info = %+v", info)
	}
	if d.Display() != disp {
		t.Fatalf("display = %q", d.Display())
	}
	// input lands on the second head
	if err := d.MoveTo(api.Point{X: 1000, Y: 100}); err != nil {
		t.Fatal(err)
	}
	if p, err := d.Pointer(); err != nil || p != (api.Point{X: 1000, Y: 100}) {
		t.Fatalf("pointer %+v %v", p, err)
	}
}
