package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// footprint is the measured size of what a client receives. Sizes are bytes
// of compact JSON as mcp-go serializes it, except description sizes, which
// are bytes of the text itself.
type footprint struct {
	ToolsListBytes int
	// NewestToolsListBytes is the tools/list result at the newest protocol
	// revision (mcp.LATEST_PROTOCOL_VERSION), as an mcp-go server sends it
	// with the catalog's largest server name and version; 0 when the
	// catalog bounds neither.
	NewestToolsListBytes   int
	Toolsets               []toolsetFootprint // catalog order of first use
	ResourceTemplatesBytes int
	InstructionsBytes      int
	InstructionsChars      int
	Tools                  []toolFootprint
}

// toolsetFootprint is the tools/list result of a server exposing only one
// toolset.
type toolsetFootprint struct {
	Name                 string
	Tools                int
	ToolsListBytes       int
	NewestToolsListBytes int // 0: not measured
}

type toolFootprint struct {
	Name              string
	EntryBytes        int
	DescriptionBytes  int
	InputSchemaBytes  int
	OutputSchemaBytes int
	Fields            []fieldFootprint
}

type fieldFootprint struct {
	Kind             string // "arg" or "output"
	Name             string
	DescriptionBytes int
}

func measure(c *compiled) (footprint, error) {
	var fp footprint
	list, err := json.Marshal(toolsListResult(c.tools))
	if err != nil {
		return fp, fmt.Errorf("serialize tools/list: %w", err)
	}
	fp.ToolsListBytes = len(list)
	if fp.NewestToolsListBytes, err = newestToolsListBytes(c.tools, c.catalog.Budgets); err != nil {
		return fp, err
	}
	for _, set := range toolsetOrder(c.catalog) {
		var only []mcp.Tool
		for i, t := range c.catalog.Tools {
			if t.Toolset == set {
				only = append(only, c.tools[i])
			}
		}
		b, err := json.Marshal(toolsListResult(only))
		if err != nil {
			return fp, fmt.Errorf("serialize tools/list of toolset %q: %w", set, err)
		}
		newest, err := newestToolsListBytes(only, c.catalog.Budgets)
		if err != nil {
			return fp, err
		}
		fp.Toolsets = append(fp.Toolsets, toolsetFootprint{Name: set, Tools: len(only), ToolsListBytes: len(b), NewestToolsListBytes: newest})
	}
	templates, err := json.Marshal(mcp.ListResourceTemplatesResult{ResourceTemplates: resourceTemplates(c.catalog)})
	if err != nil {
		return fp, fmt.Errorf("serialize resources/templates/list: %w", err)
	}
	fp.ResourceTemplatesBytes = len(templates)
	fp.InstructionsBytes = len(c.instructions)
	fp.InstructionsChars = utf8.RuneCountInString(c.instructions)
	for i, t := range c.catalog.Tools {
		entry, err := json.Marshal(c.tools[i])
		if err != nil {
			return fp, fmt.Errorf("serialize tool %q: %w", t.Name, err)
		}
		tf := toolFootprint{
			Name:              t.Name,
			EntryBytes:        len(entry),
			DescriptionBytes:  len(t.Description),
			InputSchemaBytes:  len(c.schemas[t.Name].input),
			OutputSchemaBytes: len(c.schemas[t.Name].output),
		}
		for _, a := range t.Args {
			tf.Fields = append(tf.Fields, fieldFootprint{Kind: "arg", Name: a.Name, DescriptionBytes: len(a.Description)})
		}
		for _, o := range t.Output {
			tf.Fields = append(tf.Fields, fieldFootprint{Kind: "output", Name: o.Name, DescriptionBytes: len(o.Description)})
		}
		fp.Tools = append(fp.Tools, tf)
	}
	return fp, nil
}

// newestRevisionToolsList is a tools/list request made at the newest
// protocol revision, which carries its version and the client's
// capabilities in _meta instead of an initialize handshake.
var newestRevisionToolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
	`"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
	`"` + mcp.MetaKeyClientCapabilities + `":{}}}}`

// newestToolsListBytes serves tools from an mcp-go server whose name and
// version take the catalog's largest sizes and returns the bytes of its
// tools/list result at the newest protocol revision: the result as every
// earlier revision gets it plus what that revision adds (resultType, the
// cache hints the servers send, mcpkit.CacheHints, and _meta serverInfo). It returns 0 when the catalog bounds
// no server identity.
func newestToolsListBytes(tools []mcp.Tool, b Budgets) (int, error) {
	if b.MaxServerNameBytes <= 0 || b.MaxServerVersionBytes <= 0 {
		return 0, nil
	}
	s := server.NewMCPServer(strings.Repeat("n", b.MaxServerNameBytes), strings.Repeat("v", b.MaxServerVersionBytes),
		append(mcpkit.CacheHints(), server.WithToolCapabilities(false))...)
	for _, t := range tools {
		s.AddTool(t, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	reply, err := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(newestRevisionToolsList)))
	if err != nil {
		return 0, fmt.Errorf("serialize tools/list at %s: %w", mcp.LATEST_PROTOCOL_VERSION, err)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(reply, &msg); err != nil || len(msg.Result) == 0 {
		return 0, fmt.Errorf("tools/list at %s has no result: %s", mcp.LATEST_PROTOCOL_VERSION, reply)
	}
	return len(msg.Result), nil
}

// checkBudgets compares measured sizes with the catalog's budgets.
func checkBudgets(b Budgets, fp footprint) []string {
	var p problems
	if b.MaxToolsListBytes > 0 && fp.ToolsListBytes > b.MaxToolsListBytes {
		p.addf("tools/list is %d bytes, budget %d", fp.ToolsListBytes, b.MaxToolsListBytes)
	}
	if b.MaxToolsListBytesNewest > 0 && fp.NewestToolsListBytes > b.MaxToolsListBytesNewest {
		p.addf("tools/list at %s is %d bytes, budget %d", mcp.LATEST_PROTOCOL_VERSION, fp.NewestToolsListBytes, b.MaxToolsListBytesNewest)
	}
	for _, ts := range fp.Toolsets {
		if max := b.MaxToolsetListBytes[ts.Name]; max > 0 && ts.ToolsListBytes > max {
			p.addf("tools/list of toolset %q alone is %d bytes, budget %d", ts.Name, ts.ToolsListBytes, max)
		}
		if max := b.MaxToolsetListBytesNewest[ts.Name]; max > 0 && ts.NewestToolsListBytes > max {
			p.addf("tools/list of toolset %q alone at %s is %d bytes, budget %d", ts.Name, mcp.LATEST_PROTOCOL_VERSION, ts.NewestToolsListBytes, max)
		}
	}
	for _, t := range fp.Tools {
		if b.MaxToolBytes > 0 && t.EntryBytes > b.MaxToolBytes {
			p.addf("tool %q entry is %d bytes, budget %d", t.Name, t.EntryBytes, b.MaxToolBytes)
		}
	}
	return p.list
}

// toolsetOrder lists the catalog's toolsets in order of first use.
func toolsetOrder(c *Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		if !slices.Contains(out, t.Toolset) {
			out = append(out, t.Toolset)
		}
	}
	return out
}

// resourceTemplates builds the templates exactly as the generated
// ResourceTemplates() does.
func resourceTemplates(c *Catalog) []mcp.ResourceTemplate {
	out := make([]mcp.ResourceTemplate, 0, len(c.Resources))
	for _, r := range c.Resources {
		opts := []mcp.ResourceTemplateOption{mcp.WithTemplateTitle(r.Title), mcp.WithTemplateDescription(r.Description)}
		if r.MIMEType != "" {
			opts = append(opts, mcp.WithTemplateMIMEType(r.MIMEType))
		}
		out = append(out, mcp.NewResourceTemplate(r.URITemplate, r.Name, opts...))
	}
	return out
}
