package jsonwalk

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// membersByDecoder lists an object's members with encoding/json, the
// reference the one-walk splitter must agree with.
func membersByDecoder(raw []byte) ([]string, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, ErrNotObject
	}
	var keys, vals []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, t.(string)), append(vals, string(v))
	}
	return keys, vals, nil
}

func membersBySplitter(raw []byte) ([]string, []string, error) {
	var keys, vals []string
	err := Members(raw, func(k string, v []byte) error {
		keys, vals = append(keys, k), append(vals, string(v))
		return nil
	})
	return keys, vals, err
}

var splitSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : "x" , "b":[1,{"c":"}"}],"d":{"e":"\"]"}}`,
	`{"k\"ey":null,"\u00e9":true,"n":-1.5e3,"s":"a\\\\"}`, "{\n\t\"a\":\n[ ]\r}",
	`{"a":"\\"}`, `{"a":[[[]]],"b":{"c":{"d":{}}}}`, `{"dup":1,"dup":2}`,
}

// TestSplitMembersMatchesDecoder checks the splitter on objects with nested
// values, escapes and white space against encoding/json.
func TestSplitMembersMatchesDecoder(t *testing.T) {
	for _, s := range splitSeeds {
		wk, wv, werr := membersByDecoder([]byte(s))
		gk, gv, gerr := membersBySplitter([]byte(s))
		if werr != nil || gerr != nil {
			t.Errorf("%s: decoder err %v, splitter err %v", s, werr, gerr)
			continue
		}
		if mustJSONString(wk) != mustJSONString(gk) || mustJSONString(wv) != mustJSONString(gv) {
			t.Errorf("%s: splitter %q %q, decoder %q %q", s, gk, gv, wk, wv)
		}
	}
	for _, s := range []string{`[]`, `"x"`, `1`, ``} {
		if _, _, err := membersBySplitter([]byte(s)); err == nil {
			t.Errorf("%q: splitter accepted a non-object", s)
		}
	}
}

func mustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// FuzzSplitMembers: on every valid JSON object the splitter yields the
// members encoding/json yields.
func FuzzSplitMembers(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		wk, wv, werr := membersByDecoder(raw)
		gk, gv, gerr := membersBySplitter(raw)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: decoder err %v, splitter err %v", raw, werr, gerr)
		}
		if werr == nil && (mustJSONString(wk) != mustJSONString(gk) || mustJSONString(wv) != mustJSONString(gv)) {
			t.Fatalf("%q: splitter %q %q, decoder %q %q", raw, gk, gv, wk, wv)
		}
	})
}

var stringSeeds = []string{
	`""`, `"plain"`, `"caf\u00e9 \"q\" \\ \/ \b\f\n\r\t"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`,
	`"\ud83dx"`, `"\ud83d\u0041"`, "\"\xff\xfe bad\"", "\"é\xc3\"", `"\u0000"`, `"a\\"`, `"a"b"`, "\"a\tb\"", `"\x"`, `"\u12"`, `"abc`, ` "a" `, `null`,
}

// TestDecodeStringMatchesUnmarshal checks the string decoder on escapes,
// surrogates, invalid UTF-8 and malformed strings against encoding/json.
func TestDecodeStringMatchesUnmarshal(t *testing.T) {
	for _, s := range stringSeeds {
		t.Run(s, func(t *testing.T) {
			var want string
			werr := json.Unmarshal([]byte(s), &want)
			got, err := DecodeString([]byte(s))
			if (err == nil) != (werr == nil) || got != want {
				t.Errorf("DecodeString = %q, %v; encoding/json %q, %v", got, err, want, werr)
			}
		})
	}
}

// FuzzDecodeString: on every input the decoder fails when encoding/json
// fails and otherwise yields the same string.
func FuzzDecodeString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		werr := json.Unmarshal(raw, &want)
		got, err := DecodeString(raw)
		if (err == nil) != (werr == nil) || (err == nil && got != want) {
			t.Fatalf("%q: DecodeString %q %v, encoding/json %q %v", raw, got, err, want, werr)
		}
	})
}

var validSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `-0.5e+3`, `1E9`, `01`, `1.`, `.5`, `-`, `1e`, `true`, `tru`, `nulls`, `[1,]`, `{"a":1,}`,
	`{"a" : [1, 2.5, "x\u00e9\n\"\\\/\b\f\r\t", {"b":null}] }`, "\"a\x01\"", `"\x"`, `"\u12g4"`, `{"a"}`, `{1:2}`,
	" \t\r\n[ ] ", `[][]`, `"abc`, `{"a":1 "b":2}`, "\"\xff\xfe\"", `[-]`, `[--1]`, `[1.2.3]`, `{"a":tru}`,
}

// TestValidJSONMatchesEncodingJSON checks the validator on every grammar
// corner in validSeeds and at the nesting limit against json.Valid.
func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	cases := append([]string(nil), validSeeds...)
	cases = append(cases, strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth),
		strings.Repeat("[", MaxDepth+1)+strings.Repeat("]", MaxDepth+1),
		strings.Repeat(`{"a":`, MaxDepth)+"1"+strings.Repeat("}", MaxDepth),
		strings.Repeat(`{"a":`, MaxDepth+1)+"1"+strings.Repeat("}", MaxDepth+1))
	for _, s := range cases {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("%.60q: Valid %t, json.Valid %t", s, got, want)
		}
	}
}

// FuzzValidJSON: the validator agrees with json.Valid on every input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range append(validSeeds, splitSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := Valid(raw), json.Valid(raw); got != want {
			t.Fatalf("%q: Valid %t, json.Valid %t", raw, got, want)
		}
	})
}

// FuzzSkipPlain holds the eight-bytes-at-a-time scan to the byte-by-byte
// one it stands for, from every start.
func FuzzSkipPlain(f *testing.F) {
	for _, s := range append(stringSeeds, "abcdefgh\"", "abcdefghijklmnop\\", "é€😀abcdefgh\x1f", "\x7f\x80\xff\x20\x21\x5b\x5d\x5c", strings.Repeat("x", 40)) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := 0; i <= len(b); i++ {
			want := i
			for want < len(b) && !stringStop[b[want]] {
				want++
			}
			if got := skipPlain(b, i); got != want {
				t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, i, got, want)
			}
		}
	})
}
