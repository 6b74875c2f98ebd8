//go:build linux && cgo

package x11

import (
	"context"
	"errors"
	"strings"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// Selection reads CLIPBOARD or PRIMARY.
func (d *Driver) Selection(ctx context.Context, name string) (desktop.Clipboard, error) {
	clip, err := d.clip.get(ctx, strings.ToUpper(name))
	if errors.Is(err, errClipTimeout) {
		return clip, &fault.Error{Code: fault.CodeTimeout, Message: "the clipboard owner did not answer in time", Cause: err}
	}
	if err != nil {
		return clip, d.xerr("read the clipboard", err)
	}
	return clip, nil
}

// SetClipboard takes the clipboard.
func (d *Driver) SetClipboard(clip desktop.Clipboard) error {
	if err := d.clip.set(clip); err != nil {
		return d.xerr("take the clipboard", err)
	}
	return nil
}
