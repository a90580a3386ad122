package query

import (
	"fmt"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

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

// A rejected query argument is an *mcpkit.ArgError, the argument error
// every tool argument check reports: Code is one of the Code* constants,
// Field names the tool argument (one of the Param* constants), and Message
// says what was wrong and shows a correct example, so it can be handed to
// the model unchanged. Tool is left empty; the adapter knows it.

func filterErr(format string, args ...any) error {
	return &mcpkit.ArgError{Code: CodeInvalidFilter, Field: ParamFilter, Message: fmt.Sprintf(format, args...)}
}

func expandLimitErr(format string, args ...any) error {
	return &mcpkit.ArgError{Code: CodeInvalidExpandLimit, Field: ParamExpandLimit, Message: fmt.Sprintf(format, args...)}
}

func fieldsErr(format string, args ...any) error {
	return &mcpkit.ArgError{Code: CodeInvalidFields, Field: ParamFields, Message: fmt.Sprintf(format, args...)}
}
