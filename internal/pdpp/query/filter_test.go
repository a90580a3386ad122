package query

import (
	"encoding/json"
	"errors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

func TestEncodeFilterValid(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want url.Values
	}{
		{"absent", "", url.Values{}},
		{"whitespace only", " \n\t", url.Values{}},
		{"null", "null", url.Values{}},
		{"null with spaces", "  null  ", url.Values{}},
		{"exact string", `{"language": "en"}`, url.Values{"filter[language]": {"en"}}},
		{"exact integer", `{"duration_seconds": 600}`, url.Values{"filter[duration_seconds]": {"600"}}},
		{"number keeps decimals as written", `{"amount": 1.50}`, url.Values{"filter[amount]": {"1.50"}}},
		{"number keeps exponent as written", `{"amount": 1e3}`, url.Values{"filter[amount]": {"1e3"}}},
		{"negative number", `{"balance": -12.5}`, url.Values{"filter[balance]": {"-12.5"}}},
		{"big integer is not rounded", `{"id": 12345678901234567890}`, url.Values{"filter[id]": {"12345678901234567890"}}},
		{"boolean true", `{"archived": true}`, url.Values{"filter[archived]": {"true"}}},
		{"boolean false", `{"archived": false}`, url.Values{"filter[archived]": {"false"}}},
		{"dotted and dashed field", `{"author.display-name": "Ada"}`, url.Values{"filter[author.display-name]": {"Ada"}}},
		{"underscore first", `{"_kind": "x"}`, url.Values{"filter[_kind]": {"x"}}},
		{"unicode value", `{"title": "caffè ☕"}`, url.Values{"filter[title]": {"caffè ☕"}}},
		{"escaped string value", `{"q": "a\"b\\c\u00e9"}`, url.Values{"filter[q]": {"a\"b\\cé"}}},
		{"value with query metacharacters", `{"q": "a&b=c#d"}`, url.Values{"filter[q]": {"a&b=c#d"}}},
		{"one range operator", `{"created_at": {"gte": "2026-02-01T00:00:00Z"}}`,
			url.Values{"filter[created_at][gte]": {"2026-02-01T00:00:00Z"}}},
		{"all four operators", `{"n": {"lt": 9, "lte": 8, "gt": 1, "gte": 2}}`,
			url.Values{"filter[n][gt]": {"1"}, "filter[n][gte]": {"2"}, "filter[n][lt]": {"9"}, "filter[n][lte]": {"8"}}},
		{"exact and range together", `{"language": "it", "created_at": {"gte": "2026-01-01", "lt": "2026-02-01"}}`,
			url.Values{"filter[language]": {"it"}, "filter[created_at][gte]": {"2026-01-01"}, "filter[created_at][lt]": {"2026-02-01"}}},
		{"max length field name", `{"` + "a" + strings.Repeat("b", MaxFieldNameBytes-1) + `": 1}`,
			url.Values{"filter[a" + strings.Repeat("b", MaxFieldNameBytes-1) + "]": {"1"}}},
		{"max length value", `{"t": "` + strings.Repeat("v", MaxFilterValueBytes) + `"}`,
			url.Values{"filter[t]": {strings.Repeat("v", MaxFilterValueBytes)}}},
		{"surrounding whitespace", "\n {\"a\" : \"b\" } \n", url.Values{"filter[a]": {"b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeFilter(json.RawMessage(tc.raw))
			if err != nil {
				t.Fatalf("EncodeFilter(%s) error: %v", tc.raw, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("EncodeFilter(%s) = %v, want %v", tc.raw, got, tc.want)
			}
		})
	}
}

func TestEncodeFilterDeterministicOrder(t *testing.T) {
	tests := []struct {
		name string
		raws []string
		want string
	}{
		{
			name: "fields in any order encode the same",
			raws: []string{
				`{"b": 1, "a": {"lt": 3, "gte": 2}, "c": "x"}`,
				`{"c": "x", "a": {"gte": 2, "lt": 3}, "b": 1}`,
			},
			want: "filter%5Ba%5D%5Bgte%5D=2&filter%5Ba%5D%5Blt%5D=3&filter%5Bb%5D=1&filter%5Bc%5D=x",
		},
		{
			name: "values are query-escaped",
			raws: []string{`{"q": "a b&c"}`},
			want: "filter%5Bq%5D=a+b%26c",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, raw := range tc.raws {
				v, err := EncodeFilter(json.RawMessage(raw))
				if err != nil {
					t.Fatalf("EncodeFilter(%s): %v", raw, err)
				}
				if got := v.Encode(); got != tc.want {
					t.Errorf("EncodeFilter(%s).Encode() = %q, want %q", raw, got, tc.want)
				}
			}
		})
	}
}

func TestParseFilterConditions(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []Condition
	}{
		{"absent", "", nil},
		{"exact before range of the same field order", `{"b": {"lt": 2, "gt": 1}, "a": "x"}`, []Condition{
			{Field: "a", Value: "x"},
			{Field: "b", Op: "gt", Value: "1"},
			{Field: "b", Op: "lt", Value: "2"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFilter(json.RawMessage(tc.raw))
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseFilter = %#v, want %#v", got, tc.want)
			}
			for _, c := range got {
				wantKey := "filter[" + c.Field + "]"
				if c.Op != "" {
					wantKey += "[" + c.Op + "]"
				}
				if c.Key() != wantKey {
					t.Errorf("Key() = %q, want %q", c.Key(), wantKey)
				}
			}
		})
	}
}

func TestEncodeFilterRejects(t *testing.T) {
	long := strings.Repeat("f", MaxFieldNameBytes+1)
	many := map[string]int{}
	for i := 0; i <= MaxFilterFields; i++ {
		many["f"+strings.Repeat("x", i)] = i
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name string
		raw  string
		// every string must appear in the message
		want []string
	}{
		{"query string", `"language=en"`, []string{"JSON object", `{"language":"en"}`, `"language=en"`}},
		{"query string with range", `"filter[created_at][gte]=2026-01-01&language=en"`,
			[]string{`{"created_at":{"gte":"2026-01-01"},"language":"en"}`}},
		{"free text string", `"recent english transcripts"`, []string{"not a string", `{"language": "en"`}},
		{"empty string", `""`, []string{"JSON object", `{"field": value}`}},
		{"JSON-encoded object", `"{\"language\": \"en\"}"`, []string{"JSON-encoded string", `{"language":"en"}`}},
		{"string with broken JSON", `"{language: en}"`, []string{"not valid JSON", `{"field": value}`}},
		{"array", `[{"language": "en"}]`, []string{"not an array", `{"language": "en"`}},
		{"number", `5`, []string{"not a number"}},
		{"boolean", `true`, []string{"not a boolean"}},
		{"empty object", `{}`, []string{"empty object", "omit filter", `{"field": value}`}},
		{"empty object with spaces", ` { } `, []string{"empty object"}},
		{"malformed JSON", `{"a": }`, []string{"not well-formed JSON"}},
		{"trailing data", `{"a": 1} {"b": 2}`, []string{"not well-formed JSON"}},
		{"duplicate field", `{"a": 1, "a": 2}`, []string{`"a" more than once`, `{"a": {"gte": 1, "lt": 10}}`}},
		{"duplicate operator", `{"a": {"gte": 1, "gte": 2}}`, []string{`repeats operator "gte"`}},
		{"empty field name", `{"": 1}`, []string{"empty field name"}},
		{"field with space", `{"my field": 1}`, []string{`"my field" is not a valid field name`, `"created_at"`}},
		{"field starting with digit", `{"1st": 1}`, []string{`"1st" is not a valid`}},
		{"field starting with dot", `{".a": 1}`, []string{`".a" is not a valid`}},
		{"field with control char", `{"a\u0000b": 1}`, []string{"is not a valid field name"}},
		{"field with newline", `{"a\nb": 1}`, []string{"is not a valid field name"}},
		{"field with comma", `{"a,b": 1}`, []string{"is not a valid field name"}},
		{"non-ascii field", `{"naïve": 1}`, []string{"is not a valid field name"}},
		{"field too long", `{"` + long + `": 1}`, []string{"is not a valid field name", "128 bytes"}},
		{"filter bracket key", `{"filter[language]": "en"}`, []string{"brackets", `pass {"language": "en"}`}},
		{"field bracket operator key", `{"language[gte]": "a"}`, []string{"brackets", `pass {"language": {"gte": "a"}}`}},
		{"full bracket key", `{"filter[created_at][lt]": "2026-02-10T00:00:00Z"}`,
			[]string{`pass {"created_at": {"lt": "2026-02-10T00:00:00Z"}}`}},
		{"bracket key with unknown operator", `{"language[eq]": "a"}`, []string{"brackets", `{"field": value}`}},
		{"dangling bracket", `{"language[": "a"}`, []string{"brackets"}},
		{"null value", `{"language": null}`, []string{`"language" is null`, `{"language": "en"}`}},
		{"array value", `{"language": ["en", "it"]}`, []string{`"language" is an array`, "one call per value"}},
		{"empty string value", `{"language": ""}`, []string{"empty string", `{"language": "en"}`}},
		{"value too long", `{"t": "` + strings.Repeat("v", MaxFilterValueBytes+1) + `"}`, []string{"over the 1024-byte limit"}},
		{"empty operator object", `{"created_at": {}}`, []string{"empty operator object", "gte, gt, lte, lt"}},
		{"unknown operator", `{"n": {"eq": 5}}`, []string{`operator "eq"`, "gte, gt, lte, lt", `{"n": {"gte": 5}}`, `{"n": 5}`}},
		{"mongo style operator", `{"n": {"$gte": 5}}`, []string{`operator "$gte"`}},
		{"uppercase operator", `{"n": {"GTE": 5}}`, []string{`operator "GTE"`}},
		{"operator value object", `{"n": {"gte": {"value": 5}}}`, []string{"no deeper nesting"}},
		{"operator value null", `{"n": {"gte": null}}`, []string{`operator "gte" must be a string, number or boolean, not null`}},
		{"operator value array", `{"n": {"gte": [1]}}`, []string{"not an array"}},
		{"operator value empty string", `{"n": {"lt": ""}}`, []string{"empty string"}},
		{"bad value in second field", `{"a": 1, "b": null}`, []string{`"b" is null`}},
		{"too many fields", string(manyJSON), []string{"over the limit of 32"}},
		{"too large", `{"a": "` + strings.Repeat("x", MaxFilterBytes) + `"}`, []string{"-byte limit"}},
		{"not JSON at all", `language=en`, []string{"not well-formed JSON", `{"field": value}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := EncodeFilter(json.RawMessage(tc.raw))
			if err == nil {
				t.Fatalf("EncodeFilter(%s) = %v, want error", tc.raw, v)
			}
			if v != nil {
				t.Errorf("values returned with error: %v", v)
			}
			var qe *mcpkit.ArgError
			if !errors.As(err, &qe) {
				t.Fatalf("error %T is not *mcpkit.ArgError", err)
			}
			if qe.Code != CodeInvalidFilter || qe.Field != ParamFilter {
				t.Errorf("code/param = %q/%q, want %q/%q", qe.Code, qe.Field, CodeInvalidFilter, ParamFilter)
			}
			for _, w := range tc.want {
				if !strings.Contains(qe.Message, w) {
					t.Errorf("message %q does not contain %q", qe.Message, w)
				}
			}
			if !strings.Contains(err.Error(), qe.Message) || !strings.HasPrefix(err.Error(), CodeInvalidFilter) {
				t.Errorf("Error() = %q does not carry code and message", err.Error())
			}
		})
	}
}

func TestRangeOperators(t *testing.T) {
	got := RangeOperators()
	want := []string{"gt", "gte", "lt", "lte"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RangeOperators() = %v, want %v", got, want)
	}
	got[0] = "changed"
	if RangeOperators()[0] != "gt" {
		t.Fatal("RangeOperators exposes its backing array")
	}
}

// TestFilterMatchesRealRequests encodes the filter object behind every
// captured RS request that carried filter parameters and checks that the
// parameters are exactly the ones the real request sent.
func TestFilterMatchesRealRequests(t *testing.T) {
	dir := testkit.SamplesDir()
	data, err := os.ReadFile(filepath.Join(dir, "_index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]struct {
		Request string `json:"request"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatalf("parse _index.json: %v", err)
	}
	// The filter object a tool caller would pass for each captured request.
	objects := map[string]string{
		"error-invalid-filter-undeclared-range":           `{"language": {"gte": "a"}}`,
		"error-invalid-filter-unknown-field":              `{"bogus": "x"}`,
		"error-search-filter-without-single-stream":       `{"language": "en"}`,
		"owner-error-invalid-filter-undeclared-range":     `{"language": {"gte": "a"}}`,
		"owner-error-invalid-filter-unknown-field":        `{"bogus": "x"}`,
		"owner-error-search-filter-without-single-stream": `{"language": "en"}`,
		"owner-records-transcripts-exact-filter":          `{"language": "it"}`,
		"owner-records-videos-range-filter":               `{"created_at": {"gte": "2026-02-01T00:00:00Z", "lt": "2026-02-10T00:00:00Z"}}`,
		"owner-search-single-stream-filter":               `{"language": "en"}`,
		"records-transcripts-exact-filter":                `{"language": "it"}`,
		"records-videos-range-filter":                     `{"created_at": {"lt": "2026-02-10T00:00:00Z", "gte": "2026-02-01T00:00:00Z"}}`,
		"search-lexical-single-stream-filter":             `{"language": "en"}`,
	}
	var names []string
	for name, entry := range index {
		if strings.Contains(entry.Request, "filter[") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("no captured request carries filter parameters")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			obj, ok := objects[name]
			if !ok {
				t.Fatalf("sample %s sends filters but has no filter object in this test", name)
			}
			req := index[name].Request
			_, target, _ := strings.Cut(req, " ")
			u, err := url.Parse(target)
			if err != nil {
				t.Fatalf("parse %q: %v", target, err)
			}
			want := url.Values{}
			for k, vs := range u.Query() {
				if strings.HasPrefix(k, "filter[") {
					want[k] = vs
				}
			}
			got, err := EncodeFilter(json.RawMessage(obj))
			if err != nil {
				t.Fatalf("EncodeFilter(%s): %v", obj, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("EncodeFilter(%s) = %v, real request sent %v", obj, got, want)
			}
		})
	}
}

// FuzzEncodeFilter checks that no input panics, that every accepted filter
// produces only well-formed parameters, and that rebuilding the object from
// the parsed conditions encodes to the same parameters.
func FuzzEncodeFilter(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"language=en"`, `{"language": "en"}`, `{"n": 1.50}`,
		`{"created_at": {"gte": "2026-01-01", "lt": "2026-02-01"}}`, `{"filter[x]": 1}`,
		`{"a": {"eq": 1}}`, `{"a": 1, "a": 2}`, `{"a": {"gte": {"x": 1}}}`, `{"a": true}`,
		`{"a\u0000": 1}`, `{"a": "\ud800"}`, `{"a": -0}`, `{"a": 1e999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		conds, err := ParseFilter(raw)
		if err != nil {
			var qe *mcpkit.ArgError
			if !errors.As(err, &qe) || qe.Code != CodeInvalidFilter || qe.Message == "" {
				t.Fatalf("untyped or empty error: %v", err)
			}
			return
		}
		obj := map[string]any{}
		for _, c := range conds {
			if !ValidFieldName(c.Field) || (c.Op != "" && !isRangeOperator(c.Op)) || c.Value == "" {
				t.Fatalf("ill-formed condition %#v from %q", c, raw)
			}
			if c.Op == "" {
				obj[c.Field] = c.Value
				continue
			}
			ops, _ := obj[c.Field].(map[string]any)
			if ops == nil {
				ops = map[string]any{}
				obj[c.Field] = ops
			}
			ops[c.Op] = c.Value
		}
		first, err := EncodeFilter(raw)
		if err != nil {
			t.Fatalf("EncodeFilter rejects what ParseFilter accepted: %v", err)
		}
		if len(conds) == 0 {
			if len(first) != 0 {
				t.Fatalf("no conditions but values %v", first)
			}
			return
		}
		rebuilt, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		second, err := EncodeFilter(rebuilt)
		if err != nil {
			t.Fatalf("rebuilt filter %s rejected: %v", rebuilt, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("round trip changed values: %v -> %v", first, second)
		}
	})
}
