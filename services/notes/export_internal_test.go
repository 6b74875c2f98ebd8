package notes

import "time"

// SetTicketTTL changes the default ticket lifetime (tests).
func (s *Service) SetTicketTTL(d time.Duration) { s.ticketTTL = d }
