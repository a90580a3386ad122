package papers

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
)

// Error codes of tool results and resource read errors.
const (
	CodeNotFound                = "not_found"
	CodeTemplateNotAvailable    = "template_not_available"
	CodeSourceNotAvailable      = "source_not_available"
	CodeTranslationNotAvailable = "translation_not_available"
	CodeAssetFetchFailed        = "asset_fetch_failed"
	CodeAssetParseFailed        = "asset_parse_failed"
	CodeValidation              = "validation_error"
	CodeInternal                = "internal_error"
)

// toolError is a failure reported to the model as a structured result.
type toolError struct {
	Code      string
	Message   string
	Next      string // what to do instead; appended to the text
	PaperID   string
	Template  string
	Available []string // available_summary_templates; nil leaves it out
	Lang      string
	Fields    map[string]any // further structured fields
}

func (e *toolError) Error() string { return e.Code + ": " + e.Message }

// structured is the structuredContent of the error:
// {"error": code, "message": ..., "paper_id": ..., "template": ...,
// "available_summary_templates": [...], ...}.
func (e *toolError) structured() map[string]any {
	m := map[string]any{"error": e.Code, "message": e.Message}
	for k, v := range map[string]string{"paper_id": e.PaperID, "template": e.Template, "lang": e.Lang} {
		if v != "" {
			m[k] = v
		}
	}
	if e.Available != nil {
		m["available_summary_templates"] = e.Available
	}
	maps.Copy(m, e.Fields)
	return m
}

// result renders the error as an isError tool result whose text repeats
// the code, the message and the next step.
func (e *toolError) result() *mcp.CallToolResult {
	text := e.Code + ": " + e.Message
	if e.Next != "" {
		text += " " + e.Next
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: e.structured(),
		IsError:           true,
	}
}

// ArgErrorResult renders a refused argument in the same shape as every
// other error: {"error": "validation_error", "reason": <mcpkit code>,
// "param": ..., "message": ...}.
func ArgErrorResult(ae *mcpkit.ArgError) *mcp.CallToolResult {
	te := &toolError{Code: CodeValidation, Message: ae.Message, Fields: map[string]any{"reason": ae.Code}}
	if ae.Field != "" {
		te.Fields["param"] = ae.Field
		te.Next = fmt.Sprintf("Fix argument %s and call %s again.", ae.Field, ae.Tool)
	} else {
		te.Next = fmt.Sprintf("Fix the arguments and call %s again.", ae.Tool)
	}
	return te.result()
}

// validation builds the argument error of a handler-level check.
func validation(tool, field, code, format string, args ...any) *mcp.CallToolResult {
	return ArgErrorResult(mcpkit.Errorf(tool, field, code, format, args...))
}

// fetchFailed describes an asset error without naming where the asset
// lives.
func fetchFailed(err error, what, paperID string) *toolError {
	te := &toolError{Code: CodeAssetFetchFailed, PaperID: paperID, Fields: map[string]any{}}
	if fe, ok := errors.AsType[*assets.FetchError](err); ok {
		te.Fields["reason"] = fe.Reason
		te.Message = fmt.Sprintf("the %s of paper %s could not be loaded: %s", what, paperID, strings.ReplaceAll(fe.Reason, "_", " "))
		if fe.Status != 0 {
			te.Fields["http_status"] = fe.Status
			te.Message += fmt.Sprintf(" (HTTP %d)", fe.Status)
		}
	} else {
		te.Fields["reason"] = "unreadable"
		te.Message = fmt.Sprintf("the %s of paper %s could not be loaded", what, paperID)
	}
	return te
}
