package benchmarks

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// FloorTool names the pass-through tool of a workload call on the floor
// server.
func FloorTool(c Call) string { return "floor_" + c.Name }

// NewFloorServer returns the floor: an MCP server with one pass-through tool
// per workload call (named FloorTool). Each makes exactly the call's direct
// RS request through rs (request, read, decode into the typed model, as the
// direct path does) and answers with a one-line text and the RS body
// verbatim as structuredContent {"data": body}. It renders, checks and
// bounds nothing, so what a client pays for a floor call beyond the direct
// request is the MCP framing and the client's own decoding: the least any
// adapter that hands the model the RS's answer can cost through the same
// client. Measurements set the adapter against it (adapter/floor) next to
// adapter/direct.
func NewFloorServer(rs *rsclient.ClientWithResponses) *server.MCPServer {
	s := server.NewMCPServer("pdpp-floor", "0", server.WithToolCapabilities(false))
	for _, c := range Workload() {
		tool := mcp.NewTool(FloorTool(c), mcp.WithDescription("The RS body of the "+c.Name+" workload request, verbatim."))
		s.AddTool(tool, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, body, err := c.Direct(ctx, rs)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			raw := make([]byte, 0, len(body)+len(`{"data":}`))
			raw = append(append(append(raw, `{"data":`...), body...), '}')
			return &mcp.CallToolResult{
				Content:              []mcp.Content{mcp.NewTextContent(fmt.Sprintf("RS body, %d bytes, in structuredContent.data", len(body)))},
				RawStructuredContent: raw,
			}, nil
		})
	}
	return s
}
