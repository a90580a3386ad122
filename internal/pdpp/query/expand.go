package query

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Bounds on one expand_limit value. The published OpenAPI gives no global
// bound (expand_limit is a free object; each relation advertises its own
// max_limit in /v1/schema expand_capabilities and the RS rejects larger
// values with invalid_expand). The adapter accepts 1..MaxExpandLimit, the
// same ceiling as a records page, and leaves the per-relation ceiling to
// the RS.
const (
	MinExpandLimit = 1
	MaxExpandLimit = 100
)

// EncodeExpandLimit validates an expand_limit argument against the
// relations requested in expand and returns expand_limit[relation]=N
// parameters. An absent or null argument gives empty values and no error.
// Anything else than a non-empty object of relation -> integer in
// [MinExpandLimit, MaxExpandLimit], whose relations all appear in expand,
// is an *mcpkit.ArgError with Code CodeInvalidExpandLimit.
func EncodeExpandLimit(raw json.RawMessage, expand []string) (url.Values, error) {
	if isAbsent(raw) {
		return url.Values{}, nil
	}
	const forms = `expand_limit maps each expanded relation to a whole number of children, e.g. expand: ["messages"], expand_limit: {"messages": 5}`
	if len(raw) > MaxFilterBytes {
		return nil, expandLimitErr("expand_limit is %d bytes, over the %d-byte limit; %s", len(raw), MaxFilterBytes, forms)
	}
	if !json.Valid(raw) {
		return nil, expandLimitErr("expand_limit is not well-formed JSON; %s", forms)
	}
	switch k := jsontext.Value(raw).Kind(); k {
	case '{':
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil && json.Valid([]byte(strings.TrimSpace(s))) && jsontext.Value(s).Kind() == '{' {
			return nil, expandLimitErr("expand_limit was sent as a JSON-encoded string; send the object itself, without quotes: %s", snippet([]byte(s), 200))
		}
		return nil, expandLimitErr("expand_limit must be a JSON object, not a string like %s; %s", snippet(raw, 80), forms)
	default:
		return nil, expandLimitErr("expand_limit must be a JSON object, not %s; %s", kindName(k), forms)
	}
	members, err := objectMembers(raw)
	if err != nil {
		var dup errDuplicateKey
		if errors.As(err, &dup) {
			return nil, expandLimitErr("expand_limit names relation %s more than once; give each relation once, e.g. {%s: 5}", quoteKey(dup.key), quoteKey(dup.key))
		}
		return nil, expandLimitErr("expand_limit is not a well-formed JSON object (%v); %s", err, forms)
	}
	if len(members) == 0 {
		return nil, expandLimitErr("expand_limit is an empty object; omit it to use each relation's default, or %s", forms)
	}
	if len(members) > MaxFilterFields {
		return nil, expandLimitErr("expand_limit has %d relations, over the limit of %d", len(members), MaxFilterFields)
	}
	slices.SortFunc(members, func(a, b member) int { return cmp.Compare(a.key, b.key) })
	v := url.Values{}
	for _, m := range members {
		if strings.ContainsAny(m.key, "[]") {
			return nil, bracketKeyError(ParamExpandLimit, m.key, m.value)
		}
		if !ValidFieldName(m.key) {
			if m.key == "" {
				return nil, expandLimitErr("expand_limit has an empty relation name; %s", forms)
			}
			return nil, expandLimitErr("expand_limit relation %s is not a valid relation name: %s", quoteKey(m.key), fieldRule)
		}
		n, err := expandLimitValue(m.key, m.value)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(expand, m.key) { // at most MaxFilterFields scans of expand
			return nil, expandLimitErr("expand_limit names relation %s, which is not in expand; add it to expand (e.g. expand: [%s], expand_limit: {%s: %d}) or drop it from expand_limit",
				quoteKey(m.key), quoteKey(m.key), quoteKey(m.key), n)
		}
		v.Set("expand_limit["+m.key+"]", strconv.Itoa(n))
	}
	return v, nil
}

func expandLimitValue(rel string, raw json.RawMessage) (int, error) {
	example := fmt.Sprintf("{%s: 5}", quoteKey(rel))
	switch k := jsontext.Value(raw).Kind(); k {
	case '0':
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if _, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
				return 0, expandLimitErr("expand_limit for %s is a string; pass the number without quotes, e.g. {%s: %s}", quoteKey(rel), quoteKey(rel), strings.TrimSpace(s))
			}
		}
		return 0, expandLimitErr("expand_limit for %s must be a whole number, not a string; e.g. %s", quoteKey(rel), example)
	default:
		return 0, expandLimitErr("expand_limit for %s must be a whole number, not %s; e.g. %s", quoteKey(rel), kindName(k), example)
	}
	text := string(raw)
	if strings.ContainsAny(text, ".eE") {
		return 0, expandLimitErr("expand_limit for %s is %s, not a whole number; e.g. %s", quoteKey(rel), snippet(raw, 32), example)
	}
	if strings.HasPrefix(text, "-") || text == "0" {
		return 0, expandLimitErr("expand_limit for %s is %s; it must be at least %d (omit the relation from expand_limit to use its default), e.g. %s", quoteKey(rel), snippet(raw, 32), MinExpandLimit, example)
	}
	n, err := strconv.Atoi(text)
	if err != nil || n > MaxExpandLimit {
		return 0, expandLimitErr("expand_limit for %s is %s, over the maximum of %d; e.g. %s", quoteKey(rel), snippet(raw, 32), MaxExpandLimit, example)
	}
	return n, nil
}

// exampleLimit renders a limit for an example: the given value when it is
// a plain positive integer in range, otherwise 5.
func exampleLimit(raw json.RawMessage) string {
	if jsontext.Value(raw).Kind() == '0' {
		if n, err := strconv.Atoi(string(raw)); err == nil && n >= MinExpandLimit && n <= MaxExpandLimit {
			return strconv.Itoa(n)
		}
	}
	return "5"
}
