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

// goField is how one argument becomes a field of its Args struct, both in
// the emitted source (goType) and in the struct reflected for the schema
// (reflectType).
type goField struct {
	name        string // Go field name
	goType      string // as written in the emitted source
	reflectType reflect.Type
	tag         string // struct tag, json only
	pointer     bool   // optional scalar held as a pointer
}

var (
	rawMessageGoType = "json.RawMessage"
	objectModelType  = reflect.TypeFor[map[string]any]()
)

// fieldFor decides the Go shape of an argument. Optional integers, numbers
// and booleans are pointers so absence is visible; optional strings are
// plain strings (empty = absent); object arguments stay raw JSON for the
// handler to interpret, and reflect as a JSON object.
func fieldFor(a Arg) goField {
	f := goField{name: camel(a.Name)}
	omit := ""
	if !a.Required {
		omit = ",omitempty"
	}
	f.tag = fmt.Sprintf(`json:"%s%s"`, a.Name, omit)
	scalar := func(t reflect.Type) {
		if a.Required {
			f.goType, f.reflectType = t.String(), t
			return
		}
		f.goType, f.reflectType, f.pointer = "*"+t.String(), reflect.PointerTo(t), true
	}
	switch a.Type {
	case typeString:
		f.goType, f.reflectType = "string", reflect.TypeFor[string]()
	case typeInteger:
		scalar(reflect.TypeFor[int]())
	case typeNumber:
		scalar(reflect.TypeFor[float64]())
	case typeBoolean:
		scalar(reflect.TypeFor[bool]())
	case typeStringArray:
		f.goType, f.reflectType = "[]string", reflect.TypeFor[[]string]()
	case typeObject:
		f.goType, f.reflectType = rawMessageGoType, objectModelType
	}
	return f
}

// outputModelType is the Go type an output property reflects from.
func outputModelType(typ string) reflect.Type {
	switch typ {
	case typeString:
		return reflect.TypeFor[string]()
	case typeInteger:
		return reflect.TypeFor[int]()
	case typeNumber:
		return reflect.TypeFor[float64]()
	case typeBoolean:
		return reflect.TypeFor[bool]()
	case typeStringArray:
		return reflect.TypeFor[[]string]()
	case typeArray:
		return reflect.TypeFor[[]any]()
	default:
		return objectModelType
	}
}

// reflector produces schemas every client accepts: the struct expanded in
// place, no $ref/$defs, and no additionalProperties (strictness is enforced
// by decoding, and some clients reject the keyword).
func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		ExpandedStruct:            true,
		DoNotReference:            true,
		AllowAdditionalProperties: true,
	}
}

// reflectStruct reflects a struct type built from fields, in field order.
func reflectStruct(fields []reflect.StructField) *jsonschema.Schema {
	s := reflector().ReflectFromType(reflect.StructOf(fields))
	s.Version = ""
	s.ID = ""
	s.Definitions = nil
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
		prop, ok := s.Properties.Get(a.Name)
		if !ok {
			return nil, fmt.Errorf("tool %q: reflected schema lacks argument %q", t.Name, a.Name)
		}
		prop.Description = a.Description
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
		if a.Default != nil {
			prop.Default = a.Default
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
			Type: outputModelType(o.Type),
			Tag:  reflect.StructTag(fmt.Sprintf(`json:"%s,omitempty"`, o.Name)),
		})
	}
	s := reflectStruct(fields)
	for _, o := range t.Output {
		prop, ok := s.Properties.Get(o.Name)
		if !ok {
			return nil, fmt.Errorf("tool %q: reflected schema lacks output %q", t.Name, o.Name)
		}
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
	if err != nil {
		return nil, err
	}
	if err := checkPortableSchema(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkPortableSchema fails on $ref, $defs, $schema, definitions or
// additionalProperties anywhere in the schema, on a `type` that is not one
// string (the array form such as ["string","null"] is legal JSON Schema but
// several clients read type as a single string), and on a top-level
// anyOf/oneOf/allOf or a top-level type other than "object".
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
		switch v := value.(type) {
		case map[string]any:
			if err := walkSchema(v, path+"/"+key); err != nil {
				return err
			}
		case []any:
			for _, item := range v {
				if m, ok := item.(map[string]any); ok {
					if err := walkSchema(m, path+"/"+key); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func jsonNumber(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
}
