package evidence

import (
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// replyOptions have json v2 write a reply's values as MarshalNoEscape
// (encoding/json, HTML escaping off) writes them: map keys in byte order,
// nil maps and slices as null, U+2028 and U+2029 escaped (EscapeForJS), a
// raw value (a json.RawMessage argument) compacted with its escapes and
// repeated names kept. Two differences are left, in neither a reply's
// wire bytes nor its weight: a raw U+2028 or U+2029 inside a raw value is
// escaped here, by the reply's encoder there (WireLen counts it so); and
// invalid UTF-8 in a string inside a struct, map or slice is written as
// U+FFFD, not \ufffd (the same string once read), which no such string
// holds: each was decoded from JSON (invalid UTF-8 read as U+FFFD) or cut
// from one on a character boundary. A string alone is written by
// appendString, with encoding/json's bytes for any string. The reply's
// encoder adds the HTML escaping (counted by WireLen).
// TestSearchAppendersMatchMarshal, FuzzOrderedJSON and FuzzAppendJSONString
// hold the bytes to encoding/json's.
var replyOptions = jsonv2.JoinOptions(
	jsonv2.Deterministic(true), jsonv2.FormatNilMapAsNull(true), jsonv2.FormatNilSliceAsNull(true),
	jsontext.EscapeForJS(true), jsontext.AllowInvalidUTF8(true),
	jsontext.PreserveRawStrings(true), jsontext.AllowDuplicateNames(true),
)

// appendJSON appends v marshaled with replyOptions, or null when v cannot
// be marshaled (as mustMarshal). A call's usual argument values (strings,
// integers, booleans) skip the marshal, one allocation less each.
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
// bytes at 15 allocations for a call of four arguments where this takes
// one, and more than twice the CPU (reflection on the map and each
// interface): every hit of a search and every window writes one or more.
func (c *Continuation) appendTo(b []byte) []byte {
	b = append(b, `{"tool":`...)
	b = appendString(b, c.Tool)
	if c.Arguments == nil {
		return append(b, `,"arguments":null}`...)
	}
	b = append(b, `,"arguments":`...)
	return append(appendArgs(b, c.Arguments, strings.Compare, false), '}')
}

// appendString appends s as MarshalNoEscape writes it: by
// jsontext.AppendQuote for valid UTF-8 without U+2028 or U+2029 (which it
// leaves as they are), else by encoding/json (a call's argument as a
// caller typed it, a text holding a line separator). jsonv2.Marshal of a
// string costs three to five times AppendQuote's CPU and three
// allocations (strings of 22 and 80 bytes), and every argument of every
// call a text shows, and every string of a summarized JSON value, is
// written here.
func appendString(b []byte, s string) []byte {
	n := len(b)
	b, err := jsontext.AppendQuote(b, s) // an error on invalid UTF-8
	if err == nil && (strings.IndexByte(s, 0xe2) < 0 || !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")) {
		return b
	}
	out, _ := MarshalNoEscape(s) // a string always marshals
	return append(b[:n], out...)
}
