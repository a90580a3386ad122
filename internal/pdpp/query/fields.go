package query

import (
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
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
	var b strings.Builder
	n := 0
	for _, s := range names {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteKey(s))
		n++
	}
	return b.String()
}
