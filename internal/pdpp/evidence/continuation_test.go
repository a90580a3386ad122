package evidence

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"testing"
)

// orderedJSONByEncoder is orderedJSON as encoding/json writes it, member by
// member: the written bytes must not depend on which path wrote them.
// orderedJSON is a call's arguments m as Call writes them, into a string
// of its own.
func orderedJSON(m map[string]any) string { return string(appendArgs(nil, m, compareArgs, true)) }

func orderedJSONByEncoder(t *testing.T, m map[string]any) string {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return compareArgs(keys[i], keys[j]) < 0 })
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(kb)
		b.WriteByte(':')
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m[k]); err != nil {
			t.Fatal(err)
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.String()
}

func TestContinuationCall(t *testing.T) {
	tests := []struct {
		name string
		c    Continuation
		want string
	}{
		{"window", ReadFieldCall("cin_a/transcripts:tr-5", "text", 11863, 0, ""),
			`read_record_field {"id":"cin_a/transcripts:tr-5","field_path":"text","offset_chars":11863}`},
		{"window with q and size", ReadFieldCall("c/s:r", "body.text", 0, 1612, "zephyr<mark>"),
			`read_record_field {"id":"c/s:r","field_path":"body.text","q":"zephyr<mark>","limit_chars":1612}`},
		{"fields and detail", fetchFieldFullCall("c/s:r", "data"),
			`fetch {"id":"c/s:r","detail":"full","fields":["data"]}`},
		{"escapes and non-ASCII", Continuation{Tool: ToolSearch, Arguments: map[string]any{
			"q": "a \"b\" \\ c\n\u2028 é & <x>", "limit": 10, "snippets": false, "z": nil, "f": 1.5, "n": int64(-7),
			"k\"ey": "v", "<k>": []any{"x", 2}, "m": map[string]any{"b": 1, "a": "&"}}},
			`search {"q":"a \"b\" \\ c\n\u2028 é & <x>","\u003ck\u003e":["x",2],"f":1.5,"k\"ey":"v","limit":10,"m":{"a":"&","b":1},"n":-7,"snippets":false,"z":null}`},
		{"no arguments", Continuation{Tool: ToolSchema}, `schema {}`},
		{"unencodable value", Continuation{Tool: ToolQuery, Arguments: map[string]any{"stream": "s", "x": math.Inf(1)}},
			`query_records {"stream":"s","x":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Call(); got != tc.want {
				t.Errorf("Call() =\n %s\nwant\n %s", got, tc.want)
			}
			if len(tc.c.Arguments) > 0 && tc.name != "unencodable value" {
				if got, ref := orderedJSON(tc.c.Arguments), orderedJSONByEncoder(t, tc.c.Arguments); got != ref {
					t.Errorf("orderedJSON = %s, encoding/json writes %s", got, ref)
				}
			}
		})
	}
}

// FuzzOrderedJSON: whatever the strings, orderedJSON writes what
// encoding/json writes.
func FuzzOrderedJSON(f *testing.F) {
	for _, s := range []string{"text", "a<b>&c", "\"q\"", "\x00\x7f\xff", "é\u2028"} {
		f.Add(s, s, 3)
	}
	f.Fuzz(func(t *testing.T, key, val string, n int) {
		m := map[string]any{key: val, "id": val, "offset_chars": n, key + "_b": true}
		if got, ref := orderedJSON(m), orderedJSONByEncoder(t, m); got != ref {
			t.Fatalf("orderedJSON = %s, encoding/json writes %s", got, ref)
		}
	})
}
