package query

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
)

// member is one key/value pair of a JSON object, in document order.
type member struct {
	key   string
	value json.RawMessage
}

// kindNames name the kinds of JSON values (jsontext.Value's Kind) in an
// error message.
var kindNames = map[jsontext.Kind]string{'n': "null", '{': "an object", '[': "an array", '"': "a string", '0': "a number", 't': "a boolean", 'f': "a boolean"}

// kindName names k in an error message; "nothing" for 0.
func kindName(k jsontext.Kind) string { return cmp.Or(kindNames[k], "nothing") }

// errDuplicateKey reports a key that occurs twice in one object.
type errDuplicateKey struct{ key string }

func (e errDuplicateKey) Error() string { return fmt.Sprintf("duplicate key %q", e.key) }

// objectMembers splits a JSON object into its members, in document order,
// in one pass of a pooled jsontext.Decoder (jsonpool) reading it as
// json.Valid does (invalid UTF-8 read as U+FFFD). It rejects malformed
// JSON, trailing data after the object and duplicate keys (which
// encoding/json would silently collapse, last one winning; the decoder
// takes them, and errDuplicateKey names the key). jsontext's own check of
// names cannot serve: it refuses a repeated name inside a member's value
// too, which the member's own reading reports better (a repeated operator).
func objectMembers(raw []byte) ([]member, error) {
	dec := jsonpool.Get(raw) // read in place: values alias raw
	defer jsonpool.Put(dec)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, errors.New("not valid JSON")
	}
	if tok.Kind() != '{' {
		if dec.SkipValue() != nil || !atEOF(dec) {
			return nil, errors.New("not valid JSON")
		}
		return nil, errors.New("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.PeekKind() == '"' { // each turn reads a member: bounded by len(raw)
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, errors.New("not valid JSON")
		}
		key := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, errors.New("not valid JSON")
		}
		if seen[key] {
			return nil, errDuplicateKey{key}
		}
		seen[key] = true
		out = append(out, member{key: key, value: json.RawMessage(v)})
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' || !atEOF(dec) {
		return nil, errors.New("not valid JSON")
	}
	return out, nil
}

// atEOF reports whether nothing but white space follows what dec has read.
func atEOF(dec *jsonpool.Reader) bool {
	_, err := dec.ReadToken()
	return err == io.EOF
}

// scalarText returns the query-string text of a JSON scalar from a checked
// document: a string's decoded content, a number's literal text exactly as
// written, or "true"/"false". ok is false for null, objects and arrays.
func scalarText(raw json.RawMessage) (text string, kind jsontext.Kind, ok bool) {
	kind = jsontext.Value(raw).Kind()
	v := bytes.TrimSpace(raw)
	switch kind {
	case '"':
		// In a checked document the only fault left is invalid UTF-8,
		// read as U+FFFD as encoding/json reads it.
		s, _ := jsontext.AppendUnquote(nil, v)
		return string(s), kind, true
	case '0', 't', 'f':
		if !jsontext.Value(v).IsValid() {
			return "", kind, false
		}
		return string(v), kind, true
	}
	return "", kind, false
}

// isAbsent reports whether an optional raw argument was not given: no
// bytes, only whitespace, or JSON null.
func isAbsent(raw []byte) bool {
	v := bytes.TrimSpace(raw)
	return len(v) == 0 || string(v) == "null"
}

// snippet renders a raw value for an error message, shortened when long.
func snippet(raw []byte, max int) string {
	v := jsontext.Value(bytes.Clone(raw))
	if v.Compact() != nil {
		v = bytes.TrimSpace(raw)
	}
	if s := string(v); len(s) > max {
		return s[:max] + "…"
	}
	return string(v)
}

// quoteKey renders a key for an error message, shortened when long.
func quoteKey(key string) string {
	const max = 64
	if len(key) > max {
		return fmt.Sprintf("%q…", key[:max])
	}
	return fmt.Sprintf("%q", key)
}
