//go:build linux && cgo

package x11_test

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"
)

// importRoot captures the screen with ImageMagick, the independent witness.
func importRoot(t *testing.T) image.Image {
	t.Helper()
	cmd := exec.Command("import", "-window", "root", "png:-")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func rgb(img image.Image, x, y int) (int, int, int) {
	r, g, b, _ := img.At(x, y).RGBA()
	return int(r >> 8), int(g >> 8), int(b >> 8)
}

// diff compares got with ref's region at (ox,oy): differing pixels and PSNR.
func diff(got, ref image.Image, ox, oy int) (int, float64) {
	b := got.Bounds()
	n, se := 0, 0.0
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			r1, g1, b1 := rgb(got, b.Min.X+x, b.Min.Y+y)
			r2, g2, b2 := rgb(ref, ox+x, oy+y)
			if r1 != r2 || g1 != g2 || b1 != b2 {
				n++
			}
			se += float64((r1-r2)*(r1-r2) + (g1-g2)*(g1-g2) + (b1-b2)*(b1-b2))
		}
	}
	mse := se / float64(3*b.Dx()*b.Dy())
	if mse == 0 {
		return n, math.Inf(1)
	}
	return n, 10 * math.Log10(255*255/mse)
}

// quietScreen puts some content up and the pointer in a corner, so two
// captures a moment apart see the same pixels.
func quietScreen(t *testing.T) {
	t.Helper()
	_, _ = startXterm(t, "screenshot-content", "-geometry", "100x30+500+200", "-bg", "navy", "-fg", "yellow", "-e", "bash", "-c", "ls -l /usr/bin | head -40; sleep 60")
	xtool(t, "xdotool", "mousemove", "1919", "1079")
	eventually(t, "xterm content drawn", func() bool {
		img := importRoot(t)
		r, g, b := rgb(img, 800, 300)
		return r == 0 && g == 0 && b == 128 // navy background is on screen
	})
}

// stableShot takes the service's screenshot between two imports that agree
// (other tests' windows may still be closing), returning it and the import.
func stableShot(t *testing.T, query string) (answer, image.Image) {
	t.Helper()
	for try := 0; ; try++ {
		before := importRoot(t)
		a := call(t, "GET", "/api/v1/display/screenshots?"+query, nil)
		mustOK(t, a, "screenshot "+query)
		after := importRoot(t)
		if n, _ := diff(after, before, 0, 0); n == 0 {
			return a, after
		}
		if try == 10 {
			t.Fatal("the screen never held still")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestScreenshotMatchesImport(t *testing.T) {
	needX(t)
	quietScreen(t)
	a, ref := stableShot(t, "")
	if a.header.Get("Content-Type") != "image/png" {
		t.Fatalf("content type %q", a.header.Get("Content-Type"))
	}
	img, err := png.Decode(bytes.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 1920 || img.Bounds().Dy() != 1080 {
		t.Fatalf("size %v", img.Bounds())
	}
	if n, _ := diff(img, ref, 0, 0); n != 0 {
		t.Fatalf("PNG differs from import in %d pixels", n)
	}

	a, ref = stableShot(t, "x=480&y=180&width=700&height=300")
	img, err = png.Decode(bytes.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 700 || img.Bounds().Dy() != 300 || a.header.Get("X-Image-Width") != "700" {
		t.Fatalf("region size %v", img.Bounds())
	}
	if n, _ := diff(img, ref, 480, 180); n != 0 {
		t.Fatalf("region differs from import in %d pixels", n)
	}

	for _, q := range []int{80, 95} {
		a, ref = stableShot(t, fmt.Sprintf("format=jpeg&quality=%d", q))
		if a.header.Get("Content-Type") != "image/jpeg" {
			t.Fatalf("content type %q", a.header.Get("Content-Type"))
		}
		img, err = jpeg.Decode(bytes.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		// as faithful as Go's own encoder at the same quality
		var std bytes.Buffer
		if err := jpeg.Encode(&std, ref, &jpeg.Options{Quality: q}); err != nil {
			t.Fatal(err)
		}
		stdImg, _ := jpeg.Decode(&std)
		_, psnr := diff(img, ref, 0, 0)
		_, stdPSNR := diff(stdImg, ref, 0, 0)
		if psnr < stdPSNR-1.5 {
			t.Fatalf("JPEG q%d PSNR %.1f dB against import; image/jpeg gets %.1f dB", q, psnr, stdPSNR)
		}
	}
	lo := call(t, "GET", "/api/v1/display/screenshots?format=jpeg&quality=10", nil)
	hi := call(t, "GET", "/api/v1/display/screenshots?format=jpeg&quality=100", nil)
	if len(lo.body) >= len(hi.body) {
		t.Fatalf("quality has no effect: q10 %d bytes, q100 %d bytes", len(lo.body), len(hi.body))
	}

	// scale: half size, close to a box-filtered reference
	a, ref = stableShot(t, "scale=0.5")
	img, err = png.Decode(bytes.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 960 || img.Bounds().Dy() != 540 {
		t.Fatalf("scaled size %v", img.Bounds())
	}
	half := image.NewRGBA(image.Rect(0, 0, 960, 540))
	for y := 0; y < 540; y++ {
		for x := 0; x < 960; x++ {
			var sr, sg, sb int
			for _, d := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				r, g, b := rgb(ref, 2*x+d[0], 2*y+d[1])
				sr, sg, sb = sr+r, sg+g, sb+b
			}
			o := half.PixOffset(x, y)
			half.Pix[o], half.Pix[o+1], half.Pix[o+2], half.Pix[o+3] = uint8(sr/4), uint8(sg/4), uint8(sb/4), 255
		}
	}
	if _, psnr := diff(img, half, 0, 0); psnr < 40 {
		t.Fatalf("scaled image PSNR %.1f dB against a 2x2 box filter", psnr)
	}

	// cursor: drawn only when asked
	xtool(t, "xdotool", "mousemove", "100", "900")
	plain := call(t, "GET", "/api/v1/display/screenshots?x=90&y=890&width=40&height=40", nil)
	withCursor := call(t, "GET", "/api/v1/display/screenshots?x=90&y=890&width=40&height=40&cursor=true", nil)
	i1, _ := png.Decode(bytes.NewReader(plain.body))
	i2, _ := png.Decode(bytes.NewReader(withCursor.body))
	if n, _ := diff(i2, i1, 0, 0); n == 0 {
		t.Fatal("cursor=true drew no pointer")
	}
}

func TestScreenshotBadQuery(t *testing.T) {
	needX(t)
	for _, q := range []string{"format=gif", "quality=0", "quality=101", "scale=0", "scale=1.5", "scale=abc",
		"width=0", "x=-1", "cursor=maybe", "height=5000"} {
		a := call(t, "GET", "/api/v1/display/screenshots?"+q, nil)
		if a.status != 400 {
			t.Errorf("%s: %d %s", q, a.status, a.body)
		}
	}
}

// TestScaledScreenshot: screenshots/scaled is the whole screen at most
// max_width wide, exactly that wide when the screen is wider (whatever
// the quotient's rounding), with the sizes to map it back to the screen.
func TestScaledScreenshot(t *testing.T) {
	needX(t)
	for _, tc := range []struct {
		query         string
		width, height int
		scale         float64
	}{
		{"", 1280, 720, 1280.0 / 1920}, {"max_width=960", 960, 540, 0.5}, {"max_width=1366", 1366, 768, 1366.0 / 1920},
		{"max_width=1919", 1919, 1079, 1919.0 / 1920}, {"max_width=1920", 1920, 1080, 1}, {"max_width=5000", 1920, 1080, 1},
	} {
		a := call(t, "GET", "/api/v1/display/screenshots/scaled?"+tc.query, nil)
		mustOK(t, a, "scaled screenshot "+tc.query)
		var s struct {
			Image         []byte
			Width, Height int
			ScreenWidth   int `json:"screen_width"`
			ScreenHeight  int `json:"screen_height"`
			Scale         float64
		}
		a.decode(t, &s)
		img, err := png.Decode(bytes.NewReader(s.Image))
		if err != nil {
			t.Fatalf("%s: the image: %v", tc.query, err)
		}
		if img.Bounds().Dx() != tc.width || img.Bounds().Dy() != tc.height || s.Width != tc.width || s.Height != tc.height ||
			s.ScreenWidth != 1920 || s.ScreenHeight != 1080 || math.Abs(s.Scale-tc.scale) > 1e-9 {
			t.Errorf("%s: image %v, answer %dx%d of %dx%d at %v", tc.query, img.Bounds(), s.Width, s.Height, s.ScreenWidth,
				s.ScreenHeight, s.Scale)
		}
	}
	// An image less than a pixel high is the caller's mistake, named.
	if a := call(t, "GET", "/api/v1/display/screenshots/scaled?max_width=1", nil); a.status != 400 ||
		!bytes.Contains(a.body, []byte("max_width")) {
		t.Errorf("max_width=1: %d %s", a.status, a.body)
	}
}
