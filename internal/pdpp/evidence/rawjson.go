package evidence

import (
	"bytes"
	"errors"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The walks below read a raw value already taken from an RS body (a
// record, its data, a field value) member by member or element by element
// with a jsontext.Decoder, handing each value on as a slice of the input
// (its capacity running to the input's end, so the compactor can tell its
// offset; a caller never appends to it); only names are decoded. They take
// what encoding/json takes (repeated names, invalid UTF-8), since what
// they walk was decoded already or is a stranger's value shown as it is.

// walkOptions are the options of every walk of a raw value.
var walkOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// errNotJSON is the error of a walk over a value of the wrong kind.
var errNotJSON = errors.New("not the JSON value expected")

// walker is a decoder over a bytes.Buffer, which it reads in place.
type walker struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

// walkers keeps walkers for reuse (what the collector leaves the pool):
// the compactor walks each nested object and array of a value with its
// own, and a decoder costs a kilobyte to make.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// newWalk returns a walker over raw; done gives it back.
func newWalk(raw []byte) *walker {
	w := walkers.Get().(*walker)
	w.buf = *bytes.NewBuffer(raw)
	w.dec.Reset(&w.buf, walkOptions)
	return w
}

// done gives w back, holding nothing of what it read.
func (w *walker) done() {
	w.buf = bytes.Buffer{}
	w.dec.Reset(&w.buf, walkOptions)
	walkers.Put(w)
}

// eachMember calls fn with every member of the JSON object raw, in order,
// each value a slice of raw; an error of fn ends the walk and is returned.
// The walk is bounded by the size of raw.
func eachMember(raw []byte, fn func(key string, val []byte) error) error {
	return eachRawMember(raw, func(q, val []byte) error {
		return fn(memberName(q), val)
	})
}

// eachRawMember is eachMember with each name quoted as it stands, also a
// slice of raw: a walk that only compares names needs no string for each
// (a stranger's object of 100,000 members cost a string each).
func eachRawMember(raw []byte, fn func(q, val []byte) error) error {
	w := newWalk(raw)
	defer w.done()
	dec := &w.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return errNotJSON
	}
	for dec.PeekKind() != '}' {
		q, err := dec.ReadValue() // the name, as a string value
		if err != nil {
			return err
		}
		qend := int(dec.InputOffset())
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		end := int(dec.InputOffset())
		if err := fn(raw[qend-len(q):qend], raw[end-len(val):end]); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// memberName is the name q (quoted, as eachRawMember gives it) decoded.
func memberName(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	s, _ := decodeString(q)
	return s
}

// rawName is the name q (quoted) decoded, a slice of q when it holds no
// escape (see eachRawMember).
func rawName(q []byte) []byte {
	if bytes.IndexByte(q, '\\') < 0 {
		return q[1 : len(q)-1]
	}
	return []byte(memberName(q))
}

// eachElement calls fn with every element of the JSON array raw, in order,
// each a slice of raw; an error of fn ends the walk and is returned. The
// walk is bounded by the size of raw.
func eachElement(raw []byte, fn func(val []byte) error) error {
	w := newWalk(raw)
	defer w.done()
	dec := &w.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return errNotJSON
	}
	for dec.PeekKind() != ']' {
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		end := int(dec.InputOffset())
		if err := fn(raw[end-len(val) : end]); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// validJSON reports whether raw is one JSON value (white space around it
// allowed), as json.Valid does.
func validJSON(raw []byte) bool { return jsontext.Value(raw).IsValid(walkOptions) }

// firstByte is the first byte of raw past white space, 0 when there is none.
func firstByte(raw []byte) byte {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 {
		return t[0]
	}
	return 0
}
