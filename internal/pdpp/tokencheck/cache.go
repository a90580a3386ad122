package tokencheck

import (
	"sync"
	"time"
)

// cache keeps verdicts by token hash. Size: at most max entries; age: at
// most the lifetime each entry was put with. When full, expired entries go
// first, then the entry closest to expiry (one O(max) scan per insertion
// into a full cache).
type cache struct {
	mu    sync.Mutex
	max   int
	now   func() time.Time
	items map[[32]byte]entry
}

type entry struct {
	res     Result
	expires time.Time
}

func newCache(max int, now func() time.Time) *cache {
	return &cache{max: max, now: now, items: map[[32]byte]entry{}}
}

func (c *cache) get(k [32]byte) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return Result{}, false
	}
	if c.now().After(e.expires) {
		delete(c.items, k)
		return Result{}, false
	}
	return e.res, true
}

// put keeps r under k for ttl.
func (c *cache) put(k [32]byte, r Result, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.items[k]; !ok && len(c.items) >= c.max {
		makeRoom(c.items, c.max, func(e entry) time.Time { return e.expires }, now.After)
	}
	c.items[k] = entry{res: r, expires: now.Add(ttl)}
}

// makeRoom deletes the entries of m whose time (at) stale reports, then,
// while m still holds max, the one with the earliest time: one O(len(m))
// scan.
func makeRoom[K comparable, V any](m map[K]V, max int, at func(V) time.Time, stale func(time.Time) bool) {
	var oldest K
	var oldestAt time.Time
	for k, v := range m {
		if t := at(v); stale(t) {
			delete(m, k)
		} else if oldestAt.IsZero() || t.Before(oldestAt) {
			oldest, oldestAt = k, t
		}
	}
	if len(m) >= max {
		delete(m, oldest)
	}
}

func (c *cache) remove(k [32]byte) {
	c.mu.Lock()
	delete(c.items, k)
	c.mu.Unlock()
}

// flights lets concurrent first checks of one token share one RS read. At
// most max distinct tokens are read at once.
type flights struct {
	mu  sync.Mutex
	max int
	m   map[[32]byte]*flight
}

type flight struct {
	done chan struct{}
	res  Result
}

// join returns the flight for k; leader is true when the caller must start
// the read. ok is false when max flights are already running.
func (f *flights) join(k [32]byte) (fl *flight, leader, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, found := f.m[k]; found {
		return fl, false, true
	}
	if len(f.m) >= f.max {
		return nil, false, false
	}
	fl = &flight{done: make(chan struct{})}
	f.m[k] = fl
	return fl, true, true
}

func (f *flights) finish(k [32]byte, fl *flight, r Result) {
	f.mu.Lock()
	delete(f.m, k)
	f.mu.Unlock()
	fl.res = r
	close(fl.done)
}
