package query

import "fmt"

// Error codes returned in Error.Code.
const (
	CodeInvalidFilter      = "invalid_filter"
	CodeInvalidExpandLimit = "invalid_expand_limit"
	CodeInvalidFields      = "invalid_fields"
)

// Argument names returned in Error.Param.
const (
	ParamFilter      = "filter"
	ParamExpandLimit = "expand_limit"
	ParamFields      = "fields"
)

// Error is a rejected query argument. Code is one of the Code* constants,
// Param names the tool argument, and Message says what was wrong and shows
// a correct example, so it can be handed to the model unchanged.
type Error struct {
	Code    string
	Param   string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%s): %s", e.Code, e.Param, e.Message)
}

func filterErr(format string, args ...any) error {
	return &Error{Code: CodeInvalidFilter, Param: ParamFilter, Message: fmt.Sprintf(format, args...)}
}

func expandLimitErr(format string, args ...any) error {
	return &Error{Code: CodeInvalidExpandLimit, Param: ParamExpandLimit, Message: fmt.Sprintf(format, args...)}
}

func fieldsErr(format string, args ...any) error {
	return &Error{Code: CodeInvalidFields, Param: ParamFields, Message: fmt.Sprintf(format, args...)}
}
