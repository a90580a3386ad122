package jsonpool

import (
	"bytes"

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
	src bytes.Buffer // read in place by the decoder, never copied
}

// free holds idle Readers, at most maxFree; one more is left to the
// collector. Unlike a sync.Pool it is not emptied by a collection, which
// under a call's allocation rate comes about once a call (several MB a call
// in BenchmarkServerCalls): a sync.Pool there made a new Reader, and grew
// its state stack again, for most walks.
var free = make(chan *Reader, maxFree)

// maxFree bounds the idle Readers kept: more walks than that at once are
// rare (one per call being read), and each keeps only its state stack.
const maxFree = 32

// Get returns a Reader over b with the AsDecoded options. Hand it back
// with Put when done.
func Get(b []byte) *Reader {
	var r *Reader
	select {
	case r = <-free:
	default:
		r = new(Reader)
	}
	r.src = *bytes.NewBuffer(b)
	r.Reset(&r.src, AsDecoded...)
	return r
}

// Put takes r back; r must not be used after.
func Put(r *Reader) {
	// The decoder forgets the text as well: reset over an empty source.
	r.src = bytes.Buffer{}
	r.Reset(&r.src)
	select {
	case free <- r:
	default:
	}
}
