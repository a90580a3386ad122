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
// per workload call (FloorTool) that makes the call's direct RS request
// through rs (request, read, decode, as the direct path does) and answers
// a one-line text and the RS body verbatim as structuredContent {"data":
// body}. Rendering, checking and bounding nothing, it costs a client only
// the MCP framing and its own decoding beyond the direct request: the least
// any adapter handing the model the RS's answer can cost (adapter/floor).
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
