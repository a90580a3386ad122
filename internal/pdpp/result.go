package pdpp

import (
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/query"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
)

// MetaFieldWindowURI is the hidden _meta key carrying the field-window resource
// URI of a read_record_field result, for hosts that read MCP resources.
const MetaFieldWindowURI = "pdpp/field_window_uri"

// okResult is a successful tool result: bounded text plus structured output.
func okResult(text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: structured,
	}
}

// errorResult renders any failure as an isError result whose structuredContent
// is {"error": {...}}: the RS envelope's error object verbatim for RS errors,
// an adapter_error object otherwise. tool and args let the text show a retry.
func errorResult(err error, tool string, args map[string]any) *mcp.CallToolResult {
	e := asRSError(err)
	obj := e.Object()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(evidence.ErrorText(obj, tool, args))},
		StructuredContent: map[string]any{"error": obj},
		IsError:           true,
	}
}

// asRSError maps the typed errors of the adapter's packages to one shape.
func asRSError(err error) *rs.Error {
	var re *rs.Error
	if errors.As(err, &re) {
		return re
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return rs.AdapterError(qe.Code, qe.Message, qe.Param)
	}
	var he *handles.Error
	if errors.As(err, &he) {
		return rs.AdapterError(he.Code, he.Message, he.Param)
	}
	var ae *mcpkit.ArgError
	if errors.As(err, &ae) {
		return rs.AdapterError(ae.Code, ae.Message, ae.Field)
	}
	return rs.AdapterError("internal_error", err.Error(), "")
}

// argErrorResult renders a refused argument in the adapter's error shape, with
// the typed-object guidance for filter and expand_limit.
func argErrorResult(e *mcpkit.ArgError) *mcp.CallToolResult {
	msg := e.Message
	switch e.Field {
	case "filter":
		msg += `; pass an object such as {"language": "en"} or {"created_at": {"gte": "2026-01-01T00:00:00Z"}}`
	case "expand_limit":
		msg += `; pass an object such as {"video": 3} and name the relation in expand`
	}
	return errorResult(rs.AdapterError(e.Code, msg, e.Field), e.Tool, nil)
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
