package evidence

import (
	"bytes"
	"errors"
)

// errBadJSON is returned by the splitters for input that is not the JSON
// they expect; callers check validity first, so it means a programming
// error or a body that is not an object.
var errBadJSON = errors.New("malformed JSON")

// splitMembers calls fn with each member of the JSON object raw, in order:
// the key decoded and the value as a slice of raw (not copied). raw must be
// valid JSON (json.Valid); the walk reads each byte once, with no decoding,
// and is bounded by len(raw).
func splitMembers(raw []byte, fn func(key string, val []byte) error) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return errNotObject
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return errBadJSON
		}
		ke := skipString(raw, i)
		key, err := decodeString(raw[i:ke])
		if err != nil {
			return err
		}
		i = skipSpace(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return errBadJSON
		}
		vs := skipSpace(raw, i+1)
		ve := skipValue(raw, vs)
		if ve <= vs {
			return errBadJSON
		}
		if err := fn(key, raw[vs:ve]); err != nil {
			return err
		}
		var done, ok bool
		if i, done, ok = afterItem(raw, ve, '}'); !ok {
			return errBadJSON
		} else if done {
			return nil
		}
	}
	return errBadJSON
}

// splitElements calls fn with each element of the JSON array raw, in order,
// under the same terms as splitMembers.
func splitElements(raw []byte, fn func(val []byte) error) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return errBadJSON
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return nil
	}
	for i < len(raw) {
		ve := skipValue(raw, i)
		if ve <= i {
			return errBadJSON
		}
		if err := fn(raw[i:ve]); err != nil {
			return err
		}
		var done, ok bool
		if i, done, ok = afterItem(raw, ve, ']'); !ok {
			return errBadJSON
		} else if done {
			return nil
		}
	}
	return errBadJSON
}

// afterItem reads what follows one member or element of a JSON object or
// array, from b[i] on: a comma, after which the next item starts at the
// returned index, or close, which ends the container (the returned index
// is just past it, and done is true). Anything else is not ok.
func afterItem(b []byte, i int, close byte) (next int, done, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false, true
	case close:
		return i + 1, true, true
	}
	return i, false, false
}

// firstByte returns the first byte of b after JSON white space, or 0.
func firstByte(b []byte) byte {
	if i := skipSpace(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
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

// skipString returns the index just past the string starting at b[i] ('"'):
// the first quote after it preceded by an even run of backslashes. Quotes
// are found with bytes.IndexByte, so long texts are skipped in large steps;
// each byte is looked at a bounded number of times.
func skipString(b []byte, i int) int {
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

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
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
