package handles

import (
	"fmt"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// Error codes returned in the Code of a rejected handle's *mcpkit.ArgError.
const (
	CodeInvalidID               = "invalid_id"
	CodeInvalidConnectionID     = "invalid_connection_id"
	CodeConflictingConnectionID = "conflicting_connection_id"
	CodeInvalidCursor           = "invalid_cursor"
	CodeInvalidURI              = "invalid_uri"
	CodeInvalidArgument         = "invalid_argument"
)

// Argument names returned in the Field of a rejected handle's
// *mcpkit.ArgError.
const (
	ParamID           = "id"
	ParamConnectionID = "connection_id"
	ParamCursor       = "cursor"
	ParamURI          = "uri"
	ParamFieldPath    = "field_path"
	ParamOffsetChars  = "offset_chars"
	ParamLimitChars   = "limit_chars"
	ParamQ            = "q"
	ParamBeforeChars  = "before_chars"
	ParamAfterChars   = "after_chars"
)

// A rejected handle is an *mcpkit.ArgError, the argument error every tool
// argument check reports: Code is one of the Code* constants, Field names
// the argument that carried the handle (one of the Param* constants), and
// Message says what was wrong and shows an accepted form, so it can be
// handed to the model unchanged. Tool is left empty; the adapter knows it.

// argErr builds the *mcpkit.ArgError of a rejected handle.
func argErr(code, param, msg string) *mcpkit.ArgError {
	return &mcpkit.ArgError{Code: code, Field: param, Message: msg}
}

// withParam makes param the argument named by err, a rejected handle this
// package built, and returns err: a cursor or field-window URI met inside
// another argument is reported against that argument.
func withParam(err error, param string) error {
	if e, ok := err.(*mcpkit.ArgError); ok {
		e.Field = param
	}
	return err
}

// idForms is appended to every invalid_id message.
const idForms = `use "{connection_id}/{stream}:{record_id}" (e.g. "cin_3325c9636dab3a5344743485/transcripts:tr-5"), "{stream}:{record_id}" (e.g. "transcripts:tr-5") or a pdpp://record/... URI exactly as it was returned`

func idErr(format string, args ...any) error {
	return argErr(CodeInvalidID, ParamID, fmt.Sprintf(format, args...)+"; "+idForms)
}

func cursorErr(param, format string, args ...any) error {
	return argErr(CodeInvalidCursor, param, fmt.Sprintf(format, args...)+
		"; pass the cursor exactly as a previous read_record_field result returned it, or read the field again with explicit offsets")
}

func uriErr(format string, args ...any) error {
	return argErr(CodeInvalidURI, ParamURI, fmt.Sprintf(format, args...))
}

// quote renders untrusted text for a message, shortened when long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
