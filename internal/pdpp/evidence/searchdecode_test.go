package evidence

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
)

// searchSamples are the captured RS search bodies the fast decoder must
// take: the named ones and every other search*.json beside them.
func searchSamples() []string {
	names := []string{"search-lexical.json", "multi-conn-search.json", "owner-search-single-stream-filter.json"}
	more, _ := filepath.Glob(filepath.Join(samplesDir, "search*.json"))
	for _, p := range more {
		if name := filepath.Base(p); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// searchHitJSON is one ordinary hit, for the synthetic cases to vary.
const searchHitJSON = `{"record_key":"tr-1","record_url":"/v1/streams/t/records/tr-1","record_uri":"pdpp://c/t/tr-1","stream":"t",` +
	`"connection_id":"c","connector_id":"loom","connector_key":"k","matched_fields":["text","title"],"retrieval_mode":"lexical",` +
	`"snippet":{"field":"text","text":"a <mark>b</mark>"},"evidence_excerpts":[{"field_path":"text","preview_text":"…b…","truncated":true,` +
	`"provenance":"lexical_match","read":{"field":"text","record_id":"tr-1","stream":"t","connection_id":"c","method":"GET"}}],` +
	`"score":{"kind":"bm25","value":-1.5e-06}}`

// searchCase is a synthetic body and whether the fast decoder must take
// it (fast) or must leave it to encoding/json (!fast).
type searchCase struct {
	name string
	body string
	fast bool
}

var searchCases = []searchCase{
	{"ordinary", `{"object":"list","data":[` + searchHitJSON + `,` + searchHitJSON + `],"has_more":true,"next_cursor":"abc",` +
		`"meta":{"count":12,"warnings":[{"code":"limit_clamped","message":"limit was 500"}]}}`, true},
	{"white space", " \n{ \"data\" : [ " + searchHitJSON + " ] ,\t\"meta\" : { \"count\" :\r\n 3 , \"warnings\" : [ ] } }\n ", true},
	{"nulls", `{"data":null,"has_more":null,"next_cursor":null,"meta":null}`, true},
	{"null members of a hit", `{"data":[{"record_key":null,"matched_fields":null,"snippet":null,"evidence_excerpts":null,"score":null}],` +
		`"meta":{"count":null,"warnings":null}}`, true},
	// A hit that is not an object is left to RenderSearch, which refuses
	// the page.
	{"a null hit", `{"data":[null,{"record_key":"a"}]}`, false},
	{"a number hit", `{"data":[1]}`, false},
	{"null elements", `{"data":[{"matched_fields":[null,"a",null],"evidence_excerpts":[null,{"read":null,"truncated":null}]}],` +
		`"meta":{"warnings":[null,{"code":null}]}}`, true},
	{"null snippet members", `{"data":[{"snippet":{"field":null,"text":null},"evidence_excerpts":[{"read":{"field":null}}]}]}`, true},
	{"empty arrays", `{"data":[],"meta":{"warnings":[]}}`, true},
	{"empty arrays in a hit", `{"data":[{"matched_fields":[],"evidence_excerpts":[]}]}`, true},
	{"empty objects", `{"data":[{},{"snippet":{},"evidence_excerpts":[{"read":{}}]}],"meta":{}}`, true},
	{"no members", `{}`, true},
	{"escapes", `{"data":[{"record_key":"a\"b\\c\/d\b\f\n\r\t","snippet":{"text":"\u00e9\ud83d\ude00 \ud83d lone \ude00"}}],` +
		`"next_cursor":"x\u0000y"}`, true},
	{"escaped keys", `{"d\u0061ta":[{"record\u005fkey":"k"}],"has_m\u006fre":true}`, true},
	{"unicode", `{"data":[{"stream":"日本語","snippet":{"text":"café 😀 \u2028"}}],"next_cursor":"ü"}`, true},
	{"invalid UTF-8", "{\"data\":[{\"stream\":\"a\xffb\xc3\"}],\"next_cursor\":\"\xfe\"}", true},
	{"unknown members", `{"object":"list","url":"/v1/search","links":{"self":"x"},"data":[{"object":"search_result","emitted_at":"t",` +
		`"extra":[1,{"a":[null]}],"evidence_excerpts":[{"object":"evidence_excerpt","extra":{"data":[]}}]}],` +
		`"meta":{"count_accuracy":"exact","recall":{"complete":true}}}`, true},
	{"unknown members repeated", `{"x":1,"x":2,"data":[{"y":[],"y":{}}]}`, true},
	{"count shapes", `{"meta":{"count":{"kind":"none","n":[1, 2 ,{"a" : "b"}]}}}`, true},
	{"count as string", `{"meta":{"count":"12"}}`, true},
	{"count number forms", `{"meta":{"count":-0.5e+10},"data":[{"score":1E400}]}`, true},
	{"score literals", `{"data":[{"score":true},{"score":"s"},{"score":[]},{"score":false}]}`, true},
	{"deep score", `{"data":[{"score":` + strings.Repeat(`{"a":[`, 2000) + `1` + strings.Repeat(`]}`, 2000) + `}]}`, true},
	{"too deep score", `{"data":[{"score":` + strings.Repeat(`[`, jsonwalk.MaxDepth) + strings.Repeat(`]`, jsonwalk.MaxDepth) + `}]}`, false},
	{"numbers in strings", `{"has_more":false,"data":[{"record_key":"12","matched_fields":["1","2.5"]}],"next_cursor":"0"}`, true},
	{"long text", `{"data":[{"snippet":{"text":"` + strings.Repeat(`word \n \"q\" `, 2000) + `"}}]}`, true},

	{"repeated data", `{"data":[],"data":[` + searchHitJSON + `]}`, false},
	{"repeated has_more", `{"has_more":true,"has_more":false}`, false},
	{"repeated hit key", `{"data":[{"stream":"a","stream":"b"}]}`, false},
	{"repeated read key", `{"data":[{"evidence_excerpts":[{"read":{"field":"a","field":"b"}}]}]}`, false},
	{"repeated meta key", `{"meta":{"count":1,"count":2}}`, false},
	{"case-variant key", `{"Data":[` + searchHitJSON + `]}`, false},
	{"case-variant hit key", `{"data":[{"Record_Key":"k"}]}`, false},
	{"case-variant warning key", `{"meta":{"warnings":[{"CODE":"x"}]}}`, false},
	{"Kelvin sign key", "{\"data\":[{\"record_\u212aey\":\"k\"}]}", false},
	{"long s key", "{\"data\":[{\"\u017Ftream\":\"s\"}]}", false},
	{"data object", `{"data":{}}`, false},
	{"data string", `{"data":"x"}`, false},
	{"hit array", `{"data":[[]]}`, false},
	{"hit number", `{"data":[1]}`, false},
	{"has_more string", `{"has_more":"true"}`, false},
	{"has_more number", `{"has_more":1}`, false},
	{"next_cursor number", `{"next_cursor":1}`, false},
	{"next_cursor object", `{"next_cursor":{}}`, false},
	{"record_key number", `{"data":[{"record_key":12}]}`, false},
	{"record_key bool", `{"data":[{"record_key":true}]}`, false},
	{"matched_fields string", `{"data":[{"matched_fields":"text"}]}`, false},
	{"matched_fields number element", `{"data":[{"matched_fields":["a",1]}]}`, false},
	{"snippet string", `{"data":[{"snippet":"x"}]}`, false},
	{"snippet array", `{"data":[{"snippet":[]}]}`, false},
	{"excerpts object", `{"data":[{"evidence_excerpts":{}}]}`, false},
	{"truncated string", `{"data":[{"evidence_excerpts":[{"truncated":"yes"}]}]}`, false},
	{"read string", `{"data":[{"evidence_excerpts":[{"read":"x"}]}]}`, false},
	{"meta array", `{"meta":[]}`, false},
	{"warnings object", `{"meta":{"warnings":{}}}`, false},
	{"warning string", `{"meta":{"warnings":["x"]}}`, false},
	{"warning code number", `{"meta":{"warnings":[{"code":1}]}}`, false},
	{"not an object", `[]`, false},
	{"null body", `null`, false},
	{"invalid", `{"data":[}`, false},
	{"trailing", `{} {}`, false},
	{"empty", ``, false},
}

// checkSearchPage fails when decodeSearchPage takes raw but decodes it
// otherwise than json.Unmarshal into SearchPage does (or json.Unmarshal
// fails on it), and returns whether it took raw.
func checkSearchPage(t *testing.T, raw []byte) bool {
	t.Helper()
	got, ok := decodeSearchPage(raw)
	if !ok {
		return false
	}
	var want SearchPage
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%.200q: decoded, but encoding/json fails: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.200q: decoded\n%#v\nencoding/json\n%#v", raw, got, want)
	}
	return true
}

// TestDecodeSearchPageMatchesEncodingJSON: the one-walk search decoder
// takes the captured RS search bodies and decodes them as json.Unmarshal
// does; on the synthetic corner cases it either agrees with encoding/json
// or, for repeated and case-variant keys, type mismatches and invalid
// bodies, leaves them to it.
func TestDecodeSearchPageMatchesEncodingJSON(t *testing.T) {
	for _, name := range searchSamples() {
		t.Run(name, func(t *testing.T) {
			if !checkSearchPage(t, sample(t, name)) {
				t.Fatal("the sample is left to encoding/json")
			}
		})
	}
	for _, c := range searchCases {
		t.Run(c.name, func(t *testing.T) {
			if ok := checkSearchPage(t, []byte(c.body)); ok != c.fast {
				t.Fatalf("decoded without encoding/json: %t, want %t", ok, c.fast)
			}
		})
	}
}

// TestDecodeSearchPageSliceShapes pins the nil and empty slices and the
// null RawMessage encoding/json gives, which DeepEqual tells apart.
func TestDecodeSearchPageSliceShapes(t *testing.T) {
	page, ok := decodeSearchPage([]byte(`{"data":[{"matched_fields":[],"evidence_excerpts":null,"score":null}],"meta":{"warnings":[]}}`))
	if !ok {
		t.Fatal("left to encoding/json")
	}
	hit := page.Data[0]
	if hit.MatchedFields == nil || len(hit.MatchedFields) != 0 || hit.Excerpts != nil || string(hit.Score) != "null" ||
		page.Meta.Warnings == nil || page.Meta.Count != nil {
		t.Fatalf("decoded %#v", page)
	}
}

// FuzzDecodeSearchPage: on every input the search decoder either leaves the
// body to encoding/json or agrees with it.
func FuzzDecodeSearchPage(f *testing.F) {
	for _, c := range searchCases {
		f.Add([]byte(c.body))
	}
	for _, name := range searchSamples() {
		if b, err := os.ReadFile(filepath.Join(samplesDir, name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkSearchPage(t, raw) })
}

// BenchmarkDecodeSearchPage compares the one-walk decoder with
// json.Unmarshal on a captured search body.
func BenchmarkDecodeSearchPage(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(samplesDir, "search-lexical.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodeSearchPage(body); !ok {
				b.Fatal("left to encoding/json")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var page SearchPage
			if err := json.Unmarshal(body, &page); err != nil {
				b.Fatal(err)
			}
		}
	})
}
