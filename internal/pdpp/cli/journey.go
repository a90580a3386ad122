package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// runJourney shows the evidence ladder against a running /mcp endpoint, as an
// MCP client sees it: search, then the read the first hit offers, then fetch.
func runJourney(ctx context.Context, w io.Writer, mcpURL, token string) error {
	c, err := client.NewStreamableHttpClient(mcpURL, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := startSession(ctx, c, mcp.LATEST_PROTOCOL_VERSION, "pdpp-mcp-demo"); err != nil {
		return err
	}
	fmt.Fprintf(w, "Sample journey through %s\n", mcpURL)
	res, err := callAndShow(ctx, w, c, "search", map[string]any{"q": "zephyrmarker", "limit": 5})
	if err != nil {
		return err
	}
	var out struct {
		Results []struct {
			ID               string                `json:"id"`
			Next             evidence.Continuation `json:"next"`
			EvidenceComplete *bool                 `json:"evidence_complete"`
		} `json:"results"`
	}
	if err := remarshal(res.StructuredContent, &out); err != nil || len(out.Results) == 0 {
		return fmt.Errorf("search returned no results to continue from")
	}
	// Read on from the first proven excerpt that is not the whole field (or
	// else the first proven one), then fetch the first hit.
	pick := -1
	for i, r := range out.Results {
		if r.Next.Tool != evidence.ToolReadField {
			continue
		}
		if pick < 0 || (r.EvidenceComplete != nil && !*r.EvidenceComplete) {
			pick = i
		}
		if r.EvidenceComplete != nil && !*r.EvidenceComplete {
			break
		}
	}
	if pick >= 0 {
		next := out.Results[pick].Next
		if _, err := callAndShow(ctx, w, c, next.Tool, next.Arguments); err != nil {
			return err
		}
	}
	_, err = callAndShow(ctx, w, c, "fetch", map[string]any{"id": out.Results[0].ID})
	return err
}

// startSession starts c and runs the MCP handshake at protocol revision
// protocol, introducing the client as name (at this program's version).
func startSession(ctx context.Context, c *client.Client, protocol, name string) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = protocol
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: version()}
	_, err := c.Initialize(ctx, init)
	return err
}

func callAndShow(ctx context.Context, w io.Writer, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	fmt.Fprintf(w, "\n$ %s\n", evidence.Continuation{Tool: tool, Arguments: args}.Call())
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w, textOf(res))
	if res.IsError {
		return res, fmt.Errorf("%s failed", tool)
	}
	return res, nil
}

// textOf is the text of a result as printed: any character a person
// cannot see that reached it is shown as a marker (package unseen).
func textOf(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			s += t.Text
		}
	}
	return unseen.Show(s)
}

func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
