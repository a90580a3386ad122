package mcpkit

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// CheckEnum reports invalid_enum when value is not one of allowed. Callers
// skip the check for an absent optional value.
func CheckEnum(tool, field, value string, allowed []string) *ArgError {
	if slices.Contains(allowed, value) {
		return nil
	}
	return Errorf(tool, field, CodeInvalidEnum, "%s must be one of %s; got %q", field, strings.Join(allowed, ", "), value)
}

// CheckMaxLength reports too_long when value has more than max characters
// (Unicode code points, as JSON Schema counts them).
func CheckMaxLength(tool, field, value string, max int) *ArgError {
	if n := utf8.RuneCountInString(value); n > max {
		return Errorf(tool, field, CodeTooLong, "%s must be at most %d characters; got %d", field, max, n)
	}
	return nil
}

// CheckMaxBytes reports too_long when value is longer than max bytes: the
// catalog-wide bound of an argument that declares none of its own, which
// keeps what reaches an RS URL or a log line bounded.
func CheckMaxBytes(tool, field, value string, max int) *ArgError {
	if len(value) > max {
		return Errorf(tool, field, CodeTooLong, "%s must be at most %d bytes; got %d", field, max, len(value))
	}
	return nil
}

// CheckMaxItems reports too_many_items when an array argument has more than
// max items.
func CheckMaxItems(tool, field string, n, max int) *ArgError {
	if n > max {
		return Errorf(tool, field, CodeTooManyItems, "%s takes at most %d items; got %d", field, max, n)
	}
	return nil
}

// CheckObject reports invalid_type unless raw holds a JSON object. Callers
// skip the check for an absent optional value.
func CheckObject(tool, field string, raw []byte) *ArgError {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return nil
	}
	return Errorf(tool, field, CodeInvalidType, "%s must be a JSON object; got %s", field, jsonKind(trimmed))
}

// kindNames name the JSON types by the kind of a value's first byte.
var kindNames = map[jsontext.Kind]string{
	'"': "a string", '{': "an object", '[': "an array", 't': "a boolean", 'f': "a boolean", 'n': "null", '0': "a number",
}

// jsonKind names the JSON type of an encoded value by its first byte.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	return cmp.Or(kindNames[jsontext.Value(raw).Kind()], "invalid JSON")
}
