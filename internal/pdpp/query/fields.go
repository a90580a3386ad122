package query

import (
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// MaxFieldNameBytes bounds a field or relation name; it is the max_bytes
// of the catalog format "field".
const MaxFieldNameBytes = 128

// fieldRule is the human description of ValidFieldName, used in messages.
const fieldRule = `names start with a letter or "_" and contain only letters, digits, "_", "." and "-", at most 128 bytes (e.g. "created_at" or "author.name")`

// ValidFieldName reports whether name is an acceptable field or relation
// name: the catalog format "field" (mcptools.FormatField), non-empty, at
// most MaxFieldNameBytes bytes, and matching ^[A-Za-z_][A-Za-z0-9_.-]*$
// (so no brackets, spaces, commas or control characters can reach the
// query string). Field paths in handles use the same format.
func ValidFieldName(name string) bool {
	return mcptools.FormatField.Valid(name)
}

// JoinFields validates a field projection and joins it with commas for the
// RS `fields` parameter. Duplicates are dropped, keeping the first
// occurrence; an empty list gives "".
func JoinFields(fields []string) (string, error) {
	if len(fields) == 0 {
		return "", nil
	}
	seen := make(map[string]bool, len(fields))
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		if strings.Contains(f, ",") {
			return "", fieldsErr("field %s contains a comma; pass each field as its own array item, e.g. [%s]",
				quoteKey(f), quotedList(strings.Split(f, ",")))
		}
		if !ValidFieldName(f) {
			if f == "" {
				return "", fieldsErr(`fields contains an empty name; list field names such as ["id", "title"]`)
			}
			return "", fieldsErr("field %s is not a valid field name: %s", quoteKey(f), fieldRule)
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return strings.Join(out, ","), nil
}

// quotedList renders names as a JSON-like list body for examples.
func quotedList(names []string) string {
	var quoted []string
	for _, s := range names {
		if s = strings.TrimSpace(s); s != "" {
			quoted = append(quoted, quoteKey(s))
		}
	}
	return strings.Join(quoted, ", ")
}

// Error codes returned in the Code of a rejected argument's *mcpkit.ArgError.
const (
	CodeInvalidFilter      = "invalid_filter"
	CodeInvalidExpandLimit = "invalid_expand_limit"
	CodeInvalidFields      = "invalid_fields"
)

// Argument names returned in the Field of a rejected argument's
// *mcpkit.ArgError.
const (
	ParamFilter      = "filter"
	ParamExpandLimit = "expand_limit"
	ParamFields      = "fields"
)

func filterErr(format string, args ...any) error {
	return &mcpkit.ArgError{Code: CodeInvalidFilter, Field: ParamFilter, Message: fmt.Sprintf(format, args...)}
}

func expandLimitErr(format string, args ...any) error {
	return &mcpkit.ArgError{Code: CodeInvalidExpandLimit, Field: ParamExpandLimit, Message: fmt.Sprintf(format, args...)}
}

func fieldsErr(format string, args ...any) error {
	return &mcpkit.ArgError{Code: CodeInvalidFields, Field: ParamFields, Message: fmt.Sprintf(format, args...)}
}
