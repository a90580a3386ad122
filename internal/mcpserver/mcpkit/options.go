package mcpkit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// RegisterOptions tune what a generated Register function adds to a server.
type RegisterOptions struct {
	// Toolsets lists the toolsets whose tools are registered. Nil registers
	// every tool; an empty non-nil slice registers none.
	Toolsets []string
	// ArgErrorResult renders a refused argument as a tool result. Nil uses
	// DefaultArgErrorResult.
	ArgErrorResult func(*ArgError) *mcp.CallToolResult
}

// ToolsetEnabled reports whether tools of the named toolset are registered.
func (o RegisterOptions) ToolsetEnabled(toolset string) bool {
	return o.Toolsets == nil || slices.Contains(o.Toolsets, toolset)
}

// RenderArgError renders e with ArgErrorResult, or with
// DefaultArgErrorResult when none is set.
func (o RegisterOptions) RenderArgError(e *ArgError) *mcp.CallToolResult {
	if o.ArgErrorResult != nil {
		return o.ArgErrorResult(e)
	}
	return DefaultArgErrorResult(e)
}

// DefaultArgErrorResult renders e as an isError result whose
// structuredContent is
//
//	{"error": {"type": "adapter_error", "code": ..., "message": ..., "param": ...}}
//
// ("param" only when a single argument is at fault), with one line of text
// that repeats code, message and the fix for content-only clients.
func DefaultArgErrorResult(e *ArgError) *mcp.CallToolResult {
	body := map[string]any{
		"type":    ErrorType,
		"code":    e.Code,
		"message": e.Message,
	}
	tool := cmp.Or(e.Tool, "this tool")
	text := fmt.Sprintf("%s %s: %s. Fix the arguments and call %s again.", ErrorType, e.Code, e.Message, tool)
	if e.Field != "" {
		body["param"] = e.Field
		text = fmt.Sprintf("%s %s (argument %s): %s. Fix the argument and call %s again.", ErrorType, e.Code, e.Field, e.Message, tool)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: map[string]any{"error": body},
		IsError:           true,
	}
}
