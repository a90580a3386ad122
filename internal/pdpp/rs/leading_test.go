package rs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decoderErrorMembers is what leadingErrorMembers reads, written with
// encoding/json's token decoder (which costs a token read per member,
// however many members repeat a key): the reference it is held to.
func decoderErrorMembers(prefix []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		if key != "error" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil, false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, false
		}
		obj := map[string]json.RawMessage{}
		for len(obj) < maxCutMembers && dec.More() {
			t, err := dec.Token()
			k, ok := t.(string)
			var v json.RawMessage
			if err != nil || !ok || dec.Decode(&v) != nil {
				break
			}
			if _, dup := obj[k]; !dup {
				obj[k] = v
			}
		}
		return obj, len(obj) > 0
	}
	return nil, false
}

// TestLeadingErrorMembersMatchesDecoder: for error bodies cut at every
// byte, the walk keeps what the token decoder keeps, but for a member
// whose value ends exactly where the bytes end (the walk cannot tell it is
// complete, and leaves it out).
func TestLeadingErrorMembersMatchesDecoder(t *testing.T) {
	bodies := []string{
		`{"error":{"type":"invalid_request_error","code":"too_wide","message":"wide <error>","m":0,"m":1,"n":[1,{"a":"}"}],"o":{"p":"\"q\\"},"x":true}}`,
		`{"request_id":"r1","meta":{"a":[1,2]},"error":{"code":"c","message":"caf\u00e9 \"x\"","retry_with":{"args":{"limit":10}}}}`,
		` { "error" : { "code" : "c" , "type" : "t" } } `,
		`{"error":"not an object"}`,
		`{"other":1}`,
		`{"error":{"co\u0064e":"c","num":-0.5e3}}`,
		`[1,2]`,
		`{"error":{` + strings.Repeat(`"m":0,`, 200) + `"code":"c"}}`,
	}
	for _, body := range bodies {
		for cut := 0; cut <= len(body); cut++ {
			prefix := []byte(body[:cut])
			got, gotOK := leadingErrorMembers(prefix)
			want, wantOK := decoderErrorMembers(prefix)
			if gotOK && !wantOK || !gotOK && wantOK && len(want) > 1 {
				t.Fatalf("%q: ok %v, decoder %v (%v)", prefix, gotOK, wantOK, want)
			}
			for k, v := range got {
				if !bytes.Equal(want[k], v) {
					t.Fatalf("%q: member %q is %s, decoder %s", prefix, k, v, want[k])
				}
			}
			if len(want)-len(got) > 1 || gotOK && cut == len(body) && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: kept %v, decoder %v", prefix, got, want)
			}
		}
	}
}
