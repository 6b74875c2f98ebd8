//go:build linux && cgo

package x11

import (
	"fmt"
	"log/slog"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xinerama"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

// Open connects to display (":99"; "" means $DISPLAY).
func Open(display string, log *slog.Logger) (Display, error) {
	if log == nil {
		log = slog.Default()
	}
	// xgb logs through a package-level logger (for example "no
	// .Xauthority, trying without"): keep it at debug level
	xgbLogOnce.Do(func() { xgb.Logger = slog.NewLogLogger(log.Handler(), slog.LevelDebug) })
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("connect to X display %q: %w", display, err)
	}
	if display == "" {
		display = fmt.Sprintf(":%d", conn.DisplayNumber)
	}
	d := &Driver{
		display:   display,
		log:       log,
		conn:      conn,
		atomCache: newAtomCache(conn),
		done:      make(chan struct{}),
	}
	setup := xproto.Setup(conn)
	d.screen = setup.DefaultScreen(conn)
	d.root = d.screen.Root
	if err := xtest.Init(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("X display %s lacks the XTEST extension: %w", display, err)
	}
	if xinerama.Init(conn) == nil {
		if r, err := xinerama.IsActive(conn).Reply(); err == nil && r.State != 0 {
			d.xinerama = true
		}
	}
	if err := d.kb.init(d); err != nil {
		conn.Close()
		return nil, fmt.Errorf("read the keyboard map: %w", err)
	}
	d.cap.init(d)
	go d.drain()
	clip, err := newClipboard(display, log)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("clipboard connection: %w", err)
	}
	d.clip = clip
	return d, nil
}

// Close releases the capture segments, the clipboard and the connection.
func (d *Driver) Close() error {
	d.closed.Do(func() {
		d.kb.restore(d)
		d.cap.close(d)
		if d.clip != nil {
			d.clip.close()
		}
		d.conn.Close()
	})
	return nil
}
