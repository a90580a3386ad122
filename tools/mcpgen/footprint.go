package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// footprint is the measured size of what a client receives. Sizes are bytes
// of compact JSON as mcp-go serializes it, except description sizes, which
// are bytes of the text itself.
type footprint struct {
	ToolsListBytes         int
	Toolsets               []toolsetFootprint // catalog order of first use
	ResourceTemplatesBytes int
	InstructionsBytes      int
	InstructionsChars      int
	Tools                  []toolFootprint
}

// toolsetFootprint is the tools/list result of a server exposing only one
// toolset.
type toolsetFootprint struct {
	Name           string
	Tools          int
	ToolsListBytes int
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
		fp.Toolsets = append(fp.Toolsets, toolsetFootprint{Name: set, Tools: len(only), ToolsListBytes: len(b)})
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

// checkBudgets compares measured sizes with the catalog's budgets.
func checkBudgets(b Budgets, fp footprint) []string {
	var p problems
	if b.MaxToolsListBytes > 0 && fp.ToolsListBytes > b.MaxToolsListBytes {
		p.addf("tools/list is %d bytes, budget %d", fp.ToolsListBytes, b.MaxToolsListBytes)
	}
	for _, ts := range fp.Toolsets {
		if max := b.MaxToolsetListBytes[ts.Name]; max > 0 && ts.ToolsListBytes > max {
			p.addf("tools/list of toolset %q alone is %d bytes, budget %d", ts.Name, ts.ToolsListBytes, max)
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
