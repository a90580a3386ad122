package evidence

import (
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// replyOptions have json v2 write a reply's values as MarshalNoEscape
// (encoding/json, HTML escaping off) writes them: a map's keys in byte
// order (Deterministic), a nil map or slice as null, U+2028 and U+2029 as
// \u2028 and \u2029 (EscapeForJS). A raw value (a json.RawMessage argument)
// is compacted with its escapes kept (PreserveRawStrings) and its repeated
// names kept (AllowDuplicateNames), as encoding/json keeps them. Two
// differences are left, neither in a reply's bytes on the wire nor in its
// weight: a raw U+2028 or U+2029 inside a raw value is escaped, which
// encoding/json leaves to the reply's encoder (it escapes them, and
// WireLen counts them so); and a byte of invalid UTF-8 in a string inside
// a struct, map or slice is written as U+FFFD itself where encoding/json
// writes the escape \ufffd (the same string once read), which no such
// string of a reply holds: each was decoded from JSON, which reads invalid
// UTF-8 as U+FFFD, or cut from one on a character boundary. A string
// alone is written by appendString, with encoding/json's bytes for any
// string. The reply's encoder adds the HTML escaping (counted by WireLen),
// so a reply's weight is the length of these bytes as ever.
// TestSearchAppendersMatchMarshal, FuzzOrderedJSON and FuzzAppendJSONString
// hold the bytes to encoding/json's.
var replyOptions = jsonv2.JoinOptions(
	jsonv2.Deterministic(true), jsonv2.FormatNilMapAsNull(true), jsonv2.FormatNilSliceAsNull(true),
	jsontext.EscapeForJS(true), jsontext.AllowInvalidUTF8(true),
	jsontext.PreserveRawStrings(true), jsontext.AllowDuplicateNames(true),
)

// appendJSON appends v marshaled with replyOptions, or null when v cannot
// be marshaled (as mustMarshal writes). The usual values of a call's
// arguments (strings, integers, booleans) are appended without a marshal
// (one allocation less each: Continuation.Call writes every argument).
func appendJSON(b []byte, v any) []byte {
	switch t := v.(type) {
	case string:
		return appendString(b, t)
	case int:
		return strconv.AppendInt(b, int64(t), 10)
	case bool:
		return strconv.AppendBool(b, t)
	}
	out, err := jsonv2.Marshal(v, replyOptions)
	if err != nil {
		out = []byte("null")
	}
	if b == nil {
		return out
	}
	return append(b, out...)
}

// appendTo appends c as MarshalNoEscape writes it: the tool, then the
// arguments by name in byte order (appendArgs). json v2 writes the same
// bytes from the struct alone (its map in Deterministic order), at 15
// allocations for a call of four arguments where this takes one, and more
// than twice the CPU (reflection's values for the map's keys and values
// and for each interface): every hit of a search and every window writes
// one or more.
func (c *Continuation) appendTo(b []byte) []byte {
	b = append(b, `{"tool":`...)
	b = appendString(b, c.Tool)
	if c.Arguments == nil {
		return append(b, `,"arguments":null}`...)
	}
	b = append(b, `,"arguments":`...)
	return append(appendArgs(b, c.Arguments, strings.Compare, false), '}')
}

// appendString appends s as MarshalNoEscape writes it. jsontext.AppendQuote
// writes those bytes for valid UTF-8 without U+2028 or U+2029, which it
// leaves as they are; encoding/json writes any other string (a call's
// argument as a caller typed it, a text holding a line separator).
// jsonv2.Marshal of a string costs three to five times AppendQuote's CPU
// and three allocations (strings of 22 and 80 bytes), and every argument
// of every call a text shows, and every string of a summarized JSON value,
// is written here.
func appendString(b []byte, s string) []byte {
	n := len(b)
	b, err := jsontext.AppendQuote(b, s) // an error on invalid UTF-8
	if err == nil && (strings.IndexByte(s, 0xe2) < 0 || !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")) {
		return b
	}
	out, _ := MarshalNoEscape(s) // a string always marshals
	return append(b[:n], out...)
}
