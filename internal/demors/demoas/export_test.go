package demoas

import "time"

// SetClock makes s read the time from now, so tests can move past a lifetime
// without sleeping.
func SetClock(s *Server, now func() time.Time) { s.now = now }
