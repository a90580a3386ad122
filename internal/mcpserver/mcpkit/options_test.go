package mcpkit

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestToolsetEnabled(t *testing.T) {
	tests := []struct {
		name     string
		toolsets []string
		toolset  string
		want     bool
	}{
		{"nil enables all", nil, "read", true},
		{"listed", []string{"read", "events"}, "events", true},
		{"not listed", []string{"read"}, "events", false},
		{"empty enables none", []string{}, "read", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (RegisterOptions{Toolsets: tc.toolsets}).ToolsetEnabled(tc.toolset); got != tc.want {
				t.Fatalf("ToolsetEnabled(%q) = %v, want %v", tc.toolset, got, tc.want)
			}
		})
	}
}

func TestDefaultArgErrorResult(t *testing.T) {
	tests := []struct {
		name     string
		err      *ArgError
		wantJSON string
		wantText string
	}{
		{"with param",
			&ArgError{Tool: "query_records", Field: "limit", Code: CodeOutOfRange, Message: "limit must be between 1 and 100; got 101"},
			`{"error":{"code":"out_of_range","message":"limit must be between 1 and 100; got 101","param":"limit","type":"adapter_error"}}`,
			"adapter_error out_of_range (argument limit): limit must be between 1 and 100; got 101. Fix the argument and call query_records again."},
		{"whole arguments",
			&ArgError{Tool: "search", Code: CodeInvalidJSON, Message: "arguments must be a JSON object; got an array"},
			`{"error":{"code":"invalid_json","message":"arguments must be a JSON object; got an array","type":"adapter_error"}}`,
			"adapter_error invalid_json: arguments must be a JSON object; got an array. Fix the arguments and call search again."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := RegisterOptions{}.RenderArgError(tc.err)
			if !res.IsError {
				t.Fatal("not an error result")
			}
			got, err := json.Marshal(res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantJSON {
				t.Errorf("structuredContent = %s, want %s", got, tc.wantJSON)
			}
			if len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != tc.wantText {
				t.Errorf("content = %+v, want %q", res.Content, tc.wantText)
			}
		})
	}
}
