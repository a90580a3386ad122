package demors

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

// val is *p, or the zero value when p is nil.
func val[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// pageLimit applies a default and a maximum to a limit: below 1 is an error, above the
// maximum is clamped with a limit_clamped warning.
func pageLimit(typed *int, def, max int, unit string) (int, []object, error) {
	if typed == nil {
		return def, nil, nil
	}
	n := *typed
	if n < 1 {
		return 0, nil, errInvalid("limit", "limit must be a positive integer")
	}
	if n > max {
		return max, []object{limitClampedWarning("limit", n, max,
			"Requested limit=%d exceeds the maximum page size of %d; returned %[2]d "+unit+" per page. Page forward with the returned cursor.")}, nil
	}
	return n, nil, nil
}

// rejectBareDeepObject refuses a deepObject parameter given without brackets
// (filter=x, expand_limit=3), which the generated binder would otherwise drop silently.
func rejectBareDeepObject(rc *reqCtx, name, example string) error {
	if rc.query.Has(name) || rc.query.Has(name+"[]") {
		return errInvalid(name, "%s must be sent as %s", name, example)
	}
	return nil
}

// listNames splits comma-separated lists into their trimmed names, in order, without empty
// names or repeats.
func listNames(lists ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, list := range lists {
		for name := range strings.SplitSeq(list, ",") {
			if name = strings.TrimSpace(name); name != "" && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// parseFields validates a fields= projection (empty: every granted field) against the
// stream and grant.
func parseFields(raw *string, st *store.Stream, g *grant, conn string) ([]string, error) {
	if raw == nil || strings.TrimSpace(*raw) == "" {
		return g.grantedFields(st, conn), nil
	}
	out := listNames(*raw)
	for _, name := range out {
		if _, ok := st.Field(name); !ok {
			return nil, errInvalid("fields", "Unknown field '%s' on stream '%s'", name, st.Name)
		}
		if !g.fieldGranted(conn, st.Name, name) {
			return nil, errInvalid("fields", "Field '%s' of stream '%s' is not granted", name, st.Name)
		}
	}
	if len(out) == 0 {
		return nil, errInvalid("fields", "fields must name at least one field")
	}
	return out, nil
}

// normalizeTime parses an RFC 3339 timestamp or a YYYY-MM-DD date into the stored layout.
func normalizeTime(v string) (string, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(store.TimeLayout), true
		}
	}
	return "", false
}

// typedValue converts a filter value to the field's declared type.
func typedValue(f store.Field, v string) (any, error) {
	switch f.JSONType {
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, errInvalid("filter", "filter[%s] must be an integer, got '%s'", f.Name, v)
		}
		return n, nil
	case "number":
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, errInvalid("filter", "filter[%s] must be a number, got '%s'", f.Name, v)
		}
		return x, nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errInvalid("filter", "filter[%s] must be true or false, got '%s'", f.Name, v)
		}
		return b, nil
	}
	if f.Format == "date-time" {
		t, ok := normalizeTime(v)
		if !ok {
			return nil, errInvalid("filter", "filter[%s] must be an RFC 3339 timestamp or a YYYY-MM-DD date, got '%s'", f.Name, v)
		}
		return t, nil
	}
	return v, nil
}

// rawFilters reads filter[field]=v (under op "") and filter[field][op]=v from the raw
// query, by field and op: the generated binder converts numeric-looking values, so the
// exact strings are read here.
func rawFilters(rc *reqCtx) (map[string]map[string]string, error) {
	if err := rejectBareDeepObject(rc, "filter", "filter[field]=value or filter[field][gte]=value"); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for key, vals := range rc.query {
		rest, ok := strings.CutPrefix(key, "filter[")
		if !ok {
			continue
		}
		field, rest, ok := strings.Cut(rest, "]")
		if !ok || field == "" {
			return nil, errInvalid("filter", "malformed filter parameter %q", key)
		}
		if len(vals) != 1 {
			return nil, errInvalid("filter", "%s was given %d times; give it once", key, len(vals))
		}
		op := ""
		if rest != "" {
			var tail string
			op, tail, ok = strings.Cut(strings.TrimPrefix(rest, "["), "]")
			if !strings.HasPrefix(rest, "[") || !ok || op == "" || tail != "" {
				return nil, errInvalid("filter", "malformed filter parameter %q (use filter[field][op]=value)", key)
			}
		}
		if out[field] == nil {
			out[field] = map[string]string{}
		}
		if _, exact := out[field][""]; exact || (op == "" && len(out[field]) > 0) {
			return nil, errInvalid("filter", "filter[%s] mixes an exact value with operators", field)
		}
		out[field][op] = vals[0]
	}
	return out, nil
}

// parseFilters validates the filters against the stream and grant: exact filters on
// scalar fields, range operators only where declared.
func parseFilters(rc *reqCtx, st *store.Stream, g *grant, conns []string) ([]store.Filter, error) {
	bound, err := rawFilters(rc)
	if err != nil {
		return nil, err
	}
	var out []store.Filter
	for name, ops := range bound {
		f, ok := st.Field(name)
		if !ok {
			return nil, errInvalid("filter", "Unknown field: %s", name)
		}
		if !g.grantsField(conns, st.Name, name) {
			return nil, errInvalid("filter", "Field '%s' of stream '%s' is not granted", name, st.Name)
		}
		for op, leaf := range ops {
			switch op = cmp.Or(op, "eq"); op {
			case "eq":
				if !f.Scalar() {
					return nil, errInvalid("filter", "Exact filters are not supported on '%s'", name)
				}
			case "gte", "gt", "lte", "lt":
				if !slices.Contains(f.RangeOps, op) {
					return nil, errInvalid("filter", "Range filters are not supported on '%s'", name)
				}
			default:
				return nil, errInvalid("filter", "Unknown filter operator '%s' on '%s' (use gte, gt, lte or lt)", op, name)
			}
			val, err := typedValue(f, leaf)
			if err != nil {
				return nil, err
			}
			out = append(out, store.Filter{Field: name, Op: op, Value: val})
		}
	}
	slices.SortFunc(out, func(a, b store.Filter) int { return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Op, b.Op)) })
	return out, nil
}

// encodeToken and decodeToken carry cursor state as base64 JSON.
func encodeToken(enc *base64.Encoding, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demors: cursor not encodable: %v", err))
	}
	return enc.EncodeToString(b)
}

func decodeToken(s string, v any) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if dec.Decode(v) == nil {
			return true
		}
	}
	return false
}
