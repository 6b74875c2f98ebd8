package store

import "context"

// ScanOptions selects an ordered range of a bucket.
type ScanOptions struct {
	// Prefix restricts the scan to keys that start with it.
	Prefix string
	// Start is where the scan begins (inclusive): forward scans visit keys
	// >= Start, reverse scans keys <= Start. Empty means the range's end.
	Start string
	// Exclusive skips Start itself: resume a page after the last key seen.
	Exclusive bool
	// Reverse visits keys in descending byte order.
	Reverse bool
	// Limit caps the number of entries visited; 0 means no cap.
	Limit int
}

// Notification is one message received by Subscribe.
type Notification struct {
	Payload string
	// Gap means messages may have been lost (the listener reconnected or
	// the subscriber fell behind): drop whatever the messages keep fresh.
	Gap bool
}

// Engine is what a storage engine provides. Domain code never uses it; an
// engine package hands one to New.
type Engine interface {
	// Update runs fn in a read-write transaction and commits when it
	// returns nil; an engine may run fn again after a conflict.
	Update(ctx context.Context, o UpdateOptions, fn func(EngineTx) error) error
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(EngineTx) error) error
	// Publish sends payload on channel to every DB on the same storage.
	Publish(ctx context.Context, channel, payload string) error
	// Listen delivers every published message to deliver until ctx ends;
	// after a reconnect it delivers Gap on channel "" (every channel). It
	// calls ready once it first listens.
	Listen(ctx context.Context, deliver func(channel string, n Notification), ready func())
	// Declare creates or migrates the tables (rows, indexes) to these
	// declarations, moving records already in their buckets into them.
	Declare(ctx context.Context, tables []*Table) error
	Close() error
}

// UpdateOptions choose how an Update isolates itself on an engine with
// concurrent writers (PostgreSQL); bbolt has one writer at a time.
type UpdateOptions struct {
	// Locking runs at READ COMMITTED instead of SERIALIZABLE: the
	// function locks, with Tx.GetForUpdate, the rows whose values decide
	// its writes before reading anything else that does; writers of one
	// row then queue on its lock instead of conflicting and running again.
	Locking bool
}

// Row is a record's derived field values, for an engine's PutRow.
type Row struct {
	t    *Table
	vals []val
}

// Values are the row's values as Go values (string, int64, time.Time,
// nil), in the order of the table's Fields.
func (r Row) Values() []any { return r.t.goValues(r.vals) }

// PageResult is what an engine's Page returns: the page's records, the
// number of matches and whether any follow the page.
type PageResult struct {
	Items []Item
	Total int
	More  bool
}

// EngineTx is one engine transaction. Keys and buckets arrive validated.
type EngineTx interface {
	// Get returns the value or nil when the bucket or key is missing.
	Get(bucket, key string) ([]byte, error)
	// GetForUpdate is Get that also locks the row until the transaction
	// ends (a missing row locks nothing).
	GetForUpdate(bucket, key string) ([]byte, error)
	// GetMany returns the values of keys in their order, nil where the
	// bucket or key is missing. keys hold 1 to MaxKeysPerRead valid keys,
	// possibly repeated; a PostgreSQL engine reads them in one statement.
	GetMany(bucket string, keys []string) ([][]byte, error)
	// Put stores a value; json tells whether raw is the JSON of a Put.
	Put(bucket, key string, raw []byte, json bool) error
	Delete(bucket, key string) error
	Scan(bucket string, o ScanOptions, fn func(key string, raw []byte) error) error
	NextSeq(bucket string) (uint64, error)
	Count(bucket, prefix string) (int, error)
	// Notify publishes on channel when (and only when) the transaction commits.
	Notify(channel, payload string) error
	// PutRow stores a record of a declared table with its derived row,
	// keeping every index; ErrDuplicate (a *DuplicateError) when a unique
	// index refuses it.
	PutRow(t *Table, key string, raw []byte, json bool, row Row) error
	// DeleteRow removes a record of a declared table and its index entries.
	DeleteRow(t *Table, key string) error
	// Page answers a validated query over a declared table.
	Page(p *Plan) (PageResult, error)
	// CountBy counts the matches of p (its order and page ignored) by
	// the value of field p.Table.Fields[field], NULLs left out.
	CountBy(p *Plan, field int) (map[string]int, error)
	// DropBucket removes a bucket that is not a table, with its sequence.
	DropBucket(bucket string) error
}
