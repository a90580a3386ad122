package demoas

import (
	"context"
	"net/netip"
	"time"
)

// SetClock makes s read the time from now, so tests can move past a lifetime
// without sleeping.
func SetClock(s *Server, now func() time.Time) { s.now = now }

// SetDocumentLookup makes s's document fetcher resolve host names with
// lookup, so a test can name a host that resolves to a private address.
func SetDocumentLookup(s *Server, lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)) {
	s.docLookup = lookup
}
