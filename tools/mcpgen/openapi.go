package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// apiDoc indexes the operations of an OpenAPI document by operationId.
type apiDoc struct {
	ops map[string]*apiOperation
}

type apiOperation struct {
	id, method, path string
	// jsonBody: the operation takes an application/json request body.
	jsonBody bool
	// order lists the parameters as the document declares them (operation
	// parameters first, then the path item's).
	order []*openapi3.Parameter
	// params by name; a name in two locations (path and query, say) keeps
	// both, so a reference to it is refused as ambiguous.
	params map[string][]*openapi3.Parameter
}

// loadOpenAPI loads and validates an OpenAPI document.
func loadOpenAPI(path string) (*apiDoc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// A YAML slip is reported by file and line before the loader sees it
	// (the loader's own message names neither).
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, yamlError(displayPath(path), data, err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI %s: %w", displayPath(path), err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("OpenAPI %s is invalid: %w", displayPath(path), err)
	}
	return indexOpenAPI(doc), nil
}

func indexOpenAPI(doc *openapi3.T) *apiDoc {
	api := &apiDoc{ops: map[string]*apiOperation{}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				continue
			}
			rb := op.RequestBody
			o := &apiOperation{id: op.OperationID, method: method, path: path, params: map[string][]*openapi3.Parameter{},
				jsonBody: rb != nil && rb.Value != nil && rb.Value.Content.Get("application/json") != nil}
			// Operation parameters override path-item parameters with the
			// same name and location.
			seen := map[[2]string]bool{}
			for _, list := range []openapi3.Parameters{op.Parameters, item.Parameters} {
				for _, ref := range list {
					if ref == nil || ref.Value == nil {
						continue
					}
					p := ref.Value
					key := [2]string{p.Name, p.In}
					if seen[key] {
						continue
					}
					seen[key] = true
					o.params[p.Name] = append(o.params[p.Name], p)
					o.order = append(o.order, p)
				}
			}
			api.ops[op.OperationID] = o
		}
	}
	return api
}

// paramFacts are what an OpenAPI parameter can tell an argument.
type paramFacts struct {
	typ         string
	enum        []string
	minimum     *float64
	maximum     *float64
	maxLength   *int
	description string
}

// factsOf reads a parameter's type, enum, bounds and description. The type
// is left empty when the schema does not map to one catalog type (anyOf,
// say); the catalog must then give it.
func factsOf(p *openapi3.Parameter) paramFacts {
	f := paramFacts{description: p.Description}
	s := paramSchema(p)
	if (s == nil || singleType(s.Type) == "") && p.Style == openapi3.SerializationDeepObject {
		f.typ = typeObject
	}
	if s == nil {
		return f
	}
	f.description = cmp.Or(f.description, s.Description)
	items := s // the schema enum and maxLength are read from
	switch t := singleType(s.Type); t {
	case typeString, typeInteger, typeNumber, typeBoolean, typeObject: // the catalog's names
		f.typ = t
	case "array":
		if s.Items != nil && s.Items.Value != nil && singleType(s.Items.Value.Type) == "string" {
			f.typ, items = typeStringArray, s.Items.Value
		}
	}
	switch f.typ {
	case typeString, typeStringArray:
		f.enum = stringEnum(items.Enum)
		if items.MaxLength != nil {
			n := int(*items.MaxLength)
			f.maxLength = &n
		}
	case typeInteger, typeNumber:
		f.minimum, f.maximum = s.Min, s.Max
	}
	return f
}

// singleType returns the one non-null type of a schema, or "".
func singleType(t *openapi3.Types) string {
	if t == nil {
		return ""
	}
	names := slices.DeleteFunc(slices.Clone(t.Slice()), func(name string) bool { return name == "null" })
	if len(names) != 1 {
		return ""
	}
	return names[0]
}

// stringEnum keeps an enum only when every value is a string.
func stringEnum(values []any) []string {
	var out []string
	for _, v := range values {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// resolveArgs fills arguments from the OpenAPI parameters they name, in
// place, and reports references that cannot be resolved. Catalog values
// always win over OpenAPI facts.
func resolveArgs(probs *problems, c *Catalog, api *apiDoc) {
	for ti := range c.Tools {
		t := &c.Tools[ti]
		if t.Operation == "" && !slices.ContainsFunc(t.Args, func(a Arg) bool { return a.Param != "" }) {
			continue // the tool uses no OpenAPI fact
		}
		markAll := func() {
			for ai := range t.Args {
				t.Args[ai].unresolved = t.Args[ai].Param != ""
			}
		}
		if api == nil {
			probs.addf("tool %q references OpenAPI operations or parameters but no -openapi document was given", t.Name)
			markAll()
			continue
		}
		var op *apiOperation
		if t.Operation != "" {
			op = api.ops[t.Operation]
			if op == nil {
				probs.addf("tool %q: operation %q is not in the OpenAPI document (known: %v)", t.Name, t.Operation, sortedKeys(api.ops))
				markAll()
				continue
			}
		}
		for ai := range t.Args {
			a := &t.Args[ai]
			if a.Param == "" {
				continue
			}
			if op == nil {
				probs.addf("tool %q arg %q: param %q needs the tool to name its operation", t.Name, a.Name, a.Param)
				a.unresolved = true
				continue
			}
			ps := op.params[a.Param]
			if len(ps) != 1 {
				what := "has no parameter"
				if len(ps) > 1 {
					what = "has more than one parameter named"
				}
				probs.addf("tool %q arg %q: operation %s %s %q", t.Name, a.Name, t.Operation, what, a.Param)
				a.unresolved = true
				continue
			}
			facts := factsOf(ps[0])
			_, byHand := t.ByHand[a.Param]
			switch {
			case byHand:
			case facts.typ == "" && unionKeyword(paramSchema(ps[0])) != "":
				a.unresolved = true // the parameter's schema is refused by lintParams
			case facts.typ == "":
				probs.addf("tool %q arg %q: the schema of parameter %q of %s maps to no argument type (%s); give the parameter a plain schema, or list %s under the tool's by_hand and convert it in the handler",
					t.Name, a.Name, a.Param, t.Operation, strings.Join(argTypes, ", "), a.Param)
			case a.Type != "" && a.Type != facts.typ:
				probs.addf("tool %q arg %q: type %s contradicts the OpenAPI type of parameter %q of %s (%s); drop type (the spec gives it), or list %s under the tool's by_hand and convert it in the handler",
					t.Name, a.Name, a.Type, a.Param, t.Operation, facts.typ, a.Param)
			}
			mergeFacts(a, facts)
		}
	}
}

func mergeFacts(a *Arg, f paramFacts) {
	a.Type, a.Description = cmp.Or(a.Type, f.typ), cmp.Or(a.Description, f.description)
	// Facts about values only carry over when the types agree: a
	// comma-separated string parameter says nothing about an array argument.
	if a.Type == f.typ {
		if a.Enum == nil {
			a.Enum = f.enum
		}
		a.Minimum, a.Maximum, a.MaxLength = cmp.Or(a.Minimum, f.minimum), cmp.Or(a.Maximum, f.maximum), cmp.Or(a.MaxLength, f.maxLength)
	}
}

// lintParams refuses the parameter schemas the code generators cannot take,
// whatever the catalog uses: oapi-codegen turns a parameter whose schema
// (or whose items' schema) is an anyOf or oneOf into a reference to a type
// it never declares, so gen/rsclient would stop building far from the
// cause. Problems name the operation and the parameter and say the way out.
func (a *apiDoc) lintParams(probs *problems) {
	var order []*openapi3.Parameter
	usedBy := map[*openapi3.Parameter][]string{}
	for _, id := range sortedKeys(a.ops) {
		for _, p := range a.ops[id].order {
			if usedBy[p] == nil {
				order = append(order, p)
			}
			usedBy[p] = append(usedBy[p], id)
		}
	}
	for _, p := range order {
		s := paramSchema(p)
		if s == nil {
			continue
		}
		where := "its schema"
		if unionKeyword(s) == "" && s.Items != nil && s.Items.Value != nil {
			where, s = "its items' schema", s.Items.Value
		}
		if union := unionKeyword(s); union != "" {
			probs.addf("OpenAPI parameter %q (in %s) of %s: %s uses %s, which oapi-codegen cannot generate for a parameter "+
				"(gen/rsclient would stop building at an undefined type such as N0); give the parameter one schema "+
				"(for one value or several: type: array, items: {type: string}, style: form, explode: true, which takes %s=a as well as %s=a&%s=b) "+
				"and say the alternatives in its description",
				p.Name, p.In, strings.Join(usedBy[p], ", "), where, union, p.Name, p.Name, p.Name)
		}
	}
}

// paramSchema is a parameter's schema, or nil.
func paramSchema(p *openapi3.Parameter) *openapi3.Schema {
	if p.Schema == nil {
		return nil
	}
	return p.Schema.Value
}

// unionKeyword names the union keyword a schema uses, or "".
func unionKeyword(s *openapi3.Schema) string {
	switch {
	case len(s.AnyOf) > 0:
		return "anyOf"
	case len(s.OneOf) > 0:
		return "oneOf"
	}
	return ""
}
