package query

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Bounds on a filter argument. They keep the encoded query string small;
// the RS applies its own rules on top.
const (
	MaxFilterBytes      = 16 << 10 // raw JSON of the whole filter
	MaxFilterFields     = 32       // fields in one filter object
	MaxFilterValueBytes = 1024     // one encoded value
)

// rangeOperators is the operator set the RS accepts in
// filter[field][op]=value. The upstream API reference documents exactly
// these four; the published OpenAPI leaves the set open (range_filter
// capabilities list "operators" as free strings).
var rangeOperators = []string{"gt", "gte", "lt", "lte"}

// RangeOperators returns the accepted range operators, sorted.
func RangeOperators() []string { return slices.Clone(rangeOperators) }

func isRangeOperator(op string) bool { return slices.Contains(rangeOperators, op) }

const filterForms = `use {"field": value} for an exact match or {"field": {"gte": value, "lt": value}} for a range (operators: gte, gt, lte, lt), e.g. {"language": "en", "created_at": {"gte": "2026-01-01T00:00:00Z"}}`

// Condition is one validated filter condition. Op is empty for an exact
// match and one of RangeOperators otherwise; Value is the text sent to the
// RS (a JSON number keeps its literal text).
type Condition struct {
	Field string
	Op    string
	Value string
}

// Key returns the query parameter name: filter[field] or filter[field][op].
func (c Condition) Key() string {
	if c.Op == "" {
		return "filter[" + c.Field + "]"
	}
	return "filter[" + c.Field + "][" + c.Op + "]"
}

// ParseFilter validates a filter argument and returns its conditions,
// sorted by field and then operator (exact match first). An absent or null
// filter gives no conditions and no error. Any other shape than a
// non-empty object of field -> scalar or field -> {operator: scalar} is an
// *mcpkit.ArgError with Code CodeInvalidFilter.
func ParseFilter(raw json.RawMessage) ([]Condition, error) {
	if isAbsent(raw) {
		return nil, nil
	}
	if len(raw) > MaxFilterBytes {
		return nil, filterErr("filter is %d bytes, over the %d-byte limit; filter on fewer fields, e.g. {\"language\": \"en\"}", len(raw), MaxFilterBytes)
	}
	if !json.Valid(raw) {
		return nil, filterErr("filter is not well-formed JSON; %s", filterForms)
	}
	switch k := jsontext.Value(raw).Kind(); k {
	case '{':
	case '"':
		return nil, stringFilterError(raw)
	default:
		return nil, filterErr("filter must be a JSON object mapping field names to values, not %s; %s", kindName(k), filterForms)
	}
	members, err := objectMembers(raw)
	if err != nil {
		var dup errDuplicateKey
		if errors.As(err, &dup) {
			return nil, filterErr("filter names field %s more than once; give each field once and put all its range operators in one object, e.g. {%s: {\"gte\": 1, \"lt\": 10}}", quoteKey(dup.key), quoteKey(dup.key))
		}
		return nil, filterErr("filter is not a well-formed JSON object (%v); %s", err, filterForms)
	}
	if len(members) == 0 {
		return nil, filterErr("filter is an empty object; omit filter to read without filtering, or %s", filterForms)
	}
	if len(members) > MaxFilterFields {
		return nil, filterErr("filter has %d fields, over the limit of %d; narrow with fewer fields", len(members), MaxFilterFields)
	}
	var out []Condition
	for _, m := range members {
		conds, err := parseFilterMember(m)
		if err != nil {
			return nil, err
		}
		out = append(out, conds...)
	}
	slices.SortFunc(out, func(a, b Condition) int { return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Op, b.Op)) })
	return out, nil
}

// EncodeFilter validates a filter argument (see ParseFilter) and returns
// its query parameters: filter[field]=value and filter[field][op]=value.
// An absent or null filter gives empty values and no error. The result's
// Encode method sorts keys, so the query string is deterministic.
func EncodeFilter(raw json.RawMessage) (url.Values, error) {
	conds, err := ParseFilter(raw)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	for _, c := range conds {
		v.Set(c.Key(), c.Value)
	}
	return v, nil
}

func parseFilterMember(m member) ([]Condition, error) {
	if strings.ContainsAny(m.key, "[]") {
		return nil, bracketKeyError(ParamFilter, m.key, m.value)
	}
	if !ValidFieldName(m.key) {
		if m.key == "" {
			return nil, filterErr("filter has an empty field name; %s", filterForms)
		}
		return nil, filterErr("filter field %s is not a valid field name: %s", quoteKey(m.key), fieldRule)
	}
	field := m.key
	switch k := jsontext.Value(m.value).Kind(); k {
	case '{':
		return parseOperators(field, m.value)
	case 'n':
		return nil, filterErr("filter value for %s is null; filters cannot match null, so remove the field or give a value, e.g. {%s: \"en\"}", quoteKey(field), quoteKey(field))
	case '[':
		return nil, filterErr("filter value for %s is an array; a filter takes one value per field (there is no list match), e.g. {%s: \"en\"}, with one call per value", quoteKey(field), quoteKey(field))
	default:
		val, err := filterValue(field, "", m.value)
		if err != nil {
			return nil, err
		}
		return []Condition{{Field: field, Value: val}}, nil
	}
}

func parseOperators(field string, raw json.RawMessage) ([]Condition, error) {
	ops, err := objectMembers(raw)
	if err != nil {
		var dup errDuplicateKey
		if errors.As(err, &dup) {
			return nil, filterErr("filter for %s repeats operator %s; give each operator once, e.g. {%s: {\"gte\": 1, \"lt\": 10}}", quoteKey(field), quoteKey(dup.key), quoteKey(field))
		}
		return nil, filterErr("filter for %s is not a well-formed operator object (%v); e.g. {%s: {\"gte\": 1}}", quoteKey(field), err, quoteKey(field))
	}
	if len(ops) == 0 {
		return nil, filterErr("filter for %s is an empty operator object; give at least one of gte, gt, lte, lt, e.g. {%s: {\"gte\": \"2026-01-01T00:00:00Z\"}}, or a plain value for an exact match: {%s: \"en\"}", quoteKey(field), quoteKey(field), quoteKey(field))
	}
	out := make([]Condition, 0, len(ops))
	for _, op := range ops {
		if !isRangeOperator(op.key) {
			return nil, filterErr("filter operator %s for %s is not supported; use one of gte, gt, lte, lt, e.g. {%s: {\"gte\": %s}}, or a plain value for an exact match: {%s: %s}",
				quoteKey(op.key), quoteKey(field), quoteKey(field), exampleValue(op.value), quoteKey(field), exampleValue(op.value))
		}
		val, err := filterValue(field, op.key, op.value)
		if err != nil {
			return nil, err
		}
		out = append(out, Condition{Field: field, Op: op.key, Value: val})
	}
	return out, nil
}

// filterValue checks one scalar value; op is empty for an exact match.
func filterValue(field, op string, raw json.RawMessage) (string, error) {
	where := quoteKey(field)
	example := fmt.Sprintf("{%s: \"en\"}", quoteKey(field))
	if op != "" {
		where = fmt.Sprintf("%s operator %q", quoteKey(field), op)
		example = fmt.Sprintf("{%s: {%q: \"2026-01-01T00:00:00Z\"}}", quoteKey(field), op)
	}
	text, kind, ok := scalarText(raw)
	if !ok {
		if kind == '{' && op != "" {
			return "", filterErr("filter value for %s is an object; operators take a plain string, number or boolean (no deeper nesting), e.g. %s", where, example)
		}
		return "", filterErr("filter value for %s must be a string, number or boolean, not %s; e.g. %s", where, kindName(kind), example)
	}
	if text == "" {
		return "", filterErr("filter value for %s is an empty string, which the RS cannot tell apart from a missing value; give a non-empty value, e.g. %s", where, example)
	}
	if len(text) > MaxFilterValueBytes {
		return "", filterErr("filter value for %s is %d bytes, over the %d-byte limit", where, len(text), MaxFilterValueBytes)
	}
	return text, nil
}

// exampleValue renders a value for an example, falling back to a
// placeholder when it is not a short scalar.
func exampleValue(raw json.RawMessage) string {
	switch jsontext.Value(raw).Kind() {
	case '"', '0', 't', 'f':
		if s := snippet(raw, 48); !strings.HasSuffix(s, "…") {
			return s
		}
	}
	return `"2026-01-01T00:00:00Z"`
}

// bracketKey is a query-string style key: a name (maybe empty), then
// non-empty [parts].
var bracketKey = regexp.MustCompile(`^([^\[]*)((?:\[[^\[\]]+\])*)$`)

// bracketParts splits a query-string style key such as filter[a][gte],
// a[gte] or expand_limit[rel] into its bracketed parts (a, gte). The
// leading prefix ("filter" or "expand_limit") is dropped. It returns nil
// when the key does not have that shape.
func bracketParts(key, prefix string) []string {
	if strings.HasPrefix(key, prefix+"[") {
		key = key[len(prefix):]
	}
	m := bracketKey.FindStringSubmatch(key)
	if m == nil {
		return nil
	}
	var parts []string
	if m[1] != "" {
		parts = append(parts, m[1])
	}
	if m[2] != "" {
		parts = append(parts, strings.Split(m[2][1:len(m[2])-1], "][")...)
	}
	return parts
}

// bracketKeyError explains that keys are bare names, with the object that
// the bracket key was probably meant as.
func bracketKeyError(param, key string, raw json.RawMessage) error {
	val := exampleValue(raw)
	prefix := param
	var suggestion string
	parts := bracketParts(key, prefix)
	switch {
	case param == ParamFilter && len(parts) == 1 && ValidFieldName(parts[0]):
		suggestion = fmt.Sprintf("{%s: %s}", quoteKey(parts[0]), val)
	case param == ParamFilter && len(parts) == 2 && ValidFieldName(parts[0]) && isRangeOperator(parts[1]):
		suggestion = fmt.Sprintf("{%s: {%q: %s}}", quoteKey(parts[0]), parts[1], val)
	case param == ParamExpandLimit && len(parts) == 1 && ValidFieldName(parts[0]):
		suggestion = fmt.Sprintf("{%s: %s}", quoteKey(parts[0]), exampleLimit(raw))
	}
	if param == ParamFilter {
		if suggestion == "" {
			return filterErr("filter key %s uses query-string brackets; keys are bare field names and operators go in a nested object: %s", quoteKey(key), filterForms)
		}
		return filterErr("filter key %s uses query-string brackets; keys are bare field names and operators go in a nested object: pass %s", quoteKey(key), suggestion)
	}
	if suggestion == "" {
		suggestion = `{"messages": 5}`
	}
	return expandLimitErr("expand_limit key %s uses query-string brackets; keys are bare relation names: pass %s", quoteKey(key), suggestion)
}

// stringFilterError explains that filter is an object, turning the string
// into the object it was probably meant as when that is possible.
func stringFilterError(raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return filterErr("filter must be a JSON object, not a string; %s", filterForms)
	}
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, "{") {
		if json.Valid([]byte(trimmed)) {
			return filterErr("filter was sent as a JSON-encoded string; send the object itself, without quotes: %s", snippet([]byte(trimmed), 200))
		}
		return filterErr("filter was sent as a string that is not valid JSON; send a JSON object (not a string): %s", filterForms)
	}
	if suggestion := suggestFromQueryString(trimmed); suggestion != "" {
		return filterErr("filter must be a JSON object, not a string; pass %s instead of %s (%s)", suggestion, snippet(raw, 80), filterForms)
	}
	return filterErr("filter must be a JSON object, not a string like %s; %s", snippet(raw, 80), filterForms)
}

// suggestFromQueryString turns "language=en" or
// "filter[created_at][gte]=2026-01-01" into the equivalent filter object,
// or returns "" when the text does not read that way.
func suggestFromQueryString(s string) string {
	if !strings.Contains(s, "=") {
		return ""
	}
	vals, err := url.ParseQuery(s)
	if err != nil || len(vals) == 0 {
		return ""
	}
	obj := map[string]any{} // field: its value, or its map of operators
	for key, vs := range vals {
		parts := bracketParts(strings.TrimSpace(key), ParamFilter)
		if len(parts) == 0 || !ValidFieldName(parts[0]) || len(vs) == 0 {
			return ""
		}
		ops, isRange := obj[parts[0]].(map[string]string)
		switch {
		case len(parts) == 1 && !isRange:
			obj[parts[0]] = vs[0]
		case len(parts) == 2 && isRangeOperator(parts[1]) && (isRange || obj[parts[0]] == nil):
			if ops == nil {
				ops = map[string]string{}
				obj[parts[0]] = ops
			}
			ops[parts[1]] = vs[0]
		default:
			return "" // not a filter, or a field both matched and ranged
		}
	}
	b, err := json.Marshal(obj) // map keys are sorted
	if err != nil || len(b) > 300 {
		return ""
	}
	return string(b)
}
