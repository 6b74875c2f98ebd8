package controltest

import (
	"context"
	"path/filepath"

	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

// Store stops the server and opens its store (the embedded file, or the
// run's database for its --data), closed at Cleanup: a test reads what the
// server wrote (the event log, what a secret looks like at rest).
func (s *Server) Store() *store.DB {
	s.T.Helper()
	s.Stop()
	var db *store.DB
	var err error
	if onPostgres {
		db, err = pgstore.Open(context.Background(), DatabaseURL(s.T, s.Data))
	} else {
		db, err = store.Open(filepath.Join(s.Data, "control.db"))
	}
	if err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(func() { db.Close() })
	return db
}
