package demoas

import "time"

// table is a map with a size bound and optionally a bound per owner (the client address an
// entry was made for). Every entry may be dropped after its until time, or earlier when
// stale says so. A put for an owner at its bound first drops that owner's droppable entries,
// then, if still at its bound, that owner's oldest: one address's flood costs only its own
// entries. A put into a full table then drops every droppable entry and, if still full,
// refuses the put when the table has a stale rule (what is live is never dropped for
// someone else) or else drops the entry put earliest. Each scan is O(max) and happens only
// at a bound, affordable at the bounds used here (a few thousand entries). The caller holds
// the server's lock.
type table[K comparable, V any] struct {
	max      int
	perOwner int // 0: no bound per owner
	// stale reports an entry droppable before its time (nil: none is); a table with it
	// keeps live entries, refusing a put rather than drop the oldest.
	stale func(V, time.Time) bool
	seq   uint64
	rows  map[K]*row[V]
	owned map[string]int // entries per owner
}

type row[V any] struct {
	val   V
	seq   uint64    // insertion order
	until time.Time // droppable after this instant
	owner string
}

func newTable[K comparable, V any](max, perOwner int, stale func(V, time.Time) bool) *table[K, V] {
	return &table[K, V]{max: max, perOwner: perOwner, stale: stale, rows: make(map[K]*row[V]), owned: make(map[string]int)}
}

// get returns the value under k.
func (t *table[K, V]) get(k K) (V, bool) {
	r, ok := t.rows[k]
	if !ok {
		var zero V
		return zero, false
	}
	return r.val, true
}

// putFor stores v under k for owner ("": none), droppable after until, making room first;
// it reports false when the table is full of live entries and keeps them (stale set).
func (t *table[K, V]) putFor(owner string, k K, v V, until time.Time, now time.Time) bool {
	if old, exists := t.rows[k]; exists {
		t.seq++
		t.owned[old.owner]--
		t.owned[owner]++
		t.rows[k] = &row[V]{val: v, seq: t.seq, until: until, owner: owner}
		t.tidy(old.owner)
		return true
	}
	if owner != "" && t.perOwner > 0 && t.owned[owner] >= t.perOwner {
		t.makeRoomFor(owner, now)
	}
	if len(t.rows) >= t.max && !t.makeRoom(now) {
		return false
	}
	t.seq++
	t.rows[k] = &row[V]{val: v, seq: t.seq, until: until, owner: owner}
	t.owned[owner]++
	return true
}

func (t *table[K, V]) remove(k K) {
	if r, ok := t.rows[k]; ok {
		delete(t.rows, k)
		t.owned[r.owner]--
		t.tidy(r.owner)
	}
}

// tidy forgets an owner with no entries, so owned stays bounded by rows.
func (t *table[K, V]) tidy(owner string) {
	if t.owned[owner] <= 0 {
		delete(t.owned, owner)
	}
}

func (t *table[K, V]) droppable(r *row[V], now time.Time) bool {
	return now.After(r.until) || (t.stale != nil && t.stale(r.val, now))
}

// makeRoomFor drops owner's droppable entries, then owner's oldest if none was.
func (t *table[K, V]) makeRoomFor(owner string, now time.Time) {
	for k, r := range t.rows {
		if r.owner == owner && t.droppable(r, now) {
			t.remove(k)
		}
	}
	if k, ok := t.oldest(func(r *row[V]) bool { return r.owner == owner }); ok && t.owned[owner] >= t.perOwner {
		t.remove(k)
	}
}

// makeRoom drops the droppable entries, then (without a stale rule) the oldest if none was; it
// reports whether there is room.
func (t *table[K, V]) makeRoom(now time.Time) bool {
	for k, r := range t.rows {
		if t.droppable(r, now) {
			t.remove(k)
		}
	}
	if len(t.rows) < t.max {
		return true
	}
	if t.stale != nil {
		return false
	}
	k, _ := t.oldest(func(*row[V]) bool { return true })
	t.remove(k)
	return true
}

// oldest returns the key of the entry put earliest among those of which.
func (t *table[K, V]) oldest(which func(*row[V]) bool) (oldest K, found bool) {
	var seq uint64
	for k, r := range t.rows {
		if which(r) && (!found || r.seq < seq) {
			oldest, seq, found = k, r.seq, true
		}
	}
	return oldest, found
}
