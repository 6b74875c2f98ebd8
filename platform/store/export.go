package store

import "fmt"

// Whole-store copies (deckhand-control migrate --from-bbolt) need what
// domain code never does: every bucket by name, and sequences set rather
// than drawn. Both engines' transactions provide it.

// BucketInfo is one bucket as a whole-store copy sees it.
type BucketInfo struct {
	Name string
	Keys int
	// Seq is the last number NextSeq handed out (0: never used). A bucket
	// may have a sequence and no keys.
	Seq uint64
}

// bucketTx is the part of an engine transaction that copies use.
type bucketTx interface {
	Buckets() ([]BucketInfo, error)
	SetSeq(bucket string, n uint64) error
}

// Buckets lists every bucket with its key count and sequence, by name.
func (t *Tx) Buckets() ([]BucketInfo, error) {
	bt, ok := t.e.(bucketTx)
	if !ok {
		return nil, fmt.Errorf("this store engine cannot list its buckets")
	}
	bs, err := bt.Buckets()
	return bs, t.fail(err)
}

// SetSeq sets bucket's sequence so the next NextSeq returns n+1: a copy
// keeps numbering (invoice numbers, run ids) where the source left it.
func (t *Tx) SetSeq(bucket string, n uint64) error {
	if err := t.writeCheck(bucket, "seq"); err != nil {
		return err
	}
	bt, ok := t.e.(bucketTx)
	if !ok {
		return fmt.Errorf("this store engine cannot set sequences")
	}
	return t.fail(bt.SetSeq(bucket, n))
}
