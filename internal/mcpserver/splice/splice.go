package splice

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// MaxAge bounds how long a value waits in a Store for the reply that
// carries it: a reply that is never written (its call was abandoned) does
// not keep its bytes longer. Older entries are dropped whenever a value is
// added. Every entry also keeps its call's reservation of bytes in flight
// (see package inflight) until it is written or dropped, so the bytes a
// Store holds are bounded by that limit.
const MaxAge = 10 * time.Minute

// Store holds the values of one request's replies (HTTP) or of one stdio
// session until the transport writes them. It is safe for concurrent use.
type Store struct {
	prefix []byte // `"splice:<nonce>:` as it appears in an encoded reply

	mu      sync.Mutex
	seq     uint64
	closed  bool
	entries map[uint64]entry
	taken   map[uint64]func() // taken by Take, released by its done or by Close
	pending atomic.Int64      // len(entries), read without the lock
}

type entry struct {
	raw     []byte
	release func()
	born    time.Time
}

// NewStore returns an empty Store with a placeholder prefix of its own (a
// random 128-bit nonce, so no RS value can name a placeholder).
func NewStore() *Store {
	var n [16]byte
	_, _ = rand.Read(n[:])
	return &Store{prefix: []byte(`"splice:` + hex.EncodeToString(n[:]) + `:`), entries: map[uint64]entry{}, taken: map[uint64]func(){}}
}

type storeKey struct{}

// WithStore returns ctx carrying s.
func WithStore(ctx context.Context, s *Store) context.Context {
	return context.WithValue(ctx, storeKey{}, s)
}

// FromContext returns the Store ctx carries, or nil.
func FromContext(ctx context.Context) *Store {
	s, _ := ctx.Value(storeKey{}).(*Store)
	return s
}

// Value returns what a result should hold for the JSON value raw, which
// must be valid JSON: a placeholder the transport replaces by raw when ctx
// carries a Store, else raw itself as a json.RawMessage. release, when not
// nil, is called once raw is no longer held for the reply: after the
// transport wrote it, when it is dropped, or at once when it was not
// stored. raw is not copied; the caller must not change it.
//
// A value with a raw line break (pretty-printed JSON, legal between
// tokens) is compacted first, since a stdio reply is one line; one with
// invalid UTF-8 is not stored, so the library's encoding replaces it as it
// always did.
func Value(ctx context.Context, raw []byte, release func()) any {
	if release == nil {
		release = func() {}
	}
	release = sync.OnceFunc(release)
	raw = bytes.TrimSpace(raw)
	s := FromContext(ctx)
	if s == nil || !utf8.Valid(raw) {
		release()
		return json.RawMessage(raw)
	}
	if bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0 {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			release()
			return json.RawMessage(raw)
		}
		raw = b.Bytes()
	}
	now := time.Now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		release()
		return json.RawMessage(raw)
	}
	var stale []func()
	for id, e := range s.entries {
		if now.Sub(e.born) > MaxAge {
			stale = append(stale, e.release)
			delete(s.entries, id)
		}
	}
	s.seq++
	id := s.seq
	s.entries[id] = entry{raw: raw, release: release, born: now}
	s.pending.Store(int64(len(s.entries)))
	s.mu.Unlock()
	for _, r := range stale {
		r()
	}
	return placeholder(string(s.prefix[1:]) + strconv.FormatUint(id, 10))
}

// placeholder encodes as a JSON string of letters, digits and colons,
// which every encoder writes unchanged.
type placeholder string

// Pending reports whether the store holds values not yet written; a
// transport skips looking for placeholders when it holds none.
func (s *Store) Pending() bool { return s != nil && s.pending.Load() > 0 }

// Take splits the encoded reply b at each placeholder of this store:
// parts alternate between slices of b (even indexes) and the stored values
// (odd indexes), in order, and size is their total length. Call done once
// the values are written (or dropped); Close does it for any that are not.
// Bytes that only look like a placeholder of an unknown id stay as they
// are. b without any placeholder gives parts = [b].
func (s *Store) Take(b []byte) (parts [][]byte, size int64, done func()) {
	done = func() {}
	if !s.Pending() {
		return [][]byte{b}, int64(len(b)), done
	}
	var taken []uint64
	rest := b
	start := 0 // where the literal run being gathered starts in b
	for {
		i := bytes.Index(rest, s.prefix)
		if i < 0 {
			break
		}
		at := len(b) - len(rest) + i // offset of the placeholder in b
		tail := rest[i+len(s.prefix):]
		end := bytes.IndexByte(tail, '"')
		id, err := strconv.ParseUint(string(tail[:max(end, 0)]), 10, 64)
		var e entry
		ok := end > 0 && err == nil
		if ok {
			s.mu.Lock()
			if e, ok = s.entries[id]; ok {
				delete(s.entries, id)
				s.taken[id] = e.release
			}
			s.pending.Store(int64(len(s.entries)))
			s.mu.Unlock()
		}
		if !ok {
			rest = rest[i+len(s.prefix):]
			continue
		}
		parts = append(parts, b[start:at], e.raw)
		size += int64(at - start + len(e.raw))
		taken = append(taken, id)
		start = at + len(s.prefix) + end + 1
		rest = b[start:]
	}
	parts = append(parts, b[start:])
	size += int64(len(b) - start)
	if len(taken) > 0 {
		done = sync.OnceFunc(func() {
			s.mu.Lock()
			var rel []func()
			for _, id := range taken {
				if r, ok := s.taken[id]; ok {
					rel = append(rel, r)
					delete(s.taken, id)
				}
			}
			s.mu.Unlock()
			for _, r := range rel {
				r()
			}
		})
	}
	return parts, size, done
}

// Expand writes b to w with every placeholder of this store replaced by
// its value, each part in its own Write, and gives the values back.
func (s *Store) Expand(w io.Writer, b []byte) error {
	parts, _, done := s.Take(b)
	defer done()
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// Close releases every value not released yet, taken or not; values
// added afterwards are not stored. A transport closes the store of a
// request once its reply is written.
func (s *Store) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	entries, taken := s.entries, s.taken
	s.entries, s.taken = map[uint64]entry{}, map[uint64]func(){}
	s.pending.Store(0)
	s.mu.Unlock()
	for _, e := range entries {
		e.release()
	}
	for _, r := range taken {
		r()
	}
}
