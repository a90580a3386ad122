package demoas

import "time"

// table is a map with a size bound. Every entry has a time after which it may be
// dropped (until); a put into a full table first drops every such entry and then, if
// still full, the entry put earliest. Both scans are O(max) and happen only when the
// table is full, which a demo can afford for the bounds used here (at most a few
// thousand entries). The caller holds the server's lock.
type table[K comparable, V any] struct {
	max  int
	seq  uint64
	rows map[K]*row[V]
}

type row[V any] struct {
	val   V
	seq   uint64    // insertion order
	until time.Time // droppable after this instant
}

func newTable[K comparable, V any](max int) *table[K, V] {
	return &table[K, V]{max: max, rows: make(map[K]*row[V])}
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

// put stores v under k, droppable after until, making room first when the table is full.
func (t *table[K, V]) put(k K, v V, until time.Time, now time.Time) {
	if _, exists := t.rows[k]; !exists && len(t.rows) >= t.max {
		t.makeRoom(now)
	}
	t.seq++
	t.rows[k] = &row[V]{val: v, seq: t.seq, until: until}
}

func (t *table[K, V]) remove(k K) { delete(t.rows, k) }

func (t *table[K, V]) len() int { return len(t.rows) }

// makeRoom drops the entries past their time, then the oldest one if none was.
func (t *table[K, V]) makeRoom(now time.Time) {
	for k, r := range t.rows {
		if now.After(r.until) {
			delete(t.rows, k)
		}
	}
	if len(t.rows) < t.max {
		return
	}
	var (
		oldest K
		seq    uint64
		found  bool
	)
	for k, r := range t.rows {
		if !found || r.seq < seq {
			oldest, seq, found = k, r.seq, true
		}
	}
	delete(t.rows, oldest)
}
