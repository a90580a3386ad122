package mcpkit

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
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

// CheckObject reports invalid_type unless raw holds a JSON object. Callers
// skip the check for an absent optional value.
func CheckObject(tool, field string, raw []byte) *ArgError {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return nil
	}
	return Errorf(tool, field, CodeInvalidType, "%s must be a JSON object; got %s", field, jsonKind(trimmed))
}

// jsonKind names the JSON type of an encoded value by its first byte.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	default:
		return "invalid JSON"
	}
}
