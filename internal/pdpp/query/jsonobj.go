package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// member is one key/value pair of a JSON object, in document order.
type member struct {
	key   string
	value json.RawMessage
}

// JSON value kinds, as classified by kindOf.
const (
	kindNone   = iota // absent or only whitespace
	kindNull          // null
	kindObject        // {...}
	kindArray         // [...]
	kindString        // "..."
	kindNumber        // 1, -2.5, 1e3
	kindBool          // true, false
)

var kindNames = map[int]string{
	kindNone:   "nothing",
	kindNull:   "null",
	kindObject: "an object",
	kindArray:  "an array",
	kindString: "a string",
	kindNumber: "a number",
	kindBool:   "a boolean",
}

// kindOf classifies a raw JSON value by its first significant byte. It does
// not check that the value is well formed.
func kindOf(raw []byte) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return kindNone
	}
	switch raw[0] {
	case 'n':
		return kindNull
	case '{':
		return kindObject
	case '[':
		return kindArray
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	default:
		return kindNumber
	}
}

// errDuplicateKey reports a key that occurs twice in one object.
type errDuplicateKey struct{ key string }

func (e errDuplicateKey) Error() string { return fmt.Sprintf("duplicate key %q", e.key) }

// objectMembers splits a JSON object into its members, in document order.
// It rejects malformed JSON, trailing data after the object and duplicate
// keys (which encoding/json would silently collapse, last one winning).
func objectMembers(raw []byte) ([]member, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, errDuplicateKey{key}
		}
		seen[key] = true
		out = append(out, member{key: key, value: bytes.TrimSpace(v)})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON object")
	}
	return out, nil
}

// scalarText returns the query-string text of a JSON scalar: a string's
// decoded content, a number's literal text exactly as written, or
// "true"/"false". ok is false for null, objects and arrays.
func scalarText(raw json.RawMessage) (text string, kind int, ok bool) {
	kind = kindOf(raw)
	switch kind {
	case kindString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", kind, false
		}
		return s, kind, true
	case kindNumber:
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			return "", kind, false
		}
		return n.String(), kind, true
	case kindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", kind, false
		}
		if b {
			return "true", kind, true
		}
		return "false", kind, true
	}
	return "", kind, false
}

// isAbsent reports whether an optional raw argument was not given: no
// bytes, only whitespace, or JSON null.
func isAbsent(raw []byte) bool {
	k := kindOf(raw)
	if k == kindNone {
		return true
	}
	return k == kindNull && string(bytes.TrimSpace(raw)) == "null"
}

// snippet renders a raw value for an error message, shortened when long.
func snippet(raw []byte, max int) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		buf.Reset()
		buf.Write(bytes.TrimSpace(raw))
	}
	s := buf.String()
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// quoteKey renders a key for an error message, shortened when long.
func quoteKey(key string) string {
	const max = 64
	if len(key) > max {
		return fmt.Sprintf("%q…", key[:max])
	}
	return fmt.Sprintf("%q", key)
}
