package query

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// decodedMembers is what objectMembers stands in for: the members of raw
// as encoding/json's token reader finds them (nil, false where it fails or
// raw is no object), numbers as written, and false too on a repeated key.
func decodedMembers(raw []byte) ([]member, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil || seen[key] {
			return nil, false
		}
		seen[key] = true
		out = append(out, member{key: key, value: bytes.TrimSpace(v)})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// decodedScalar is what scalarText stands in for, through encoding/json.
func decodedScalar(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

var memberCases = []string{
	`{}`, ` { "a" : 1 , "b":"x\u00e9" } `, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":[1,2]}}`,
	`[1]`, `"x"`, `null`, `{"a":1}x`, `{"a":`, `{"a":-0.5e3,"b":true,"c":null}`, "{\"\xff\":\"\xfe\"}",
	`{"a":"\ud800"}`, ``,
}

// TestObjectMembersMatchesDecode and FuzzObjectMembers hold objectMembers
// and scalarText to encoding/json's answers.
func TestObjectMembersMatchesDecode(t *testing.T) {
	for _, raw := range memberCases {
		t.Run(raw, func(t *testing.T) { checkMembers(t, []byte(raw)) })
	}
}

func FuzzObjectMembers(f *testing.F) {
	for _, raw := range memberCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(checkMembers)
}

func checkMembers(t *testing.T, raw []byte) {
	want, wantOK := decodedMembers(raw)
	got, err := objectMembers(raw)
	if (err == nil) != wantOK || len(got) != len(want) {
		t.Fatalf("objectMembers(%q) = %v, %v; encoding/json finds %v, %t", raw, got, err, want, wantOK)
	}
	for i := range got {
		if got[i].key != want[i].key || !bytes.Equal(got[i].value, want[i].value) {
			t.Fatalf("objectMembers(%q) member %d = %q %s; encoding/json finds %q %s", raw, i, got[i].key, got[i].value, want[i].key, want[i].value)
		}
		text, _, ok := scalarText(got[i].value)
		wantText, wantScalar := decodedScalar(want[i].value)
		if ok != wantScalar || text != wantText {
			t.Fatalf("scalarText(%s) = %q, %t; encoding/json finds %q, %t", got[i].value, text, ok, wantText, wantScalar)
		}
	}
}
