package images

import (
	"deckhand/platform/store"
)

// Seed inserts many images in one transaction (benchmarks and the index
// property test need thousands; one Update per image would time fsyncs).
func (s *Service) Seed(ins []CreateInput) error {
	return s.env.Store.Update(func(tx *store.Tx) error {
		for i := range ins {
			if err := ins[i].Validate(); err != nil {
				return err
			}
			if _, err := s.insert(tx, &ins[i]); err != nil {
				return err
			}
		}
		return nil
	})
}
