package runtime

import "context"

// Marks let a caller time the steps inside a driver's call (the engine
// calls of a create, for the control plane's debug log of where a
// create's time goes) without the driver knowing how they are recorded.

type markKey struct{}

// WithMarks answers ctx carrying mark, which a driver calls with the name
// of each step as it ends. mark must be safe for the driver's use: the
// driver calls it from the goroutine of the call it was given to.
func WithMarks(ctx context.Context, mark func(step string)) context.Context {
	return context.WithValue(ctx, markKey{}, mark)
}

// Mark records that step of the caller's call ended now, when the caller
// asked for marks (WithMarks); otherwise it does nothing.
func Mark(ctx context.Context, step string) {
	if f, ok := ctx.Value(markKey{}).(func(string)); ok && f != nil {
		f(step)
	}
}
