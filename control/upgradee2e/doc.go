// Package upgradee2e starts the current deckhand-control on a store that
// the layout before declared tables wrote (testdata/kv-store.jsonl, made
// by testdata/make-fixture.sh with that commit's binary): on PostgreSQL
// the kv rows as it left them, on bbolt the same buckets. The start
// migrates them into the declared tables, and the data reads and changes
// through the same API answers.
package upgradee2e
