package pgstore

import (
	"context"
	"strings"
	"time"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
)

func (e *engine) Publish(ctx context.Context, channel, payload string) error {
	if _, err := e.pool.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, channel+"\n"+payload); err != nil {
		return classify(dbErr{err: err}, 1)
	}
	return nil
}

// Listen keeps one dedicated connection LISTENing, dialling again (with
// backoff) whenever it is lost; after a reconnect subscribers are told of a
// gap, since messages sent meanwhile are gone.
func (e *engine) Listen(ctx context.Context, deliver func(string, store.Notification), ready func()) {
	backoff := 100 * time.Millisecond
	for connected := false; ctx.Err() == nil; {
		conn, err := pgx.ConnectConfig(ctx, e.pool.Config().ConnConfig.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+notifyChannel)
		}
		if err == nil {
			if connected {
				deliver("", store.Notification{Gap: true})
			}
			connected, backoff = true, 100*time.Millisecond
			ready()
			for {
				n, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					break
				}
				channel, payload, _ := strings.Cut(n.Payload, "\n")
				deliver(channel, store.Notification{Payload: payload})
			}
		}
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}
