package identity

// Sweep runs the janitor's sweep now (tests).
func Sweep(s *Service) { s.sweepExpired() }
