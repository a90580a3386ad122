package evidence

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// TestListPageMatchesDecoder: RenderList's one decode of a page reads what
// encoding/json reads into the generated model (has_more, next_cursor, the
// records), repeated keys included, and a compact step of it is the same
// each time it is built.
func TestListPageMatchesDecoder(t *testing.T) {
	long := `{"id":"r1","stream":"s","connection_id":"c","data":{"text":"` + strings.Repeat("word \\n ", 900) + `","n":1}}`
	short := `{"id":"r2","stream":"s","connection_id":"c","data":{"text":"hi"}}`
	pages := []string{
		`{"object":"list","data":[` + long + `,` + short + `],"has_more":true,"next_cursor":"cur\u00e9","meta":{"count":{"kind":"none"},"warnings":[]},"url":"/x"}`,
		`{"object":"list","data":[],"has_more":false,"next_cursor":null}`,
		`{"object":"list","data":[` + short + `],"has_more":false,"has_more":true}`,
		`{"object":"list","Data":[` + short + `],"data":[` + long + `]}`,
		`{"object":"list","data":[` + short + `],"object":"page","has_more":false}`,
	}
	for i, body := range pages {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var want rsclient.RecordList
			if err := json.Unmarshal([]byte(body), &want); err != nil {
				t.Fatal(err)
			}
			v, err := RenderList([]byte(body), "s", "c", nil)
			if err != nil {
				t.Fatal(err)
			}
			if v.HasMore != want.HasMore || (want.NextCursor != nil) != (v.NextCursor != "") || len(v.Records) != len(want.Data) {
				t.Fatalf("split page: has_more %t cursor %q records %d; encoding/json %t %v %d",
					v.HasMore, v.NextCursor, len(v.Records), want.HasMore, want.NextCursor, len(want.Data))
			}
			full := Continuation{Tool: ToolQuery, Arguments: map[string]any{"detail": DetailFull}}
			bare := v
			for _, budget := range []int{100000, 3000, 600, 3000} {
				st := Step{Full: full}
				gtext, got, gcut, gerr := v.CompactStep([]byte(body), st, budget)
				etext, exp, ecut, eerr := bare.CompactStep([]byte(body), st, budget)
				if gtext != etext || string(got) != string(exp) || !reflect.DeepEqual(gcut, ecut) || (gerr == nil) != (eerr == nil) {
					t.Fatalf("budget %d: built once %s %v, again %s %v", budget, got, gerr, exp, eerr)
				}
			}
		})
	}
}

var windowSeeds = []string{
	`{"object":"field_window","record_id":"tr-5","connection_id":"c","stream":"transcripts","field":{"path":"text","type":"string"},"window":{"text":"a\nb \u00e9","start_chars":0,"end_chars":5,"total_chars":9,"limit_chars":5,"complete":false,"has_more":true,"next_offset_chars":5,"previous_offset_chars":null,"match_start_chars":1,"match_end_chars":2}}`,
	`{"object":"field_window","window":null}`,
	`{"object":"field_window","window":{},"extra":[1,{"a":2}]}`,
	`{"window":{"text":"x"},"window":{"start_chars":3}}`,
	`{"Window":{"text":"x"}}`,
	`{"window":{"text":7}}`,
	`{"window":[]}`,
	`{"stream":null,"field":null}`,
	`{"window":{"start_chars":-0,"end_chars":12345678901234567890,"total_chars":1e2,"limit_chars":1.5}}`,
	`{"window":{"complete":null,"has_more":true,"next_offset_chars":null,"match_start_chars":-7,"match_end_chars":999999999999999999}}`,
}

// TestDecodeFieldWindowMatchesUnmarshal: the json v2 decode of a field
// window into the generated model agrees with encoding/json's, repeated
// keys, nulls and type mismatches included (checkRSDecode).
func TestDecodeFieldWindowMatchesUnmarshal(t *testing.T) {
	for i, s := range windowSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkRSDecode[fieldWindowBody](t, []byte(s), nil)
		})
	}
}

// FuzzDecodeFieldWindow: on every input the json v2 decode of a field
// window agrees with encoding/json as checkRSDecode says.
func FuzzDecodeFieldWindow(f *testing.F) {
	for _, s := range windowSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkRSDecode[fieldWindowBody](t, raw, nil) })
}

// TestJSONStringLenMatchesMarshal: the measured length of a string is the
// length encoding/json writes, for every ASCII byte, multi-byte runes,
// U+2028/2029 and invalid UTF-8.
func TestJSONStringLenMatchesMarshal(t *testing.T) {
	var all []byte
	for c := range 128 {
		all = append(all, byte(c))
	}
	for _, s := range []string{"", "plain text", string(all), "é 漢字 \u2028\u2029 😀", "\xff\xfe bad \xc3", "<a href=\"x\">&amp;</a>\n\t"} {
		want, _ := json.Marshal(s)
		if got := JSONStringLen(s); got != len(want) {
			t.Errorf("JSONStringLen(%q) = %d, encoding/json writes %d bytes", s, got, len(want))
		}
	}
}

// recordSeeds are record bodies around the corners of the record decode.
var recordSeeds = []string{
	`{"id":"r1","stream":"s","connection_id":"c","connector_key":"k","connector_id":"ci","emitted_at":"2026-01-01T00:00:00Z","record_json_bytes":42,"data":{"text":"hi \u00e9","n":1}}`,
	`{"id":null,"stream":null,"record_json_bytes":null,"data":null}`,
	`null`,
	`{"ID":"r2","Stream":"s2","Connection_ID":"c2","Data":{"text":"case"}}`,
	`{"id":"r3","id":"r4","data":{"a":1},"data":{"b":2}}`,
	`{"id":"r5","Id":"r6"}`,
	`{"id":7}`,
	`{"record_json_bytes":1.5}`,
	`{"record_json_bytes":12345678901234567890}`,
	`{"id":"r8","extra":{"id":"nested"},"extra":[1]}`,
	`{"id":"r9","data":{"a":{"b":[1,{"c":null}]},"e":"\ud83d\ude00","s":" x ","a2":[ ]}}`,
	"{\"id\":\"r\xff\",\"data\":{\"t\":\"\xfe\"}}",
	`{"data":[]}`,
	`{"data":"x"}`,
}

// checkRecord decodes raw as checkRSDecode does and, when the decode
// takes it, holds its split of data to encoding/json's decode of data
// into raw values: the same names, in the RS's order, with the same values.
func checkRecord(t *testing.T, raw []byte) {
	t.Helper()
	if !checkRSDecode[rsclient.Record](t, raw, nil) || foldedNames(raw) {
		return
	}
	rec, err := DecodeRecord(raw)
	var m rsclient.Record
	_ = json.Unmarshal(raw, &m)
	var want map[string]json.RawMessage
	werr := json.Unmarshal(m.Data, &want)
	if len(m.Data) == 0 {
		werr = nil
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("%.200q: split error %v, encoding/json %v", raw, err, werr)
	}
	if err != nil {
		return
	}
	if len(rec.Data.fields) != len(want) || len(rec.Data.order) != len(want) {
		t.Fatalf("%.200q: split %d fields (%d in order), encoding/json %d", raw, len(rec.Data.fields), len(rec.Data.order), len(want))
	}
	for _, k := range rec.Data.order {
		if w, ok := want[k]; !ok || string(w) != string(rec.Data.fields[k]) {
			t.Fatalf("%.200q: field %q split as %s, encoding/json %s", raw, k, rec.Data.fields[k], w)
		}
	}
}

// TestDecodeRecordMatchesUnmarshal: the json v2 decode of a record into
// the generated model agrees with encoding/json (checkRSDecode), and its
// fields are the members of data in order.
func TestDecodeRecordMatchesUnmarshal(t *testing.T) {
	for i, raw := range recordSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkRecord(t, []byte(raw)) })
	}
}

// FuzzDecodeRecord: on every input the record decode agrees with
// encoding/json as checkRecord says.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkRecord(t, raw) })
}

// TestObjectWriterKeysMatchMarshal: a member's key is written as
// encoding/json writes it, whether or not it needs escaping.
func TestObjectWriterKeysMatchMarshal(t *testing.T) {
	keys := []string{"", "text", "connection_id", "héllo", "日本", "a\"b", "back\\slash", "tab\there", "<b>&", "line\u2028sep", "bad\xffbyte", "\x00"}
	for _, key := range keys {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			var w objectWriter
			w.member(key, []byte("1"))
			want, err := json.Marshal(map[string]int{key: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(w.bytes()); got != string(want) {
				t.Fatalf("wrote %s, encoding/json %s", got, want)
			}
		})
	}
}
