package images

import (
	"deckhand/platform/store"
)

// SeedImage is one image of a seeded catalog with ratings already given.
type SeedImage struct {
	In          CreateInput
	RatingSum   int64 // hundredths
	RatingCount int
}

// Seed inserts many images in one transaction (the benchmark and the
// index property test need thousands; one Update per image would time
// fsyncs).
func (s *Service) Seed(seed []SeedImage) error {
	return s.env.Store.Update(func(tx *store.Tx) error {
		for i := range seed {
			in := &seed[i].In
			if err := in.Validate(); err != nil {
				return err
			}
			r, err := s.insert(tx, in)
			if err != nil {
				return err
			}
			if seed[i].RatingCount > 0 {
				r.RatingSum, r.RatingCount = seed[i].RatingSum, seed[i].RatingCount
				if err := tx.Put(bucketImages, r.ID, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
