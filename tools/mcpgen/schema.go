package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"
)

// goField is how one argument becomes a field of its Args struct, in the
// emitted source (goType) and in the struct reflected for the schema.
type goField struct {
	name        string // Go field name
	goType      string // as written in the emitted source
	reflectType reflect.Type
	tag         string // struct tag, json only
	pointer     bool   // optional scalar held as a pointer
}

// rawMessageGoType is the Go type of an object argument in the emitted source.
const rawMessageGoType = "json.RawMessage"

// modelTypes are the Go types arguments and outputs reflect from, by
// catalog type; an object reflects as a JSON object.
var modelTypes = map[string]reflect.Type{
	typeString: reflect.TypeFor[string](), typeInteger: reflect.TypeFor[int](), typeNumber: reflect.TypeFor[float64](),
	typeBoolean: reflect.TypeFor[bool](), typeStringArray: reflect.TypeFor[[]string](),
	typeObject: reflect.TypeFor[map[string]any](), typeArray: reflect.TypeFor[[]any](),
}

// fieldFor decides the Go shape of an argument of a linted type. Optional
// integers, numbers and booleans are pointers so absence is visible;
// optional strings are plain strings (empty = absent); object arguments
// stay raw JSON for the handler to interpret.
func fieldFor(a Arg) goField {
	omit := ""
	if !a.Required {
		omit = ",omitempty"
	}
	f := goField{name: camel(a.Name), reflectType: modelTypes[a.Type], tag: fmt.Sprintf(`json:"%s%s"`, a.Name, omit)}
	if !a.Required && (a.Type == typeInteger || a.Type == typeNumber || a.Type == typeBoolean) {
		f.reflectType, f.pointer = reflect.PointerTo(f.reflectType), true
	}
	f.goType = f.reflectType.String()
	if a.Type == typeObject {
		f.goType = rawMessageGoType
	}
	return f
}

// reflectStruct reflects a struct type built from fields, in field order,
// into a schema every client accepts: the struct expanded in place, no
// $ref/$defs, and no additionalProperties (strictness is enforced by
// decoding, and some clients reject the keyword).
func reflectStruct(fields []reflect.StructField) *jsonschema.Schema {
	r := &jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true, AllowAdditionalProperties: true}
	s := r.ReflectFromType(reflect.StructOf(fields))
	s.Version, s.ID, s.Definitions = "", "", nil
	if s.Properties == nil {
		s.Properties = orderedmap.New[string, *jsonschema.Schema]()
	}
	return s
}

// inputSchema builds a tool's input schema from its arguments.
func inputSchema(t Tool) ([]byte, error) {
	fields := make([]reflect.StructField, 0, len(t.Args))
	for _, a := range t.Args {
		f := fieldFor(a)
		fields = append(fields, reflect.StructField{Name: f.name, Type: f.reflectType, Tag: reflect.StructTag(f.tag)})
	}
	s := reflectStruct(fields)
	for _, a := range t.Args {
		prop := s.Properties.Value(a.Name)
		prop.Description, prop.Default = a.Description, a.Default
		target := prop
		if a.Type == typeStringArray {
			target = prop.Items
		}
		if len(a.Enum) > 0 {
			target.Enum = make([]any, len(a.Enum))
			for i, v := range a.Enum {
				target.Enum[i] = v
			}
		}
		if a.MaxLength != nil {
			n := uint64(*a.MaxLength)
			target.MaxLength = &n
		}
		if a.Minimum != nil {
			prop.Minimum = jsonNumber(*a.Minimum)
		}
		if a.Maximum != nil {
			prop.Maximum = jsonNumber(*a.Maximum)
		}
	}
	return marshalSchema(s)
}

// outputSchema builds a tool's structuredContent schema: top-level
// properties only, none required, other properties allowed.
func outputSchema(t Tool) ([]byte, error) {
	fields := make([]reflect.StructField, 0, len(t.Output))
	for _, o := range t.Output {
		fields = append(fields, reflect.StructField{
			Name: camel(o.Name),
			Type: modelTypes[o.Type],
			Tag:  reflect.StructTag(fmt.Sprintf(`json:"%s,omitempty"`, o.Name)),
		})
	}
	s := reflectStruct(fields)
	for _, o := range t.Output {
		prop := s.Properties.Value(o.Name)
		prop.Description = o.Description
		if o.Type == typeArray {
			prop.Items = nil // any items
		}
	}
	s.Required = nil
	return marshalSchema(s)
}

// marshalSchema encodes a schema compactly and refuses the keywords some
// clients cannot take.
func marshalSchema(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.Marshal(s)
	if err == nil {
		err = checkPortableSchema(b)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// checkPortableSchema fails on $ref, $defs, $schema, definitions or
// additionalProperties anywhere, on a `type` that is not one string (the
// legal ["string","null"] form breaks clients that read one string), and on
// a top-level anyOf/oneOf/allOf or type other than "object".
func checkPortableSchema(b []byte) error {
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("schema is not a JSON object: %w", err)
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if _, ok := top[kw]; ok {
			return fmt.Errorf("schema has a top-level %s", kw)
		}
	}
	if top["type"] != "object" {
		return fmt.Errorf("schema type is %v, not \"object\"", top["type"])
	}
	return walkSchema(top, "")
}

// constrains reports whether a property schema says what its value is.
func constrains(m map[string]any) bool {
	for _, kw := range []string{"type", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items"} {
		if _, ok := m[kw]; ok {
			return true
		}
	}
	return false
}

var forbiddenKeywords = []string{"$ref", "$defs", "$schema", "definitions", "additionalProperties"}

// walkSchema visits every subschema; the names under "properties" are
// argument names, not keywords, and values of keywords that hold data
// (default, enum, const, examples) are not schemas.
func walkSchema(node map[string]any, path string) error {
	for key, value := range node {
		if slices.Contains(forbiddenKeywords, key) {
			return fmt.Errorf("schema contains %s at %q", key, path)
		}
		switch key {
		case "default", "enum", "const", "examples":
			continue
		case "type":
			if _, ok := value.(string); !ok {
				return fmt.Errorf("schema type at %q is %v, not one type name; use anyOf branches with one type each, or omit the key instead of sending null", path, value)
			}
			continue
		case "properties":
			props, _ := value.(map[string]any)
			for name, sub := range props {
				if m, ok := sub.(map[string]any); ok {
					if !constrains(m) {
						return fmt.Errorf("schema property %q at %q has no type or other validation keyword, so it accepts any value; give it a type", name, path)
					}
					if err := walkSchema(m, path+"/properties/"+name); err != nil {
						return err
					}
				}
			}
			continue
		}
		items, ok := value.([]any)
		if !ok {
			items = []any{value}
		}
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				if err := walkSchema(m, path+"/"+key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func jsonNumber(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
}
