package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// runJourney connects to mcpURL as an MCP client and walks the usual path
// of a model: search, metadata, summary, facets, a translation resource;
// it prints each call and a short view of its answer.
func runJourney(ctx context.Context, w io.Writer, mcpURL, token string) error {
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(mcpURL, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "paper-mcp-demo", Version: version()},
	}}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	call := func(tool string, args map[string]any) (*mcp.CallToolResult, error) {
		fmt.Fprintf(w, "$ %s %s\n", tool, compact(args))
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
		if err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, fmt.Errorf("%s: %s", tool, text(res))
		}
		fmt.Fprintln(w, indent(clip(text(res), 900)))
		return res, nil
	}
	res, err := call("search_papers", map[string]any{"query": "vision transformer", "limit": 3})
	if err != nil {
		return err
	}
	sc, _ := res.StructuredContent.(map[string]any)
	results, _ := sc["results"].([]any)
	if len(results) == 0 {
		return fmt.Errorf("search_papers found nothing")
	}
	first, _ := results[0].(map[string]any)["paper_id"].(string)
	for _, step := range []struct {
		tool string
		args map[string]any
	}{
		{"get_paper_metadata", map[string]any{"paper_id": first}},
		{"get_paper_summary", map[string]any{"paper_id": first, "max_chars": 500}},
		{"search_papers", map[string]any{"query": "视觉变换器", "limit": 2}},
		{"list_top_facets", map[string]any{"category": "author", "limit": 5}},
	} {
		if _, err := call(step.tool, step.args); err != nil {
			return err
		}
	}
	uri := "paper://" + first + "/translation/zh"
	fmt.Fprintf(w, "$ resources/read %s\n", uri)
	rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return err
	}
	for _, rc := range rr.Contents {
		if tc, ok := rc.(mcp.TextResourceContents); ok {
			fmt.Fprintln(w, indent(clip(tc.Text, 400)))
		}
	}
	return nil
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func compact(args map[string]any) string {
	var parts []string
	for _, k := range []string{"query", "keyword", "paper_id", "template", "category", "limit", "max_chars"} {
		if v, ok := args[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return strings.Join(parts, " ")
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + " …"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
