package query

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

func TestEncodeExpandLimitValid(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		expand []string
		want   url.Values
	}{
		{"absent", "", nil, url.Values{}},
		{"null", "null", []string{"messages"}, url.Values{}},
		{"one relation", `{"messages": 5}`, []string{"messages"}, url.Values{"expand_limit[messages]": {"5"}}},
		{"lower bound", `{"messages": 1}`, []string{"messages"}, url.Values{"expand_limit[messages]": {"1"}}},
		{"upper bound", `{"messages": 100}`, []string{"messages"}, url.Values{"expand_limit[messages]": {"100"}}},
		{"two relations, other expands untouched", `{"video": 2, "comments": 10}`, []string{"comments", "owner", "video"},
			url.Values{"expand_limit[comments]": {"10"}, "expand_limit[video]": {"2"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeExpandLimit(json.RawMessage(tc.raw), tc.expand)
			if err != nil {
				t.Fatalf("EncodeExpandLimit(%s, %v): %v", tc.raw, tc.expand, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("EncodeExpandLimit(%s, %v) = %v, want %v", tc.raw, tc.expand, got, tc.want)
			}
		})
	}
}

func TestEncodeExpandLimitRejects(t *testing.T) {
	msgs := []string{"messages"}
	tests := []struct {
		name   string
		raw    string
		expand []string
		want   []string
	}{
		{"zero", `{"messages": 0}`, msgs, []string{"at least 1", `{"messages": 5}`}},
		{"negative", `{"messages": -3}`, msgs, []string{"-3", "at least 1"}},
		{"huge negative", `{"messages": -99999999999999999999999}`, msgs, []string{"at least 1"}},
		{"over maximum", `{"messages": 101}`, msgs, []string{"over the maximum of 100"}},
		{"huge", `{"messages": 99999999999999999999999}`, msgs, []string{"over the maximum of 100"}},
		{"fraction", `{"messages": 2.5}`, msgs, []string{"not a whole number"}},
		{"integral decimal", `{"messages": 5.0}`, msgs, []string{"not a whole number"}},
		{"exponent", `{"messages": 1e1}`, msgs, []string{"not a whole number"}},
		{"numeric string", `{"messages": "5"}`, msgs, []string{"without quotes", `{"messages": 5}`}},
		{"word string", `{"messages": "all"}`, msgs, []string{"whole number, not a string"}},
		{"boolean", `{"messages": true}`, msgs, []string{"not a boolean"}},
		{"null value", `{"messages": null}`, msgs, []string{"not null"}},
		{"array value", `{"messages": [5]}`, msgs, []string{"not an array"}},
		{"object value", `{"messages": {"limit": 5}}`, msgs, []string{"not an object"}},
		{"empty object", `{}`, msgs, []string{"empty object", `expand_limit: {"messages": 5}`}},
		{"string", `"messages=5"`, msgs, []string{"JSON object, not a string"}},
		{"JSON-encoded object", `"{\"messages\": 5}"`, msgs, []string{"JSON-encoded string", `{"messages":5}`}},
		{"array", `[5]`, msgs, []string{"not an array"}},
		{"number", `5`, msgs, []string{"not a number"}},
		{"bracket key", `{"expand_limit[messages]": 5}`, msgs, []string{"brackets", `pass {"messages": 5}`}},
		{"bracket key bad value", `{"expand_limit[messages]": "x"}`, msgs, []string{`pass {"messages": 5}`}},
		{"odd bracket key", `{"a[b][c]": 5}`, msgs, []string{"brackets"}},
		{"not requested", `{"video": 3}`, msgs, []string{`"video", which is not in expand`, `expand: ["video"], expand_limit: {"video": 3}`}},
		{"no expand at all", `{"messages": 3}`, nil, []string{"not in expand"}},
		{"expand differs in case", `{"Messages": 3}`, msgs, []string{"not in expand"}},
		{"duplicate relation", `{"messages": 3, "messages": 4}`, msgs, []string{"more than once"}},
		{"empty relation", `{"": 3}`, msgs, []string{"empty relation name"}},
		{"relation with space", `{"my rel": 3}`, msgs, []string{"not a valid relation name"}},
		{"malformed", `{"messages": 5,}`, msgs, []string{"not well-formed JSON"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := EncodeExpandLimit(json.RawMessage(tc.raw), tc.expand)
			if err == nil {
				t.Fatalf("EncodeExpandLimit(%s) = %v, want error", tc.raw, v)
			}
			var qe *mcpkit.ArgError
			if !errors.As(err, &qe) {
				t.Fatalf("error %T is not *mcpkit.ArgError", err)
			}
			if qe.Code != CodeInvalidExpandLimit || qe.Field != ParamExpandLimit {
				t.Errorf("code/param = %q/%q", qe.Code, qe.Field)
			}
			for _, w := range tc.want {
				if !strings.Contains(qe.Message, w) {
					t.Errorf("message %q does not contain %q", qe.Message, w)
				}
			}
		})
	}
}

func TestJoinFields(t *testing.T) {
	tests := []struct {
		name    string
		fields  []string
		want    string
		wantErr []string
	}{
		{name: "nil", fields: nil, want: ""},
		{name: "empty", fields: []string{}, want: ""},
		{name: "one", fields: []string{"id"}, want: "id"},
		{name: "keeps order", fields: []string{"title", "id", "created_at"}, want: "title,id,created_at"},
		{name: "drops duplicates keeping first", fields: []string{"b", "a", "b", "a", "c"}, want: "b,a,c"},
		{name: "dotted", fields: []string{"author.name", "x-y"}, want: "author.name,x-y"},
		{name: "empty name", fields: []string{"id", ""}, wantErr: []string{"empty name", `["id", "title"]`}},
		{name: "comma joined", fields: []string{"id,title"}, wantErr: []string{"comma", `["id", "title"]`}},
		{name: "comma with spaces", fields: []string{"id, title,"}, wantErr: []string{`["id", "title"]`}},
		{name: "space", fields: []string{"my field"}, wantErr: []string{"not a valid field name"}},
		{name: "brackets", fields: []string{"data[title]"}, wantErr: []string{"not a valid field name"}},
		{name: "leading digit", fields: []string{"1a"}, wantErr: []string{"not a valid field name"}},
		{name: "too long", fields: []string{strings.Repeat("a", MaxFieldNameBytes+1)}, wantErr: []string{"128 bytes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JoinFields(tc.fields)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("JoinFields(%q): %v", tc.fields, err)
				}
				if got != tc.want {
					t.Fatalf("JoinFields(%q) = %q, want %q", tc.fields, got, tc.want)
				}
				return
			}
			var qe *mcpkit.ArgError
			if !errors.As(err, &qe) {
				t.Fatalf("JoinFields(%q) = %q, %v; want *mcpkit.ArgError", tc.fields, got, err)
			}
			if qe.Code != CodeInvalidFields || qe.Field != ParamFields {
				t.Errorf("code/param = %q/%q", qe.Code, qe.Field)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(qe.Message, w) {
					t.Errorf("message %q does not contain %q", qe.Message, w)
				}
			}
		})
	}
}

func TestValidFieldName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"_", true}, {"A_b.c-d9", true}, {"created_at", true},
		{strings.Repeat("x", MaxFieldNameBytes), true},
		{"", false}, {"9a", false}, {"-a", false}, {".a", false}, {"a b", false},
		{"a[b]", false}, {"a,b", false}, {"a\x00", false}, {"a\t", false}, {"é", false},
		{"a/b", false}, {"a:b", false}, {"a%2e", false},
		{strings.Repeat("x", MaxFieldNameBytes+1), false},
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.name), func(t *testing.T) {
			if got := ValidFieldName(tc.name); got != tc.ok {
				t.Fatalf("ValidFieldName(%q) = %v, want %v", tc.name, got, tc.ok)
			}
		})
	}
}

// FuzzEncodeExpandLimit checks that no input panics and that accepted
// input yields only in-range limits for requested relations.
func FuzzEncodeExpandLimit(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"messages": 5}`, `{"messages": 0}`, `{"messages": "5"}`,
		`{"expand_limit[messages]": 5}`, `{"messages": 1e2}`, `{"messages": 100, "video": 1}`} {
		f.Add([]byte(s), "messages,video")
	}
	f.Fuzz(func(t *testing.T, raw []byte, expandCSV string) {
		expand := strings.Split(expandCSV, ",")
		v, err := EncodeExpandLimit(raw, expand)
		if err != nil {
			var qe *mcpkit.ArgError
			if !errors.As(err, &qe) || qe.Code != CodeInvalidExpandLimit || qe.Message == "" {
				t.Fatalf("untyped or empty error: %v", err)
			}
			return
		}
		for k, vs := range v {
			rel, ok := strings.CutPrefix(k, "expand_limit[")
			rel, ok2 := strings.CutSuffix(rel, "]")
			if !ok || !ok2 || !ValidFieldName(rel) {
				t.Fatalf("bad key %q", k)
			}
			found := false
			for _, e := range expand {
				found = found || e == rel
			}
			if !found {
				t.Fatalf("relation %q not in expand %v", rel, expand)
			}
			n, err := strconv.Atoi(vs[0])
			if len(vs) != 1 || err != nil || n < MinExpandLimit || n > MaxExpandLimit {
				t.Fatalf("bad value %v for %q", vs, k)
			}
		}
	})
}
