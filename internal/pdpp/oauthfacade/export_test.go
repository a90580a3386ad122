package oauthfacade

import "time"

// SetClock makes f read the time from now, so tests can move past the cache
// lifetime without sleeping.
func SetClock(f *Facade, now func() time.Time) { f.now = now }
