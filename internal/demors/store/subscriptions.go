package store

import (
	"cmp"
	"slices"
)

// ScopeStream is one (stream, connection) target of a subscription's resolved scope.
type ScopeStream struct {
	Name         string
	ConnectionID string
}

// Subscription is one stored event subscription. Secret is the whsec_ signing key.
type Subscription struct {
	ID             string
	GrantID        string
	ClientID       string
	CallbackURL    string
	Status         string
	Verified       bool
	Secret         string
	FilterStreams  []string // nil when the caller gave no streams filter
	Scope          []ScopeStream
	CreatedAt      string
	UpdatedAt      string
	DisabledReason string // "" while not disabled
}

// InsertSubscription stores a new subscription. The caller bounds how many a grant holds.
func (s *Store) InsertSubscription(sub Subscription) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.subs[sub.ID] = sub
}

// UpdateSubscription rewrites the mutable fields (status, verified, secret, updated_at,
// disabled_reason) of a stored subscription of sub's grant.
func (s *Store) UpdateSubscription(sub Subscription) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if cur, ok := s.subs[sub.ID]; ok && cur.GrantID == sub.GrantID {
		cur.Status, cur.Verified, cur.Secret, cur.UpdatedAt, cur.DisabledReason =
			sub.Status, sub.Verified, sub.Secret, sub.UpdatedAt, sub.DisabledReason
		s.subs[sub.ID] = cur
	}
}

// DeleteSubscription removes a subscription of the grant for good.
func (s *Store) DeleteSubscription(grantID, id string) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if cur, ok := s.subs[id]; ok && cur.GrantID == grantID {
		delete(s.subs, id)
	}
}

// Subscription returns one subscription owned by the grant.
func (s *Store) Subscription(grantID, id string) (Subscription, bool) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	sub, ok := s.subs[id]
	if !ok || sub.GrantID != grantID {
		return Subscription{}, false
	}
	return sub, true
}

// Subscriptions returns every subscription owned by the grant, oldest first.
func (s *Store) Subscriptions(grantID string) []Subscription {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	var out []Subscription
	for _, sub := range s.subs {
		if sub.GrantID == grantID {
			out = append(out, sub)
		}
	}
	slices.SortFunc(out, func(a, b Subscription) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}
