package exec

// Kick wakes the scheduler at once, for tests that move a fake clock.
func (s *Service) Kick() { s.kick() }
