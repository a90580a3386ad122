package jsonwalk

import (
	"bytes"
	"errors"
)

// ErrNotObject is returned when a value that must be a JSON object is not.
var ErrNotObject = errors.New("not a JSON object")

// ErrBadJSON is returned by Members and Elements for input that is not the JSON
// they expect; callers check validity first, so it means a programming
// error or a body that is not an object.
var ErrBadJSON = errors.New("malformed JSON")

// Members calls fn with each member of the JSON object raw, in order:
// the key decoded and the value as a slice of raw (not copied). raw must be
// valid JSON (json.Valid); the walk reads each byte once, decoding only the
// keys, and is bounded by len(raw).
func Members(raw []byte, fn func(key string, val []byte) error) error {
	return RawMembers(raw, func(key, val []byte) error {
		k, err := DecodeString(key)
		if err != nil {
			return err
		}
		return fn(k, val)
	})
}

// RawMembers is Members with each key as it stands in raw, quotes and
// escapes included, for callers that compare keys without decoding them.
func RawMembers(raw []byte, fn func(key, val []byte) error) error {
	i := SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ErrNotObject
	}
	i = SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return ErrBadJSON
		}
		ke := SkipString(raw, i)
		key := raw[i:ke]
		i = SkipSpace(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return ErrBadJSON
		}
		vs := SkipSpace(raw, i+1)
		ve := SkipValue(raw, vs)
		if ve <= vs {
			return ErrBadJSON
		}
		if err := fn(key, raw[vs:ve]); err != nil {
			return err
		}
		var done, ok bool
		if i, done, ok = AfterItem(raw, ve, '}'); !ok {
			return ErrBadJSON
		} else if done {
			return nil
		}
	}
	return ErrBadJSON
}

// Elements calls fn with each element of the JSON array raw, in order,
// under the same terms as Members.
func Elements(raw []byte, fn func(val []byte) error) error {
	i := SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return ErrBadJSON
	}
	i = SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return nil
	}
	for i < len(raw) {
		ve := SkipValue(raw, i)
		if ve <= i {
			return ErrBadJSON
		}
		if err := fn(raw[i:ve]); err != nil {
			return err
		}
		var done, ok bool
		if i, done, ok = AfterItem(raw, ve, ']'); !ok {
			return ErrBadJSON
		} else if done {
			return nil
		}
	}
	return ErrBadJSON
}

// AfterItem reads what follows one member or element of a JSON object or
// array, from b[i] on: a comma, after which the next item starts at the
// returned index, or close, which ends the container (the returned index
// is just past it, and done is true). Anything else is not ok.
func AfterItem(b []byte, i int, close byte) (next int, done, ok bool) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return SkipSpace(b, i+1), false, true
	case close:
		return i + 1, true, true
	}
	return i, false, false
}

// FirstByte returns the first byte of b after JSON white space, or 0.
func FirstByte(b []byte) byte {
	if i := SkipSpace(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipString returns the index just past the string starting at b[i] ('"'):
// the first quote after it preceded by an even run of backslashes. Quotes
// are found with bytes.IndexByte, so long texts are skipped in large steps;
// each byte is looked at a bounded number of times.
func SkipString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return len(b)
}

// SkipValue returns the index just past the value starting at b[i].
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
