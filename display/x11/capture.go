//go:build linux && cgo

package x11

import (
	"context"
	"hash/maphash"

	"github.com/gen2brain/shm"
	mshm "github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

func (c *capturer) init(d *Driver) {
	for _, f := range xproto.Setup(d.conn).PixmapFormats {
		if f.Depth == d.screen.RootDepth && f.BitsPerPixel == 32 {
			c.bpp32 = true
		}
	}
	if mshm.Init(d.conn) == nil {
		if _, err := mshm.QueryVersion(d.conn).Reply(); err == nil {
			c.useSHM = true
		}
	}
	if xfixes.Init(d.conn) == nil {
		if _, err := xfixes.QueryVersion(d.conn, 4, 0).Reply(); err == nil {
			c.cursor = true
		}
	}
}

func (c *capturer) close(d *Driver) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.all {
		_ = mshm.DetachChecked(d.conn, s.seg).Check()
		_ = shm.Dt(s.data)
	}
	c.all, c.free = nil, nil
}

// segmentFor returns a free segment of at least size bytes.
func (c *capturer) segmentFor(d *Driver, size int) (*segment, error) {
	c.mu.Lock()
	for i, s := range c.free {
		if len(s.data) >= size {
			c.free = append(c.free[:i], c.free[i+1:]...)
			c.mu.Unlock()
			return s, nil
		}
	}
	c.mu.Unlock()
	// size segments for the whole root so they serve any later region
	full := int(d.screen.WidthInPixels) * int(d.screen.HeightInPixels) * 4
	if g, err := xproto.GetGeometry(d.conn, xproto.Drawable(d.root)).Reply(); err == nil {
		full = int(g.Width) * int(g.Height) * 4
	}
	size = max(size, full)
	id, err := shm.Get(shm.IPC_PRIVATE, size, shm.IPC_CREAT|0o600)
	if err != nil {
		return nil, err
	}
	data, err := shm.At(id, 0, 0)
	if err != nil {
		_ = shm.Rm(id)
		return nil, err
	}
	seg, err := mshm.NewSegId(d.conn)
	if err != nil {
		_ = shm.Dt(data)
		_ = shm.Rm(id)
		return nil, err
	}
	err = mshm.AttachChecked(d.conn, seg, uint32(id), false).Check()
	// marked for removal now: the kernel frees it when both sides detach,
	// even if this process dies
	_ = shm.Rm(id)
	if err != nil {
		_ = shm.Dt(data)
		return nil, err
	}
	s := &segment{id: id, seg: seg, data: data}
	c.mu.Lock()
	c.all = append(c.all, s)
	c.mu.Unlock()
	return s, nil
}

func (c *capturer) put(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.free) < 2 {
		c.free = append(c.free, s)
		return
	}
	// more than two spare: let the extra go
	for i, x := range c.all {
		if x == s {
			c.all = append(c.all[:i], c.all[i+1:]...)
			break
		}
	}
	_ = shm.Dt(s.data)
}

// grab captures r of the root window as BGRX.
func (d *Driver) grab(r desktop.Rect) (*frame, error) {
	c := &d.cap
	if !c.bpp32 {
		return nil, &fault.Error{Code: fault.CodeBackend,
			Message: "screenshots need a 24 or 32-bit deep screen (start Xvfb with WxHx24)"}
	}
	size := r.Width * r.Height * 4
	if c.useSHM {
		s, err := c.segmentFor(d, size)
		if err == nil {
			_, err = mshm.GetImage(d.conn, xproto.Drawable(d.root), int16(r.X), int16(r.Y),
				uint16(r.Width), uint16(r.Height), 0xffffffff, xproto.ImageFormatZPixmap, s.seg, 0).Reply()
			if err == nil {
				return &frame{pix: s.data[:size], w: r.Width, h: r.Height, stride: r.Width * 4,
					release: func() { c.put(s) }}, nil
			}
			c.put(s)
		}
		// a server on another host cannot share memory: fall back for good
		d.log.Info("MIT-SHM capture unavailable, using GetImage", "err", err)
		c.mu.Lock()
		c.useSHM = false
		c.mu.Unlock()
	}
	img, err := xproto.GetImage(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.root),
		int16(r.X), int16(r.Y), uint16(r.Width), uint16(r.Height), 0xffffffff).Reply()
	if err != nil {
		return nil, d.xerr("capture the screen", err)
	}
	return &frame{pix: img.Data, w: r.Width, h: r.Height, stride: r.Width * 4, release: func() {}}, nil
}

// drawCursor blends the pointer image (XFIXES, premultiplied ARGB) into f,
// whose top-left is at (ox, oy) on the root.
func (d *Driver) drawCursor(f *frame, ox, oy int) {
	if !d.cap.cursor {
		return
	}
	cur, err := xfixes.GetCursorImage(d.conn).Reply()
	if err != nil {
		return
	}
	x0 := int(cur.X) - int(cur.Xhot) - ox
	y0 := int(cur.Y) - int(cur.Yhot) - oy
	for cy := 0; cy < int(cur.Height); cy++ {
		y := y0 + cy
		if y < 0 || y >= f.h {
			continue
		}
		for cx := 0; cx < int(cur.Width); cx++ {
			x := x0 + cx
			if x < 0 || x >= f.w {
				continue
			}
			p := cur.CursorImage[cy*int(cur.Width)+cx]
			a := p >> 24
			if a == 0 {
				continue
			}
			o := f.pix[y*f.stride+x*4 : y*f.stride+x*4+3]
			inv := 255 - a
			o[0] = byte((p & 0xff) + (uint32(o[0])*inv+127)/255)
			o[1] = byte((p >> 8 & 0xff) + (uint32(o[1])*inv+127)/255)
			o[2] = byte((p >> 16 & 0xff) + (uint32(o[2])*inv+127)/255)
		}
	}
}

// Screenshot captures and encodes.
func (d *Driver) Screenshot(ctx context.Context, o desktop.ScreenshotOptions) ([]byte, error) {
	f, err := d.grab(o.Region)
	if err != nil {
		return nil, err
	}
	defer f.release()
	if o.Cursor {
		d.drawCursor(f, o.Region.X, o.Region.Y)
	}
	pix, w, h, stride := f.pix, f.w, f.h, f.stride
	if o.Scale < 1 {
		pix, w, h, stride = scaleBGRX(f, o.Scale)
	}
	if err := ctx.Err(); err != nil {
		return nil, fault.Errorf(fault.CodeTimeout, "screenshot abandoned: the request ended")
	}
	var out []byte
	if o.Format == "jpeg" {
		out, err = encodeJPEG(pix, w, h, stride, o.Quality)
	} else {
		out, err = encodePNG(pix, w, h, stride)
	}
	if err != nil {
		return nil, fault.Internal("encode the screenshot", err)
	}
	return out, nil
}

var checksumSeed = maphash.MakeSeed()

// Checksum fingerprints the pixels of r.
func (d *Driver) Checksum(r desktop.Rect) (uint64, error) {
	f, err := d.grab(r)
	if err != nil {
		return 0, err
	}
	defer f.release()
	return maphash.Bytes(checksumSeed, f.pix), nil
}
