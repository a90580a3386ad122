package handles

import "fmt"

// Error codes returned in Error.Code.
const (
	CodeInvalidID               = "invalid_id"
	CodeInvalidConnectionID     = "invalid_connection_id"
	CodeConflictingConnectionID = "conflicting_connection_id"
	CodeInvalidCursor           = "invalid_cursor"
	CodeInvalidURI              = "invalid_uri"
	CodeInvalidArgument         = "invalid_argument"
)

// Argument names returned in Error.Param.
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

// Error is a rejected handle. Code is one of the Code* constants, Param
// names the argument that carried it, and Message says what was wrong and
// shows an accepted form, so it can be handed to the model unchanged.
type Error struct {
	Code    string
	Param   string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%s): %s", e.Code, e.Param, e.Message)
}

// idForms is appended to every invalid_id message.
const idForms = `use "{connection_id}/{stream}:{record_id}" (e.g. "cin_3325c9636dab3a5344743485/transcripts:tr-5"), "{stream}:{record_id}" (e.g. "transcripts:tr-5") or a pdpp://record/... URI exactly as it was returned`

func idErr(format string, args ...any) error {
	return &Error{Code: CodeInvalidID, Param: ParamID, Message: fmt.Sprintf(format, args...) + "; " + idForms}
}

func cursorErr(param, format string, args ...any) error {
	return &Error{Code: CodeInvalidCursor, Param: param, Message: fmt.Sprintf(format, args...) +
		"; pass the cursor exactly as a previous read_record_field result returned it, or read the field again with explicit offsets"}
}

func uriErr(format string, args ...any) error {
	return &Error{Code: CodeInvalidURI, Param: ParamURI, Message: fmt.Sprintf(format, args...)}
}

// quote renders untrusted text for a message, shortened when long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
