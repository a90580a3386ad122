package mcpkit

import (
	"errors"
	"fmt"
)

// Argument error codes. Generated Validate methods and DecodeArgs use only
// these values, so clients can branch on them.
const (
	CodeUnknownArgument = "unknown_argument"
	CodeInvalidType     = "invalid_type"
	CodeMissingArgument = "missing_argument"
	CodeOutOfRange      = "out_of_range"
	CodeInvalidEnum     = "invalid_enum"
	CodeTooLong         = "too_long"
	CodeTooManyItems    = "too_many_items"
	CodeInvalidJSON     = "invalid_json"
)

// ErrorType is the error type that argument errors carry in the rendered
// result, telling them apart from errors relayed from an upstream service.
const ErrorType = "adapter_error"

// ArgError reports one tool argument that was refused before the tool ran
// or, from the packages that parse ids, cursors and query objects, before
// anything was sent upstream. Those packages name their own codes and leave
// Tool empty.
type ArgError struct {
	Tool    string // tool name, e.g. "search"
	Field   string // wire name of the argument; empty when the whole object is at fault
	Code    string // one of the Code* constants, or a code of the package that refused the argument
	Message string // one sentence naming the argument and what is allowed
}

// Error implements error.
func (e *ArgError) Error() string {
	if e.Tool == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Tool, e.Code, e.Message)
}

// Errorf builds an ArgError whose message is formatted like fmt.Sprintf.
func Errorf(tool, field, code, format string, args ...any) *ArgError {
	return &ArgError{Tool: tool, Field: field, Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsArgError returns err as an *ArgError for tool. An error that is not an
// ArgError becomes one with code invalid_type and the error text as message,
// so a hand-written validation step can still be rendered uniformly. A nil
// err gives nil.
func AsArgError(tool string, err error) *ArgError {
	if err == nil {
		return nil
	}
	if ae, ok := errors.AsType[*ArgError](err); ok {
		if ae.Tool == "" {
			cp := *ae
			cp.Tool = tool
			return &cp
		}
		return ae
	}
	return &ArgError{Tool: tool, Code: CodeInvalidType, Message: err.Error()}
}
