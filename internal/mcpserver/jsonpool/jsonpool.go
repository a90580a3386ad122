package jsonpool

import (
	"bytes"
	"sync"

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

// readers holds at most one Reader per walk under way at that moment; the
// collector empties it.
var readers = sync.Pool{New: func() any { return new(Reader) }}

// Get returns a Reader over b with the AsDecoded options. Hand it back
// with Put when done.
func Get(b []byte) *Reader {
	r := readers.Get().(*Reader)
	r.src = *bytes.NewBuffer(b)
	r.Reset(&r.src, AsDecoded...)
	return r
}

// Put takes r back; r must not be used after.
func Put(r *Reader) {
	r.src = bytes.Buffer{} // holds no text while pooled
	readers.Put(r)
}
