package mcpkit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

// DecodeArgs decodes tool arguments into dst, a pointer to an Args struct,
// refusing anything the struct does not declare exactly:
//
//   - args may be nil or empty (no arguments), raw JSON (json.RawMessage or
//     []byte, as mcp-go keeps it from the wire), or any value that marshals
//     to a JSON object (such as map[string]any);
//   - the arguments must form a JSON object, else invalid_json;
//   - every key must equal the json tag name of a field of dst; matching is
//     exact, not case-insensitive as encoding/json would allow, else
//     unknown_argument;
//   - every value must have the JSON type of its field (an integer for int
//     fields, a string for string fields, an array of strings for []string
//     fields, ...), else invalid_type; json.RawMessage fields take any value;
//   - a field whose json tag has no omitempty is required: leaving it out
//     gives missing_argument.
//
// A string anywhere in a value is unspelled (unseen.Unspell): an id or
// cursor a reply spelled is taken back as it was. A null value counts as
// absent. The returned error has an empty Tool; the
// caller fills it in. DecodeArgs panics when dst is not a pointer to a struct,
// which is a programming error, not bad input.
func DecodeArgs(args any, dst any) *ArgError {
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
	// values[i] is the raw value of spec.fields[i], nil when absent.
	var small [16]json.RawMessage
	var values []json.RawMessage
	if n := len(spec.fields); n <= len(small) {
		values = small[:n]
	} else {
		values = make([]json.RawMessage, n)
	}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return &ArgError{Code: CodeInvalidJSON, Message: "arguments must be a JSON object; got " + jsonKind(trimmed)}
		}
		if aerr := readMembers(trimmed, spec, values); aerr != nil {
			return aerr
		}
	}

	for i, f := range spec.fields {
		value := values[i]
		if value == nil || bytes.Equal(value, []byte("null")) {
			if f.required {
				return &ArgError{Field: f.name, Code: CodeMissingArgument, Message: f.name + " is required"}
			}
			continue
		}
		field := target.Field(f.index)
		if unseen.HasOpenJSON(value) {
			// A spelled value (an id or cursor as a reply showed it, its
			// hidden characters written out) is taken back as it was.
			value = unspellValue(value)
		}
		if err := jsonv2.Unmarshal(value, field.Addr().Interface(), valueOptions); err != nil {
			if _, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
				return &ArgError{Field: f.name, Code: CodeInvalidJSON, Message: f.name + " is not valid JSON"}
			}
			field.Set(reflect.Zero(field.Type()))
			return &ArgError{Field: f.name, Code: CodeInvalidType,
				Message: fmt.Sprintf("%s must be %s; got %s", f.name, f.want, describeValue(value))}
		}
	}
	return nil
}

// valueOptions decode one argument's value as encoding/json does: a
// repeated member name is taken (inside a json.RawMessage, kept as sent)
// and invalid UTF-8 is read as U+FFFD (FuzzDecodeArgs holds the two equal).
var valueOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// unspellValue is the JSON value raw with its strings unspelled
// (unseen.Unspell): a string as a JSON string, anything else through
// unseen.UnspellJSON; raw itself when it is not valid JSON.
func unspellValue(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '"' {
		return unseen.UnspellJSON(raw)
	}
	s, err := jsontext.AppendUnquote(nil, t)
	if err != nil {
		return raw
	}
	return unseen.AppendJSONString(nil, unseen.Unspell(string(s)))
}

// readMembers puts the raw value of each member of obj, a JSON object, in
// values at its field's index in spec, as json.Unmarshal into a
// map[string]json.RawMessage would find them (keys decoded and matched
// exactly, the last of a repeated key winning, invalid UTF-8 read as
// U+FFFD), in one pass of a pooled jsontext.Decoder (jsonpool) over obj that checks it
// as it reads, without building the map. A key that names no field is
// unknown_argument (the first such key in sorted order, as the map's keys
// would be checked); invalid JSON is invalid_json with encoding/json's own
// account of it. Bounded by len(obj).
func readMembers(obj []byte, spec *argsSpec, values []json.RawMessage) *ArgError {
	d := jsonpool.Get(obj)
	defer jsonpool.Put(d)
	unknown, anyUnknown := "", false
	valid := false
	if tok, err := d.ReadToken(); err == nil && tok.Kind() == '{' {
		for d.PeekKind() == '"' { // a valid object: as many members as bytes
			key, err := d.ReadValue()
			if err != nil {
				break
			}
			val, err := d.ReadValue()
			if err != nil {
				break
			}
			var i int
			var ok bool
			var name string
			if inner := key[1 : len(key)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
				i, ok = spec.byName[string(inner)] // no copy for a map lookup
				if !ok {
					name = string(inner)
				}
			} else {
				k, _ := jsontext.AppendUnquote(nil, key) // U+FFFD for invalid UTF-8, as encoding/json
				name = string(k)
				i, ok = spec.byName[name]
			}
			switch {
			case ok:
				values[i] = json.RawMessage(val)
			case !anyUnknown || name < unknown:
				unknown, anyUnknown = name, true
			}
		}
		if tok, err := d.ReadToken(); err == nil && tok.Kind() == '}' {
			_, err = d.ReadToken() // nothing but white space may follow
			valid = err == io.EOF
		}
	}
	if !valid {
		var object map[string]json.RawMessage
		err := json.Unmarshal(obj, &object)
		return &ArgError{Code: CodeInvalidJSON, Message: "arguments are not valid JSON: " + err.Error()}
	}
	if anyUnknown {
		return &ArgError{Field: unknown, Code: CodeUnknownArgument, Message: unknownMessage(unknown, spec.names)}
	}
	return nil
}

// rawArgs turns the accepted argument forms into JSON bytes.
func rawArgs(args any) ([]byte, *ArgError) {
	switch v := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, &ArgError{Code: CodeInvalidJSON, Message: "arguments cannot be encoded as JSON: " + err.Error()}
	}
	return b, nil
}

func unknownMessage(name string, valid []string) string {
	if len(valid) == 0 {
		return fmt.Sprintf("unknown argument %q; this tool takes no arguments", name)
	}
	return fmt.Sprintf("unknown argument %q; valid arguments: %s", name, strings.Join(valid, ", "))
}

// describeValue names the JSON type of a refused value; short numbers are
// quoted as they are, so "got 1.5" reads plainly for an integer field.
func describeValue(raw json.RawMessage) string {
	trimmed := bytes.TrimSpace(raw)
	switch kind := jsonKind(trimmed); {
	case kind == "an array":
		return "an array holding another type"
	case kind == "a number" && len(trimmed) <= 24:
		return string(trimmed)
	default:
		return kind
	}
}

// argsSpec is what DecodeArgs needs to know about one Args struct type.
type argsSpec struct {
	fields []fieldSpec
	byName map[string]int
	names  []string // wire names in declaration order, for messages
}

type fieldSpec struct {
	name     string
	index    int
	required bool
	want     string // "an integer", "a string", ...
}

var specCache sync.Map // reflect.Type -> *argsSpec

func specFor(t reflect.Type) *argsSpec {
	if cached, ok := specCache.Load(t); ok {
		return cached.(*argsSpec)
	}
	spec := &argsSpec{byName: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, ok := sf.Tag.Lookup("json")
		if !ok || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		name = cmp.Or(name, sf.Name)
		spec.byName[name] = len(spec.fields)
		spec.names = append(spec.names, name)
		spec.fields = append(spec.fields, fieldSpec{
			name:     name,
			index:    i,
			required: !slices.Contains(strings.Split(opts, ","), "omitempty"),
			want:     wantedKind(sf.Type),
		})
	}
	actual, _ := specCache.LoadOrStore(t, spec)
	return actual.(*argsSpec)
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// wantedKind names the JSON type that a Go field type accepts.
func wantedKind(t reflect.Type) string {
	if t == rawMessageType {
		return "any JSON value"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(wantedKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "a JSON object"
	default:
		return "a value of type " + t.String()
	}
}
