package mcpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sampleArgs has one field of every shape generated Args structs use,
// including a required integer that only DecodeArgs can see is missing.
type sampleArgs struct {
	Name    string          `json:"name"`
	Count   int             `json:"count"`
	Limit   *int            `json:"limit,omitempty"`
	Ratio   *float64        `json:"ratio,omitempty"`
	Exact   *bool           `json:"exact,omitempty"`
	Fields  []string        `json:"fields,omitempty"`
	Filter  json.RawMessage `json:"filter,omitempty"`
	Note    string          `json:"note,omitempty"`
	ignored string
	Skipped string `json:"-"`
}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name      string
		args      any
		wantCode  string
		wantField string
		wantMsg   string
		check     func(t *testing.T, a sampleArgs)
	}{
		{name: "raw JSON", args: json.RawMessage(`{"name":"n","count":2,"limit":5,"ratio":0.5,"exact":true,"fields":["a","b"],"filter":{"x":{"gte":1}}}`),
			check: func(t *testing.T, a sampleArgs) {
				if a.Name != "n" || a.Count != 2 || *a.Limit != 5 || *a.Ratio != 0.5 || !*a.Exact || len(a.Fields) != 2 || string(a.Filter) != `{"x":{"gte":1}}` {
					t.Errorf("decoded %+v", a)
				}
			}},
		{name: "map", args: map[string]any{"name": "n", "count": 0},
			check: func(t *testing.T, a sampleArgs) {
				if a.Name != "n" || a.Count != 0 || a.Limit != nil || a.Filter != nil {
					t.Errorf("decoded %+v", a)
				}
			}},
		{name: "bytes", args: []byte(`{"name":"n","count":1,"note":"hi"}`),
			check: func(t *testing.T, a sampleArgs) {
				if a.Note != "hi" {
					t.Errorf("decoded %+v", a)
				}
			}},
		{name: "null optional is absent", args: json.RawMessage(`{"name":"n","count":1,"limit":null,"filter":null}`),
			check: func(t *testing.T, a sampleArgs) {
				if a.Limit != nil || a.Filter != nil {
					t.Errorf("decoded %+v", a)
				}
			}},
		{name: "raw field keeps any JSON", args: json.RawMessage(`{"name":"n","count":1,"filter":"a=b"}`),
			check: func(t *testing.T, a sampleArgs) {
				if string(a.Filter) != `"a=b"` {
					t.Errorf("filter = %s", a.Filter)
				}
			}},
		{name: "nil args with required fields", args: nil, wantCode: CodeMissingArgument, wantField: "name", wantMsg: "name is required"},
		{name: "required integer missing", args: map[string]any{"name": "n"}, wantCode: CodeMissingArgument, wantField: "count"},
		{name: "required integer null", args: json.RawMessage(`{"name":"n","count":null}`), wantCode: CodeMissingArgument, wantField: "count"},
		{name: "unknown argument", args: map[string]any{"name": "n", "count": 1, "zzz": 1, "aaa": 2}, wantCode: CodeUnknownArgument, wantField: "aaa",
			wantMsg: `unknown argument "aaa"; valid arguments: name, count, limit, ratio, exact, fields, filter, note`},
		{name: "unexported and dash fields are not arguments", args: map[string]any{"name": "n", "count": 1, "Skipped": "x"}, wantCode: CodeUnknownArgument, wantField: "Skipped"},
		{name: "case-insensitive match refused", args: map[string]any{"NAME": "n", "count": 1}, wantCode: CodeUnknownArgument, wantField: "NAME"},
		{name: "string for int", args: map[string]any{"name": "n", "count": "1"}, wantCode: CodeInvalidType, wantField: "count", wantMsg: "count must be an integer; got a string"},
		{name: "fraction for int", args: json.RawMessage(`{"name":"n","count":1.5}`), wantCode: CodeInvalidType, wantField: "count", wantMsg: "got 1.5"},
		{name: "overflow for int", args: json.RawMessage(`{"name":"n","count":123456789012345678901234567890}`), wantCode: CodeInvalidType, wantField: "count", wantMsg: "got a number"},
		{name: "number for string", args: map[string]any{"name": 3, "count": 1}, wantCode: CodeInvalidType, wantField: "name", wantMsg: "name must be a string; got 3"},
		{name: "string for bool", args: map[string]any{"name": "n", "count": 1, "exact": "yes"}, wantCode: CodeInvalidType, wantField: "exact", wantMsg: "a boolean"},
		{name: "bool for number", args: map[string]any{"name": "n", "count": 1, "ratio": true}, wantCode: CodeInvalidType, wantField: "ratio", wantMsg: "ratio must be a number; got a boolean"},
		{name: "mixed array", args: map[string]any{"name": "n", "count": 1, "fields": []any{"a", 1}}, wantCode: CodeInvalidType, wantField: "fields", wantMsg: "an array of strings"},
		{name: "object for array", args: map[string]any{"name": "n", "count": 1, "fields": map[string]any{}}, wantCode: CodeInvalidType, wantField: "fields", wantMsg: "got an object"},
		{name: "array arguments", args: json.RawMessage(`[1]`), wantCode: CodeInvalidJSON, wantMsg: "arguments must be a JSON object; got an array"},
		{name: "broken JSON", args: json.RawMessage(`{"name":`), wantCode: CodeInvalidJSON, wantMsg: "arguments are not valid JSON"},
		{name: "unencodable", args: map[string]any{"name": func() {}}, wantCode: CodeInvalidJSON, wantMsg: "cannot be encoded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a sampleArgs
			err := DecodeArgs(tc.args, &a)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("DecodeArgs: %v", err)
				}
				tc.check(t, a)
				return
			}
			if err == nil {
				t.Fatalf("DecodeArgs accepted %v: %+v", tc.args, a)
			}
			if err.Code != tc.wantCode || err.Field != tc.wantField {
				t.Fatalf("error %+v, want code %s field %q", err, tc.wantCode, tc.wantField)
			}
			if err.Tool != "" {
				t.Errorf("Tool = %q, want it left for the caller", err.Tool)
			}
			if !strings.Contains(err.Message, tc.wantMsg) {
				t.Errorf("message %q does not contain %q", err.Message, tc.wantMsg)
			}
		})
	}
}

func TestDecodeArgsNoArguments(t *testing.T) {
	type empty struct{}
	for name, args := range map[string]any{"nil": nil, "empty raw": json.RawMessage(nil), "null": json.RawMessage("null"), "empty object": map[string]any{}} {
		t.Run(name, func(t *testing.T) {
			if err := DecodeArgs(args, &empty{}); err != nil {
				t.Fatalf("DecodeArgs: %v", err)
			}
		})
	}
	t.Run("argument to a tool without any", func(t *testing.T) {
		err := DecodeArgs(map[string]any{"x": 1}, &empty{})
		if err == nil || !strings.Contains(err.Message, "takes no arguments") {
			t.Fatalf("error = %v", err)
		}
	})
}

func TestDecodeArgsPanicsOnBadTarget(t *testing.T) {
	for name, dst := range map[string]any{"non-pointer": sampleArgs{}, "nil pointer": (*sampleArgs)(nil), "pointer to map": &map[string]any{}} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			DecodeArgs(nil, dst)
		})
	}
}

// decodeArgsByMap is DecodeArgs as it was before it walked the arguments:
// a decode into map[string]json.RawMessage. FuzzDecodeArgs holds the two
// equal.
func decodeArgsByMap(args any, dst any) *ArgError {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("mcpkit.DecodeArgs: dst must be a non-nil pointer to a struct, got %T", dst))
	}
	target := rv.Elem()
	spec := specFor(target.Type())

	raw, aerr := rawArgs(args)
	if aerr != nil {
		return aerr
	}
	var object map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return &ArgError{Code: CodeInvalidJSON, Message: "arguments must be a JSON object; got " + jsonKind(trimmed)}
		}
		if err := json.Unmarshal(trimmed, &object); err != nil {
			return &ArgError{Code: CodeInvalidJSON, Message: "arguments are not valid JSON: " + err.Error()}
		}
	}

	keys := make([]string, 0, len(object))
	for k := range object {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := spec.byName[k]; !ok {
			return &ArgError{Field: k, Code: CodeUnknownArgument, Message: unknownMessage(k, spec.names)}
		}
	}
	for _, f := range spec.fields {
		value, present := object[f.name]
		if present && bytes.Equal(bytes.TrimSpace(value), []byte("null")) {
			present = false
		}
		if !present {
			if f.required {
				return &ArgError{Field: f.name, Code: CodeMissingArgument, Message: f.name + " is required"}
			}
			continue
		}
		field := target.Field(f.index)
		if err := json.Unmarshal(value, field.Addr().Interface()); err != nil {
			var syntaxErr *json.SyntaxError
			if errors.As(err, &syntaxErr) {
				return &ArgError{Field: f.name, Code: CodeInvalidJSON, Message: f.name + " is not valid JSON"}
			}
			field.Set(reflect.Zero(field.Type()))
			return &ArgError{Field: f.name, Code: CodeInvalidType,
				Message: fmt.Sprintf("%s must be %s; got %s", f.name, f.want, describeValue(value))}
		}
	}
	return nil
}

// FuzzDecodeArgs: every error has a code and a message, nothing invalid is
// accepted, and the walking decoder agrees with decodeArgsByMap in its
// error and in what it stores.
func FuzzDecodeArgs(f *testing.F) {
	for _, seed := range []string{`{}`, `{"name":"n","count":1}`, `[1]`, `{"fields":["a",1]}`, `{"count":1e400}`, `null`, ` `,
		`{"name":"a","name":"b"}`, `{"zz":1,"aa":2,"name":"x"}`, `{"n\u0061me":"x"}`, `{"Name":"x"}`, "{\"\xff\":1}", `{"name":null}`, `{"name":"x"`,
		// Values where json v2 and encoding/json could part.
		`{"name":"\ud800x","count":-0}`, "{\"name\":\"a\xffb\",\"count\":1e2}", `{"name":"","count":1,"ratio":1e400}`,
		`{"name":"","count":1,"fields":["a",null],"filter":{"a":1,"a":2}}`, `{"name":"","count":9223372036854775808}`,
		`{"name":"","count":1,"limit":-1.0,"exact":null}`, `{"name":"","count":1,"limit":-7,"exact":false,"note":"\u00e9"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b sampleArgs
		err := DecodeArgs(json.RawMessage(data), &a)
		if err != nil && (err.Code == "" || err.Message == "") {
			t.Fatalf("error without code or message: %+v", err)
		}
		if err == nil && !json.Valid(data) {
			t.Fatalf("invalid JSON %q accepted", data)
		}
		want := decodeArgsByMap(json.RawMessage(data), &b)
		if !reflect.DeepEqual(err, want) || !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: DecodeArgs %+v %+v; by map %+v %+v", data, err, a, want, b)
		}
	})
}

// TestDecodeArgsUnspells takes values as a reply spelled them (hidden
// characters written out, see unseen.Spell) back as they were, in strings,
// string arrays and objects, raw or \u-escaped; other text stays.
func TestDecodeArgsUnspells(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       sampleArgs
	}{
		{"string", `{"name":"n⟦U+200B⟧1","count":1}`, sampleArgs{Name: "n\u200b1", Count: 1}},
		{"escaped open", `{"name":"n\u27e6U+200B\u27e71","count":1}`, sampleArgs{Name: "n\u200b1", Count: 1}},
		{"spelled open", `{"name":"⟦U+27E6⟧U+200B⟧","count":1}`, sampleArgs{Name: "⟦U+200B⟧", Count: 1}},
		{"array", `{"name":"a","count":1,"fields":["b⟦U+2060⟧","c"]}`, sampleArgs{Name: "a", Count: 1, Fields: []string{"b\u2060", "c"}}},
		{"object", `{"name":"a","count":1,"filter":{"k":{"gte":"x⟦U+E0041⟧"}}}`, sampleArgs{Name: "a", Count: 1, Filter: json.RawMessage(`{"k":{"gte":"x` + "\U000E0041" + `"}}`)}},
		{"marker stays", `{"name":"⟦hidden U+200B⟧","count":1}`, sampleArgs{Name: "⟦hidden U+200B⟧", Count: 1}},
		{"visible code point stays", `{"name":"⟦U+0041⟧","count":1}`, sampleArgs{Name: "⟦U+0041⟧", Count: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got sampleArgs
			if err := DecodeArgs(json.RawMessage(tc.args), &got); err != nil {
				t.Fatalf("DecodeArgs: %v", err)
			}
			if got.Name != tc.want.Name || got.Count != tc.want.Count || !reflect.DeepEqual(got.Fields, tc.want.Fields) || string(got.Filter) != string(tc.want.Filter) {
				t.Fatalf("got %+v (filter %s), want %+v (filter %s)", got, got.Filter, tc.want, tc.want.Filter)
			}
		})
	}
}

// BenchmarkDecodeArgs decodes a tool call's arguments as mcp-go hands them
// over (raw JSON) into an Args struct.
func BenchmarkDecodeArgs(b *testing.B) {
	raw := json.RawMessage(`{"name":"search terms","count":20,"limit":5,"exact":true,"fields":["a","b"],"filter":{"x":{"gte":1}},"note":"caf\u00e9"}`)
	b.ReportAllocs()
	for b.Loop() {
		var a sampleArgs
		if err := DecodeArgs(raw, &a); err != nil {
			b.Fatal(err)
		}
	}
}
