package signing

import (
	"fmt"

	"deckhand/platform/store"
)

// CopyToDB writes every key of ks and its active kid into tx the way OpenDB
// reads them, seeds sealed under ks's master key. Moving a control plane
// from --data to --database-url so keeps its keys: signatures already made
// and public keys clients pinned stay valid.
func (ks *KeySet) CopyToDB(tx *store.Tx) error {
	ks.mu.RLock()
	keys, active := append([]Key(nil), ks.keys...), ks.active
	ks.mu.RUnlock()
	if len(keys) == 0 {
		return fmt.Errorf("signing keys: %s holds no key to copy", ks.dir)
	}
	for _, k := range keys {
		sealed, err := ks.sealer.Seal(seedPurpose(k.ID), k.private.Seed())
		if err != nil {
			return fmt.Errorf("signing keys: %w", err)
		}
		if err := tx.Put(bucketKeys, k.ID, keyFile{KID: k.ID, Algorithm: Algorithm, SeedSealed: sealed, CreatedAt: k.CreatedAt}); err != nil {
			return err
		}
	}
	return tx.PutRaw(bucketMeta, metaActive, []byte(active.ID))
}

// DBBuckets names the buckets the database key set lives in (a store copy
// writes them with CopyToDB, not byte for byte).
func DBBuckets() []string { return []string{bucketKeys, bucketMeta} }

// KeyIDsInDB lists the kids kept in tx and the active one.
func KeyIDsInDB(tx *store.Tx) (ids []string, active string, err error) {
	err = tx.ForEach(bucketKeys, func(kid string, _ []byte) error {
		ids = append(ids, kid)
		return nil
	})
	return ids, string(tx.GetRaw(bucketMeta, metaActive)), err
}
