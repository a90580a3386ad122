package jsonpool

import (
	"bytes"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"
)

// AsDecoded are the options under which a Reader reads JSON as
// encoding/json (and so mcp-go) reads it: a repeated member name is taken
// (the last wins where a decode keeps one) and invalid UTF-8 is taken
// (read as U+FFFD).
var AsDecoded = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// Reader is a jsontext.Decoder over one JSON text in memory.
type Reader struct {
	jsontext.Decoder
	src  bytes.Buffer // read in place by the decoder, never copied
	size int          // of the text read
}

// free holds idle Readers, at most maxFree, one per slot; one more is
// left to the collector. Unlike a sync.Pool it is not emptied by a
// collection, which under a call's allocation rate comes about once a call
// (several MB a call in BenchmarkServerCalls): a sync.Pool there made a new
// Reader, and grew its state stack again, for most walks. Slots, not a
// channel: a channel's two operations cost 7% of the look every stdio
// line gets (BenchmarkPendingRequestID).
var free [maxFree]atomic.Pointer[Reader]

// maxFree bounds the idle Readers kept: more walks than that at once are
// rare (one per call being read), and each keeps only its state stack.
const maxFree = 32

// maxKeptText is the largest text an idle Reader's decoder may still refer
// to: idle Readers keep at most maxFree × maxKeptText (2 MiB) of texts
// alive.
const maxKeptText = 64 << 10

// Get returns a Reader over b with the AsDecoded options. Hand it back
// with Put when done.
func Get(b []byte) *Reader {
	var r *Reader
	for i := range free { // bounded by maxFree
		if p := free[i].Load(); p != nil && free[i].CompareAndSwap(p, nil) {
			r = p
			break
		}
	}
	if r == nil {
		r = new(Reader)
	}
	r.src, r.size = *bytes.NewBuffer(b), len(b)
	r.Reset(&r.src, AsDecoded...)
	return r
}

// Put takes r back; r must not be used after.
func Put(r *Reader) {
	r.src = bytes.Buffer{}
	if r.size > maxKeptText {
		// The decoder forgets a large text as well: reset over an empty
		// source (a second reset per walk, so not for small texts).
		r.Reset(&r.src)
	}
	for i := range free { // bounded by maxFree
		if free[i].Load() == nil && free[i].CompareAndSwap(nil, r) {
			return
		}
	}
}
