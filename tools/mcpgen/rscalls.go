package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// rsOp is one RS operation as generated code calls it through the typed
// client oapi-codegen writes, with oapi-codegen's own Go names (its codegen
// package names them), so the mapping and the client agree by construction.
type rsOp struct {
	ID, GoName, Method, Path string
	PathParams               []rsPathParam // in the order of the path
	HasParams                bool          // the client takes a <GoName>Params struct
	JSONBody                 bool          // the client takes a <GoName>JSONRequestBody
}

// rsPathParam is one path parameter: its name, the Go field of the call
// struct and of the client's argument, and the Go type it is passed as.
type rsPathParam struct{ Name, Field, GoType string }

// toolCall is the generated mapping of one tool's arguments to one of its
// operations: the statements that set the call struct, and the parameters
// mapped and left to the handler, for the doc comment.
type toolCall struct {
	ArgsType, Tool string
	Op             *rsOp
	Stmts          []string
	Mapped         []string // "arg -> param"
	ByHand         []string // "param (reason)"
}

// callHelpers are the generic setters generated code may use, by name,
// each converting an argument's Go value to the parameter's Go type (which
// oapi-codegen may name after the operation) without spelling that type.
var callHelpers = map[string]string{
	"setString":  "func setString[T ~string](dst *T, v string) { *dst = T(v) }",
	"optString":  "func optString[T ~string](dst **T, v string) {\n\tif v != \"\" {\n\t\tt := T(v)\n\t\t*dst = &t\n\t}\n}",
	"setNumber":  "func setNumber[T number, V int | float64](dst *T, v V) { *dst = T(v) }",
	"optNumber":  "func optNumber[T number, V int | float64](dst **T, v *V) {\n\tif v != nil {\n\t\tt := T(*v)\n\t\t*dst = &t\n\t}\n}",
	"setBool":    "func setBool[T ~bool](dst *T, v bool) { *dst = T(v) }",
	"optBool":    "func optBool[T ~bool](dst **T, v *bool) {\n\tif v != nil {\n\t\tt := T(*v)\n\t\t*dst = &t\n\t}\n}",
	"setStrings": "func setStrings[T ~[]string](dst *T, v []string) { *dst = T(v) }",
	"optStrings": "func optStrings[T ~[]string](dst **T, v []string) {\n\tif len(v) > 0 {\n\t\tt := T(v)\n\t\t*dst = &t\n\t}\n}",
}

// numberConstraint is the type set setNumber and optNumber convert to.
const numberConstraint = "type number interface {\n\t~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64\n}"

// goName is oapi-codegen's Go name of an operation id or a parameter (its
// default name normalizer): listRecords -> ListRecords, connection_id ->
// ConnectionId.
func goName(name string) string { return codegen.SchemaNameToTypeName(name) }

// planCalls checks how every tool's arguments reach its operations and
// builds the generated mapping: each argument with a param: is set by
// generated code unless its parameter is listed under by_hand; a required
// parameter no argument sets must be listed there; by_hand names only
// parameters of the tool's operations. Problems name the tool, the
// argument or parameter, and the way out.
func planCalls(probs *problems, c *Catalog, api *apiDoc) ([]*rsOp, []toolCall) {
	if api == nil {
		return nil, nil
	}
	ops := map[string]*rsOp{}
	var opOrder []*rsOp
	var calls []toolCall
	for _, t := range c.Tools {
		where := fmt.Sprintf("tool %q", t.Name)
		if t.Operation == "" {
			if len(t.AlsoOperations) > 0 || len(t.ByHand) > 0 {
				probs.addf("%s: also_operations and by_hand need an operation", where)
			}
			continue
		}
		ids := append([]string{t.Operation}, t.AlsoOperations...)
		known := true
		for _, id := range ids {
			if api.ops[id] == nil {
				known = false
				if id != t.Operation { // the operation itself is reported by resolveArgs
					probs.addf("%s: also_operations names %q, which is not in the OpenAPI document", where, id)
				}
			}
		}
		if !known {
			continue
		}
		for _, name := range sortedKeys(t.ByHand) {
			if strings.TrimSpace(t.ByHand[name]) == "" {
				probs.addf("%s by_hand %q: say why the handler sets it (the reason is written into the generated code)", where, name)
			}
			if !slices.ContainsFunc(ids, func(id string) bool { return len(api.ops[id].params[name]) > 0 }) {
				probs.addf("%s by_hand %q: no operation of the tool (%s) has that parameter", where, name, strings.Join(ids, ", "))
			}
		}
		for _, id := range ids {
			op := api.ops[id]
			ro := ops[id]
			if ro == nil {
				var err error
				if ro, err = newRSOp(op); err != nil {
					probs.addf("%s: %v", where, err)
					continue
				}
				ops[id] = ro
				opOrder = append(opOrder, ro)
			}
			calls = append(calls, planCall(probs, t, op, ro))
		}
	}
	return opOrder, calls
}

// newRSOp describes an operation's call; it refuses path parameters that
// are not plain strings or integers (generated code passes them as string
// or int).
func newRSOp(op *apiOperation) (*rsOp, error) {
	ro := &rsOp{ID: op.id, GoName: goName(op.id), Method: strings.ToUpper(op.method), Path: op.path, JSONBody: op.jsonBody}
	for _, p := range op.order {
		if p.In != openapi3.ParameterInPath {
			ro.HasParams = true
		}
	}
	for _, name := range codegen.OrderedParamsFromUri(op.path) {
		var p *openapi3.Parameter
		for _, q := range op.params[name] {
			if q.In == openapi3.ParameterInPath {
				p = q
			}
		}
		if p == nil {
			return nil, fmt.Errorf("operation %s: path %s names {%s}, which is not one of its path parameters", op.id, op.path, name)
		}
		f := factsOf(p)
		goType := map[string]string{typeString: "string", typeInteger: "int"}[f.typ]
		if goType == "" || len(f.enum) > 0 {
			return nil, fmt.Errorf("operation %s path parameter %q: only a plain string or integer path parameter can be mapped; give it type: string (an enum belongs in the catalog's argument)", op.id, name)
		}
		ro.PathParams = append(ro.PathParams, rsPathParam{Name: name, Field: goName(name), GoType: goType})
	}
	return ro, nil
}

// planCall builds one tool's mapping to one operation.
func planCall(probs *problems, t Tool, op *apiOperation, ro *rsOp) toolCall {
	where := fmt.Sprintf("tool %q", t.Name)
	call := toolCall{ArgsType: camel(t.Name) + "Args", Tool: t.Name, Op: ro}
	set := map[string]bool{} // parameters an argument sets
	for _, a := range t.Args {
		if a.Param == "" || a.unresolved {
			continue
		}
		aw := fmt.Sprintf("%s arg %q", where, a.Name)
		if _, ok := t.ByHand[a.Param]; ok {
			continue
		}
		ps := op.params[a.Param]
		if len(ps) != 1 {
			if op.id != t.Operation {
				probs.addf("%s: parameter %q is not a parameter of %s (also_operations); add it to that operation in the spec, or list %s under by_hand and set it in the handler",
					aw, a.Param, op.id, a.Param)
			}
			continue // the tool's own operation is reported by resolveArgs
		}
		p := ps[0]
		if f := factsOf(p); f.typ != a.Type {
			if op.id != t.Operation {
				probs.addf("%s: parameter %q of %s is %s, not %s as in %s", aw, a.Param, op.id, orNone(f.typ), a.Type, t.Operation)
			}
			continue // reported by resolveArgs
		}
		set[p.Name] = true
		field := goName(p.Name)
		arg := "a." + camel(a.Name)
		switch p.In {
		case openapi3.ParameterInPath:
			if !a.Required {
				probs.addf("%s: parameter %q is part of the path of %s, so the argument must be required: true", aw, p.Name, op.id)
				continue
			}
			if a.Type != typeString && a.Type != typeInteger {
				continue // newRSOp refused the parameter
			}
			call.Stmts = append(call.Stmts, fmt.Sprintf("c.%s = %s", field, arg))
		case openapi3.ParameterInQuery:
			if p.Required && !a.Required {
				probs.addf("%s: %s requires parameter %q, so the argument must be required: true", aw, op.id, p.Name)
				continue
			}
			stmt, err := queryStmt(a, p, "&c.Params."+field, arg)
			if err != nil {
				probs.addf("%s: %v", aw, err)
				continue
			}
			call.Stmts = append(call.Stmts, stmt)
		default:
			probs.addf("%s: parameter %q is in the %s; generated code maps path and query parameters only: list %s under by_hand and set it in the handler", aw, p.Name, p.In, p.Name)
			continue
		}
		call.Mapped = append(call.Mapped, a.Name+" -> "+p.Name)
	}
	for _, p := range op.order {
		reason, byHand := t.ByHand[p.Name]
		switch {
		case byHand:
			call.ByHand = append(call.ByHand, fmt.Sprintf("%s (%s)", p.Name, strings.TrimSpace(reason)))
		case (p.Required || p.In == openapi3.ParameterInPath) && !set[p.Name]:
			probs.addf("%s: %s requires parameter %q, which no argument sets; add an argument with param: %s, or list %s under by_hand with the reason and set it in the handler",
				where, op.id, p.Name, p.Name, p.Name)
		}
	}
	return call
}

// queryStmt sets one query parameter from one argument, by the argument's
// type and whether the parameter is required (a plain field) or optional (a
// pointer, left nil when the argument is absent).
func queryStmt(a Arg, p *openapi3.Parameter, dst, arg string) (string, error) {
	kind := map[string]string{typeString: "String", typeInteger: "Number", typeNumber: "Number", typeBoolean: "Bool", typeStringArray: "Strings"}[a.Type]
	if kind == "" {
		return "", fmt.Errorf("parameter %q is an object (%s); object arguments reach the RS through the handler: list %s under by_hand and encode it there",
			p.Name, orNone(p.Style), p.Name)
	}
	verb := "set"
	if !p.Required {
		verb = "opt"
		if a.Required && (kind == "Number" || kind == "Bool") {
			arg = "&" + arg // the setter takes a pointer, nil when absent
		}
	}
	return fmt.Sprintf("%s%s(%s, %s)", verb, kind, dst, arg), nil
}

func orNone(s string) string {
	if s == "" {
		return "no type"
	}
	return s
}

// helpersUsed lists the setters the statements call, in a fixed order, and
// whether the number constraint is needed.
func helpersUsed(calls []toolCall) ([]string, bool) {
	used := map[string]bool{}
	for _, c := range calls {
		for _, s := range c.Stmts {
			name, _, _ := strings.Cut(s, "(") // a setter's name, or a plain statement no helper is named
			used[name] = true
		}
	}
	var out []string
	for _, name := range sortedKeys(callHelpers) {
		if used[name] {
			out = append(out, callHelpers[name])
		}
	}
	return out, used["setNumber"] || used["optNumber"]
}
