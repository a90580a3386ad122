package evidence

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
)

// splitKnown is jsonwalk.Members for decoding into a struct whose json keys are
// known: fn sees each member; a key repeated, or differing from a known one
// only by case (which json.Unmarshal would match), ends the walk with
// jsonwalk.ErrBadJSON so the caller can leave the body to encoding/json. The known
// keys, at most 64, must differ from each other by more than case. Bounded
// by len(raw) and len(known) per member.
func splitKnown(raw []byte, known []string, fn func(key string, val []byte) error) error {
	var seen uint64 // bit i: known[i] was read
	return jsonwalk.RawMembers(raw, func(rawKey, val []byte) error {
		var key string
		i := -1
		if inner := rawKey[1 : len(rawKey)-1]; jsonwalk.PlainString(inner) {
			// The common case: the key is its own text, matched without
			// making a string of it.
			for j, k := range known {
				if string(inner) == k {
					i = j
					break
				}
			}
			if i < 0 {
				key = string(inner)
			}
		} else {
			var err error
			if key, err = jsonwalk.DecodeString(rawKey); err != nil {
				return err
			}
			i = slices.Index(known, key)
		}
		if i >= 0 {
			if seen&(1<<i) != 0 {
				return jsonwalk.ErrBadJSON
			}
			seen |= 1 << i
			return fn(known[i], val)
		}
		for _, k := range known {
			if strings.EqualFold(key, k) {
				return jsonwalk.ErrBadJSON
			}
		}
		return fn(key, val)
	})
}

// intInto decodes the JSON number val into dst as json.Unmarshal does; a
// plain integer of up to 18 digits is read with strconv, anything else by
// encoding/json.
func intInto(dst *int, val []byte) error {
	digits := val
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return json.Unmarshal(val, dst)
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return json.Unmarshal(val, dst)
		}
	}
	n, err := strconv.Atoi(string(val))
	if err != nil {
		return json.Unmarshal(val, dst)
	}
	*dst = n
	return nil
}

// optIntInto is intInto for an optional number: null sets dst to nil.
func optIntInto(dst **int, val []byte) error {
	if val[0] == 'n' {
		return json.Unmarshal(val, dst)
	}
	var n int
	if err := intInto(&n, val); err != nil {
		return json.Unmarshal(val, dst)
	}
	*dst = &n
	return nil
}

// boolInto decodes the JSON value val into dst as json.Unmarshal does.
func boolInto(dst *bool, val []byte) error {
	switch string(val) {
	case "true":
		*dst = true
		return nil
	case "false":
		*dst = false
		return nil
	}
	return json.Unmarshal(val, dst)
}

// stringInto decodes the JSON string val into dst; null leaves dst as it
// is, as json.Unmarshal does.
func stringInto(dst *string, val []byte) error {
	if val[0] == 'n' {
		return json.Unmarshal(val, dst)
	}
	s, err := jsonwalk.DecodeString(val)
	if err == nil {
		*dst = s
	}
	return err
}

// stringSummary is what DescribeField needs of a JSON string value: its
// first characters, its length, and whether it looks like encoded binary.
type stringSummary struct {
	prefix     string // the first max characters, decoded
	cut        bool   // the value has more than max characters
	chars      int    // characters (code points) of the decoded value
	bytes      int    // bytes of the decoded value
	binaryLike bool   // as IsBinaryLike of the decoded value
	mediaType  string // of a data: URI, as dataURIMediaType
}

// summarizeString reads the JSON string q (quotes included, from a body
// already checked as JSON) as jsonwalk.DecodeString would decode it, but keeps only
// its first max characters: a long value is walked once and never held
// decoded in whole. Runs without escapes are counted in bulk; anything it
// does not expect (invalid UTF-8, a raw quote or control byte, a bad
// escape) falls back to decoding the whole value. The walk is bounded by
// len(q).
func summarizeString(q []byte, max int) stringSummary {
	whole := func() stringSummary {
		s, _ := jsonwalk.DecodeString(q)
		shown, cut := Cut(s, max)
		sum := stringSummary{prefix: shown, cut: cut, chars: CountChars(s), bytes: len(s), binaryLike: IsBinaryLike(s)}
		if sum.binaryLike {
			sum.mediaType = dataURIMediaType(s)
		}
		return sum
	}
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' || len(q) <= 4*max+2 {
		return whole() // short enough to decode whole
	}
	inner := q[1 : len(q)-1]
	if !utf8.Valid(inner) {
		return whole()
	}
	var sum stringSummary
	var pre []byte   // the decoded prefix, up to max characters
	var head []byte  // the first 100 decoded bytes, for the data: URI check
	alphabet := true // every decoded byte is in the base64-like alphabet
	// add takes a run of decoded, valid UTF-8 text.
	add := func(run []byte) bool {
		for _, c := range run {
			if c < ' ' {
				return false // a raw control byte: not JSON, left to jsonwalk.DecodeString
			}
			if alphabet && !base64Like(c) {
				alphabet = false
			}
		}
		if len(head) < 100 {
			head = append(head, run[:min(len(run), 100-len(head))]...)
		}
		if sum.chars < max {
			i := 0
			for n := sum.chars; n < max && i < len(run); n++ {
				_, size := utf8.DecodeRune(run[i:])
				i += size
			}
			pre = append(pre, run[:i]...)
		}
		sum.chars += utf8.RuneCount(run)
		sum.bytes += len(run)
		return true
	}
	var buf [utf8.UTFMax]byte
	r := 0
	for r < len(inner) {
		next := bytes.IndexByte(inner[r:], '\\')
		if next < 0 {
			next = len(inner) - r
		}
		if next > 0 {
			run := inner[r : r+next]
			if bytes.IndexByte(run, '"') >= 0 || !add(run) {
				return whole()
			}
			r += next
			continue
		}
		// An escape at r.
		if r+1 >= len(inner) {
			return whole()
		}
		var dec rune
		switch inner[r+1] {
		case '"', '\\', '/':
			dec = rune(inner[r+1])
		case 'b':
			dec = '\b'
		case 'f':
			dec = '\f'
		case 'n':
			dec = '\n'
		case 'r':
			dec = '\r'
		case 't':
			dec = '\t'
		case 'u':
			rr := jsonwalk.Hex4(inner[r+2:])
			if rr < 0 {
				return whole()
			}
			r += 4 // past the hex digits; the 2 of the escape are added below
			if utf16.IsSurrogate(rr) {
				rr1 := rune(-1)
				if r+3 < len(inner) && inner[r+2] == '\\' && inner[r+3] == 'u' {
					rr1 = jsonwalk.Hex4(inner[r+4:])
				}
				if d := utf16.DecodeRune(rr, rr1); d != unicode.ReplacementChar {
					r += 6
					rr = d
				} else {
					rr = unicode.ReplacementChar
				}
			}
			dec = rr
		default:
			return whole()
		}
		r += 2
		enc := buf[:utf8.EncodeRune(buf[:], dec)]
		for _, c := range enc {
			if alphabet && !base64Like(c) {
				alphabet = false
			}
		}
		if len(head) < 100 {
			head = append(head, enc[:min(len(enc), 100-len(head))]...)
		}
		if sum.chars < max {
			pre = append(pre, enc...)
		}
		sum.chars++
		sum.bytes += len(enc)
	}
	sum.cut = sum.chars > max
	sum.prefix = string(pre)
	hs := string(head)
	sum.binaryLike = (strings.HasPrefix(hs, "data:") && strings.Contains(hs, ";base64,")) ||
		(sum.bytes >= BinaryLikeMinChars && alphabet)
	if sum.binaryLike {
		sum.mediaType = dataURIMediaType(hs)
	}
	return sum
}

// base64Like reports whether c is in the alphabet IsBinaryLike accepts.
func base64Like(c byte) bool {
	switch {
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9',
		c == '+', c == '/', c == '=', c == '-', c == '_', c == '\n', c == '\r':
		return true
	}
	return false
}

// objectInto walks the JSON object val with splitKnown(val, known, fn), as
// json.Unmarshal decodes an object into a struct that starts zero; null
// leaves the struct as it is, as encoding/json does, and any other value is
// jsonwalk.ErrBadJSON (encoding/json would fail on it).
func objectInto(val []byte, known []string, fn func(key string, val []byte) error) error {
	switch val[0] {
	case 'n':
		return nil
	case '{':
		return splitKnown(val, known, fn)
	}
	return jsonwalk.ErrBadJSON
}

// sliceInto decodes the JSON array val into dst as json.Unmarshal decodes
// into a nil slice: null sets dst to nil, [] to an empty, non-nil slice,
// and each element is decoded by elem into a zero T (so a null element
// stays zero, as elem leaves it). Any other value is jsonwalk.ErrBadJSON. Bounded by
// the number of elements in val.
func sliceInto[T any](dst *[]T, val []byte, elem func(*T, []byte) error) error {
	switch val[0] {
	case 'n':
		*dst = nil
		return nil
	case '[':
	default:
		return jsonwalk.ErrBadJSON
	}
	s := []T{}
	err := jsonwalk.Elements(val, func(v []byte) error {
		var zero T
		s = append(s, zero)
		return elem(&s[len(s)-1], v)
	})
	*dst = s
	return err
}

// pointerInto decodes val into *dst as json.Unmarshal decodes into a nil
// pointer: null sets dst to nil, an object to a new T decoded by elem.
// Any other value is jsonwalk.ErrBadJSON.
func pointerInto[T any](dst **T, val []byte, elem func(*T, []byte) error) error {
	switch val[0] {
	case 'n':
		*dst = nil
		return nil
	case '{':
		p := new(T)
		*dst = p
		return elem(p, val)
	}
	return jsonwalk.ErrBadJSON
}

// optStringInto decodes val into *dst as json.Unmarshal decodes into a nil
// *string: null sets dst to nil, a string to a new string. Any other value
// is jsonwalk.ErrBadJSON.
func optStringInto(dst **string, val []byte) error {
	switch val[0] {
	case 'n':
		*dst = nil
		return nil
	case '"':
		s, err := jsonwalk.DecodeString(val)
		if err != nil {
			return err
		}
		*dst = &s
		return nil
	}
	return jsonwalk.ErrBadJSON
}

// rawInto sets dst to a copy of val, the value's bytes without the white
// space around it, as json.RawMessage's UnmarshalJSON does (null included:
// a RawMessage takes the literal null).
func rawInto(dst *json.RawMessage, val []byte) {
	*dst = append(json.RawMessage(nil), val...)
}
