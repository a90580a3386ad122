package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// searchSamples are the captured RS search bodies the decoder must take: the named ones and every other search*.json beside them.
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

// searchCases are synthetic search bodies around the corners of the
// decode: nulls, escapes, repeated and case-variant names, members of the
// wrong type, bodies that are not JSON.
var searchCases = []struct{ name, body string }{
	{"ordinary", `{"object":"list","data":[` + searchHitJSON + `,` + searchHitJSON + `],"has_more":true,"next_cursor":"abc",` +
		`"meta":{"count":12,"warnings":[{"code":"limit_clamped","message":"limit was 500"}]}}`},
	{"white space", " \n{ \"data\" : [ " + searchHitJSON + " ] ,\t\"meta\" : { \"count\" :\r\n 3 , \"warnings\" : [ ] } }\n "},
	{"nulls", `{"data":null,"has_more":null,"next_cursor":null,"meta":null}`},
	{"null members of a hit", `{"data":[{"record_key":null,"matched_fields":null,"snippet":null,"evidence_excerpts":null,"score":null}],` +
		`"meta":{"count":null,"warnings":null}}`},
	{"a null hit", `{"data":[null,{"record_key":"a"}]}`},
	{"a number hit", `{"data":[1]}`},
	{"null elements", `{"data":[{"matched_fields":[null,"a",null],"evidence_excerpts":[null,{"read":null,"truncated":null}]}],` +
		`"meta":{"warnings":[null,{"code":null}]}}`},
	{"null snippet members", `{"data":[{"snippet":{"field":null,"text":null},"evidence_excerpts":[{"read":{"field":null}}]}]}`},
	{"empty arrays", `{"data":[],"meta":{"warnings":[]}}`},
	{"empty arrays in a hit", `{"data":[{"matched_fields":[],"evidence_excerpts":[]}]}`},
	{"empty objects", `{"data":[{},{"snippet":{},"evidence_excerpts":[{"read":{}}]}],"meta":{}}`},
	{"no members", `{}`},
	{"escapes", `{"data":[{"record_key":"a\"b\\c\/d\b\f\n\r\t","snippet":{"text":"\u00e9\ud83d\ude00 \ud83d lone \ude00"}}],` +
		`"next_cursor":"x\u0000y"}`},
	{"escaped keys", `{"d\u0061ta":[{"record\u005fkey":"k"}],"has_m\u006fre":true}`},
	{"unicode", `{"data":[{"stream":"日本語","snippet":{"text":"café 😀 \u2028"}}],"next_cursor":"ü"}`},
	{"invalid UTF-8", "{\"data\":[{\"stream\":\"a\xffb\xc3\"}],\"next_cursor\":\"\xfe\"}"},
	{"unknown members", `{"object":"list","url":"/v1/search","links":{"self":"x"},"data":[{"object":"search_result","emitted_at":"t",` +
		`"extra":[1,{"a":[null]}],"evidence_excerpts":[{"object":"evidence_excerpt","extra":{"data":[]}}]}],` +
		`"meta":{"count_accuracy":"exact","recall":{"complete":true}}}`},
	{"unknown members repeated", `{"x":1,"x":2,"data":[{"y":[],"y":{}}]}`},
	{"count shapes", `{"meta":{"count":{"kind":"none","n":[1, 2 ,{"a" : "b"}]}}}`},
	{"count as string", `{"meta":{"count":"12"}}`},
	{"count number forms", `{"meta":{"count":-0.5e+10},"data":[{"score":1E400}]}`},
	{"score literals", `{"data":[{"score":true},{"score":"s"},{"score":[]},{"score":false}]}`},
	{"deep score", `{"data":[{"score":` + strings.Repeat(`{"a":[`, 2000) + `1` + strings.Repeat(`]}`, 2000) + `}]}`},
	{"too deep score", `{"data":[{"score":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}]}`},
	{"numbers in strings", `{"has_more":false,"data":[{"record_key":"12","matched_fields":["1","2.5"]}],"next_cursor":"0"}`},
	{"long text", `{"data":[{"snippet":{"text":"` + strings.Repeat(`word \n \"q\" `, 2000) + `"}}]}`},

	{"repeated data", `{"data":[],"data":[` + searchHitJSON + `]}`},
	{"repeated has_more", `{"has_more":true,"has_more":false}`},
	{"repeated hit key", `{"data":[{"stream":"a","stream":"b"}]}`},
	{"repeated read key", `{"data":[{"evidence_excerpts":[{"read":{"field":"a","field":"b"}}]}]}`},
	{"repeated meta key", `{"meta":{"count":1,"count":2}}`},
	{"case-variant key", `{"Data":[` + searchHitJSON + `]}`},
	{"case-variant hit key", `{"data":[{"Record_Key":"k"}]}`},
	{"case-variant warning key", `{"meta":{"warnings":[{"CODE":"x"}]}}`},
	{"Kelvin sign key", "{\"data\":[{\"record_\u212aey\":\"k\"}]}"},
	{"long s key", "{\"data\":[{\"\u017Ftream\":\"s\"}]}"},
	{"data object", `{"data":{}}`},
	{"data string", `{"data":"x"}`},
	{"hit array", `{"data":[[]]}`},
	{"hit number", `{"data":[1]}`},
	{"has_more string", `{"has_more":"true"}`},
	{"has_more number", `{"has_more":1}`},
	{"next_cursor number", `{"next_cursor":1}`},
	{"next_cursor object", `{"next_cursor":{}}`},
	{"record_key number", `{"data":[{"record_key":12}]}`},
	{"record_key bool", `{"data":[{"record_key":true}]}`},
	{"matched_fields string", `{"data":[{"matched_fields":"text"}]}`},
	{"matched_fields number element", `{"data":[{"matched_fields":["a",1]}]}`},
	{"snippet string", `{"data":[{"snippet":"x"}]}`},
	{"snippet array", `{"data":[{"snippet":[]}]}`},
	{"excerpts object", `{"data":[{"evidence_excerpts":{}}]}`},
	{"truncated string", `{"data":[{"evidence_excerpts":[{"truncated":"yes"}]}]}`},
	{"read string", `{"data":[{"evidence_excerpts":[{"read":"x"}]}]}`},
	{"meta array", `{"meta":[]}`},
	{"warnings object", `{"meta":{"warnings":{}}}`},
	{"warning string", `{"meta":{"warnings":["x"]}}`},
	{"warning code number", `{"meta":{"warnings":[{"code":1}]}}`},
	{"not an object", `[]`},
	{"null body", `null`},
	{"invalid", `{"data":[}`},
	{"trailing", `{} {}`},
	{"empty", ``},
}

// foldedNames reports whether raw holds an object member name that
// encoding/json could match to a field of another spelling (an upper-case
// ASCII letter, or any non-ASCII byte: it folds the Kelvin sign to k), or
// is not valid JSON for the walk: on those it may fill a field the json v2
// decode, which matches names exactly, leaves alone.
func foldedNames(raw []byte) bool {
	dec := jsontext.NewDecoder(strings.NewReader(string(raw)), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	for {
		k, n := dec.StackIndex(dec.StackDepth())
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return true
		}
		if k != '{' || n%2 != 0 || tok.Kind() != '"' {
			continue
		}
		for _, c := range []byte(tok.String()) {
			if c >= 0x80 || (c >= 'A' && c <= 'Z') {
				return true
			}
		}
	}
}

// checkRSDecode decodes raw into a fresh *T with decodeRS (bound is the
// list unmarshaler, or nil) and with encoding/json, and fails when they
// disagree: encoding/json refuses a body the decode takes, or decodes it
// otherwise (unless foldedNames); or the decode refuses a body
// encoding/json takes, for another reason than a page item that is not an
// object (which encoding/json reads as an empty item) or a page of more
// than MaxPageItems items.
// It returns whether the decode took raw.
func checkRSDecode[T any](t *testing.T, raw []byte, bound *jsonv2.Unmarshalers) bool {
	t.Helper()
	got, want := new(T), new(T)
	gerr := decodeRS(raw, got, bound)
	werr := json.Unmarshal(raw, want)
	folded := foldedNames(raw)
	switch {
	case gerr == nil && werr == nil:
		if !folded && !reflect.DeepEqual(got, want) {
			t.Fatalf("%.200q: decoded\n%#v\nencoding/json\n%#v", raw, got, want)
		}
	case gerr == nil:
		if !folded {
			t.Fatalf("%.200q: decoded, but encoding/json fails: %v", raw, werr)
		}
	case werr == nil:
		if _, isPage := errors.AsType[*pageError](gerr); !folded && !isPage {
			t.Fatalf("%.200q: refused (%v), but encoding/json takes it", raw, gerr)
		}
	}
	return gerr == nil
}

// TestDecodeSearchMatchesEncodingJSON: the json v2 decode of a search body
// into the generated model takes the captured RS search bodies and agrees
// with encoding/json on the synthetic corner cases.
func TestDecodeSearchMatchesEncodingJSON(t *testing.T) {
	for _, name := range searchSamples() {
		t.Run(name, func(t *testing.T) {
			if !checkRSDecode[rsclient.SearchResultList](t, sample(t, name), searchHits) {
				t.Fatal("the sample is refused")
			}
		})
	}
	for _, c := range searchCases {
		t.Run(c.name, func(t *testing.T) { checkRSDecode[rsclient.SearchResultList](t, []byte(c.body), searchHits) })
	}
}

// TestDecodeSearchRefusals: a hit that is not an object and a page of
// more than MaxPageItems hits are refused, naming the item.
func TestDecodeSearchRefusals(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"null hit", `{"data":[{},null]}`, "item 2 of the search page is null"},
		{"number hit", `{"data":[1]}`, "item 1 of the search page is a number"},
		{"too many hits", `{"data":[` + strings.Repeat(`{},`, MaxPageItems) + `{}]}`, "more than 1000 hits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var page rsclient.SearchResultList
			err := decodeRS([]byte(c.body), &page, searchHits)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestRawMembersAliasBody: the raw members of a decoded record (data,
// expanded, meta.count) and a page's raw records are slices of the body,
// not copies (see rawInPlace), and they read the same after the body's
// decoder is gone and another body is decoded.
func TestRawMembersAliasBody(t *testing.T) {
	body := []byte(`{"id":"r","data":{"a":[1,2]},"expanded":{"x":[]},"meta":{"count":{"value":3}}}`)
	var m rsclient.Record
	if err := decodeRS(body, &m, nil); err != nil {
		t.Fatal(err)
	}
	other := []byte(`{"id":"q","data":{"zzzzzzzzzzzzzz":"zzzzzzzzzzzzzzzzzzzzzzzzzzz"}}`)
	var m2 rsclient.Record
	if err := decodeRS(other, &m2, nil); err != nil {
		t.Fatal(err)
	}
	within := func(name string, v []byte, want string) {
		t.Helper()
		if string(v) != want {
			t.Fatalf("%s reads %s, want %s", name, v, want)
		}
		if i := bytes.Index(body, v); i < 0 || &body[i] != &v[0] {
			t.Fatalf("%s is not a slice of the body", name)
		}
	}
	within("data", m.Data, `{"a":[1,2]}`)
	within("expanded", m.Expanded, `{"x":[]}`)
	within("meta.count", m.Meta.Count, `{"value":3}`)
	rec, err := DecodeRecord(body)
	if err != nil {
		t.Fatal(err)
	}
	within("data.a", rec.Data.fields["a"], `[1,2]`)
	page := []byte(`{"data":[ {"id":"a","data":{"t":"x"}} ,` + "\n" + `{"id":"b"}],"has_more":false}`)
	v, err := RenderList(page, "s", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`{"id":"a","data":{"t":"x"}}`, `{"id":"b"}`} {
		raw := v.raws[i]
		if j := bytes.Index(page, raw); string(raw) != want || j < 0 || &page[j] != &raw[0] {
			t.Fatalf("record %d is %s, not the slice %s of the page", i, raw, want)
		}
	}
	if f := v.recs[0].Data.fields["t"]; string(f) != `"x"` || string(v.raws[0][v.recs[0].Data.start:v.recs[0].Data.end]) != `{"t":"x"}` {
		t.Fatalf("record 0's data is %s at [%d,%d)", f, v.recs[0].Data.start, v.recs[0].Data.end)
	}
}

// FuzzDecodeSearch: on every input the json v2 decode of a search body
// agrees with encoding/json as checkRSDecode says.
func FuzzDecodeSearch(f *testing.F) {
	for _, c := range searchCases {
		f.Add([]byte(c.body))
	}
	for _, name := range searchSamples() {
		if b, err := os.ReadFile(filepath.Join(samplesDir, name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkRSDecode[rsclient.SearchResultList](t, raw, searchHits) })
}

// BenchmarkDecodeSearch compares the json v2 decode of a captured search
// body with encoding/json's into the same model.
func BenchmarkDecodeSearch(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(samplesDir, "search-lexical.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("jsonv2", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var page rsclient.SearchResultList
			if err := decodeRS(body, &page, searchHits); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var page rsclient.SearchResultList
			if err := json.Unmarshal(body, &page); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeString: decodeString reads every JSON string encoding/json
// reads, as it reads it (escapes, invalid UTF-8, lone surrogates).
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`""`, `"plain text, long enough for a word"`, `"a\"b\\c\/\n\u00e9\ud83d\ude00"`, `"\ud83d lone"`,
		"\"bad \xff\xfe utf-8\"", "\"ctl \x01\"", `"quote " inside"`, `"tab	"`, `"é 漢字 😀 \u2028"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		var want string
		if json.Unmarshal(q, &want) != nil {
			return
		}
		if got, err := decodeString(q); err != nil || got != want {
			t.Fatalf("%q: decoded %q (%v), encoding/json %q", q, got, err, want)
		}
	})
}
