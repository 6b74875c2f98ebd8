package docker

import (
	"context"

	"deckhand/control/runtime"
)

// Calls on a container this driver has already found. Every action first
// inspects the container by name to check it is this installation's
// (find): one engine round trip more per action, which on a busy machine
// is a good part of a create's or a claim's time. The engine's own
// container id, once a find (or this driver's create) has checked its
// labels, names that same container for as long as it exists and never
// another, so an action may go to it at once; when the engine refuses
// (the container is gone, or in a state the action needs handled), the
// driver forgets the id and takes the checked way, which answers as
// before.

// remember notes that engine container eid is id's, checked.
func (d *Driver) remember(id, eid string) {
	if eid != "" {
		d.known.Store(id, eid)
	}
}

// forget drops id's engine container id.
func (d *Driver) forget(id string) { d.known.Delete(id) }

// knownID is id's checked engine container id, if any.
func (d *Driver) knownID(id string) (string, bool) {
	v, ok := d.known.Load(id)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// fast runs op on id's checked engine container id and says whether it
// did so without an error; on an error id is forgotten and the caller
// takes the checked way.
func (d *Driver) fast(id string, op func(eid string) error) bool {
	eid, ok := d.knownID(id)
	if !ok {
		return false
	}
	if err := op(eid); err != nil {
		d.forget(id)
		return false
	}
	return true
}

// callKnown is fast for one engine call (start, pause, unpause) with opts
// on id's known container.
func callKnown[O, R any](ctx context.Context, d *Driver, id string, call func(context.Context, string, O) (R, error), opts O) bool {
	return d.fast(id, func(eid string) error {
		_, err := call(ctx, eid, opts)
		return err
	})
}

// writeKnown copies files into id's known container.
func (d *Driver) writeKnown(ctx context.Context, id string, files []runtime.File) bool {
	return d.fast(id, func(eid string) error { return d.writeFiles(ctx, id, eid, files) })
}
