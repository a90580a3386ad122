package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
	// revision (newestToolsListBytes); 0 when not measured.
	NewestToolsListBytes   int
	Toolsets               []toolsetFootprint // catalog order of first use
	ResourceTemplatesBytes int
	InstructionsBytes      int
	InstructionsChars      int
	Tools                  []toolFootprint
}

// toolsetFootprint is the tools/list of a server exposing one toolset only.
type toolsetFootprint struct {
	Name                 string
	Tools                int
	ToolsListBytes       int
	NewestToolsListBytes int // 0: not measured
}

type toolFootprint struct {
	Name              string
	Toolset           string
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
	var errs []error
	size := func(what string, v any) int {
		b, err := json.Marshal(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("serialize %s: %w", what, err))
		}
		return len(b)
	}
	newest := func(tools []mcp.Tool) int {
		n, err := newestToolsListBytes(tools, c.catalog.Budgets)
		errs = append(errs, err)
		return n
	}
	fp.ToolsListBytes, fp.NewestToolsListBytes = size("tools/list", toolsListResult(c.tools)), newest(c.tools)
	for _, set := range toolsetOrder(c.catalog) {
		var only []mcp.Tool
		for i, t := range c.catalog.Tools {
			if t.Toolset == set {
				only = append(only, c.tools[i])
			}
		}
		fp.Toolsets = append(fp.Toolsets, toolsetFootprint{Name: set, Tools: len(only),
			ToolsListBytes: size(fmt.Sprintf("tools/list of toolset %q", set), toolsListResult(only)), NewestToolsListBytes: newest(only)})
	}
	fp.ResourceTemplatesBytes = size("resources/templates/list", mcp.ListResourceTemplatesResult{ResourceTemplates: resourceTemplates(c.catalog)})
	fp.InstructionsBytes = len(c.instructions)
	fp.InstructionsChars = utf8.RuneCountInString(c.instructions)
	for i, t := range c.catalog.Tools {
		tf := toolFootprint{
			Name:              t.Name,
			Toolset:           t.Toolset,
			EntryBytes:        size(fmt.Sprintf("tool %q", t.Name), c.tools[i]),
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
	return fp, errors.Join(errs...)
}

// newestRevisionToolsList is a tools/list request at the newest revision,
// whose _meta carries the version and client capabilities (no initialize).
var newestRevisionToolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
	`"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
	`"` + mcp.MetaKeyClientCapabilities + `":{}}}}`

// newestToolsListBytes is the size of the tools/list result at the newest
// revision of an mcp-go server serving tools, with the catalog's largest
// name and version and the servers' cache hints (mcpkit.CacheHints); 0 when
// the catalog bounds no server identity.
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
	}
	if err := json.Unmarshal(reply, &msg); err != nil || len(msg.Result) == 0 {
		return 0, fmt.Errorf("tools/list at %s has no result: %s", mcp.LATEST_PROTOCOL_VERSION, reply)
	}
	return len(msg.Result), nil
}

// committedFootprint is what the committed FOOTPRINT.md of the output
// folder says each tool's tools/list entry weighed, by tool name; a budget
// failure names the change against it. Path is "" when there is none.
type committedFootprint struct {
	Path    string
	Entries map[string]int
}

// footprintRow matches a row of FOOTPRINT.md's tools table: tool,
// toolset, entry bytes.
var footprintRow = regexp.MustCompile("(?m)^\\| `([a-z][a-z0-9_]*)` \\| [^|]+ \\| (\\d+) \\|")

// readCommittedFootprint reads the footprint file in dir, if any.
func readCommittedFootprint(dir string) committedFootprint {
	if dir == "" {
		return committedFootprint{}
	}
	path := filepath.Join(dir, footprintFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return committedFootprint{}
	}
	cf := committedFootprint{Path: displayPath(path), Entries: map[string]int{}}
	for _, m := range footprintRow.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[2])
		cf.Entries[m[1]] = n
	}
	return cf
}

// largestShown is how many of the largest tools a budget failure lists.
const largestShown = 5

// checkBudgets compares measured sizes with the catalog's budgets. A
// tools/list over its budget is told with the overage, the change per tool
// it holds against the committed footprint (largest change first), its
// largestShown heaviest tools, and what to do.
func checkBudgets(b Budgets, fp footprint, committed committedFootprint) []string {
	var p problems
	list := func(what string, size, budget int, tools []toolFootprint) {
		if budget <= 0 || size <= budget {
			return
		}
		msg := fmt.Sprintf("%s is %d bytes, budget %d: %d bytes over", what, size, budget, size-budget)
		delta := func(t toolFootprint) int { return t.EntryBytes - committed.Entries[t.Name] } // a new tool's is its size
		changed := slices.DeleteFunc(slices.Clone(tools), func(t toolFootprint) bool {
			_, ok := committed.Entries[t.Name]
			return ok && delta(t) == 0
		})
		slices.SortStableFunc(changed, func(a, b toolFootprint) int { return cmp.Compare(max(delta(b), -delta(b)), max(delta(a), -delta(a))) })
		var texts []string
		for _, t := range changed {
			if was, ok := committed.Entries[t.Name]; ok {
				texts = append(texts, fmt.Sprintf("%s %+d (%d -> %d)", t.Name, delta(t), was, t.EntryBytes))
			} else {
				texts = append(texts, fmt.Sprintf("%s new (+%d)", t.Name, t.EntryBytes))
			}
		}
		switch {
		case committed.Path == "":
			msg += "; no committed FOOTPRINT.md to compare with"
		case len(texts) == 0:
			msg += "; no tool's entry changed against the committed " + committed.Path
		default:
			msg += fmt.Sprintf("; change per tool against the committed %s: %s", committed.Path, strings.Join(texts, ", "))
		}
		largest := slices.SortedStableFunc(slices.Values(tools), func(a, b toolFootprint) int { return cmp.Compare(b.EntryBytes, a.EntryBytes) })
		texts = nil
		for _, t := range largest[:min(len(largest), largestShown)] {
			texts = append(texts, fmt.Sprintf("%s %d", t.Name, t.EntryBytes))
		}
		p.addf("%s; largest tools (entry bytes): %s. Shorten descriptions or schemas; a budget is a ceiling, never raised to fit", msg, strings.Join(texts, ", "))
	}
	list("tools/list", fp.ToolsListBytes, b.MaxToolsListBytes, fp.Tools)
	list("tools/list at "+mcp.LATEST_PROTOCOL_VERSION, fp.NewestToolsListBytes, b.MaxToolsListBytesNewest, fp.Tools)
	for _, ts := range fp.Toolsets {
		tools := slices.DeleteFunc(slices.Clone(fp.Tools), func(t toolFootprint) bool { return t.Toolset != ts.Name })
		list(fmt.Sprintf("tools/list of toolset %q alone", ts.Name), ts.ToolsListBytes, b.MaxToolsetListBytes[ts.Name], tools)
		list(fmt.Sprintf("tools/list of toolset %q alone at %s", ts.Name, mcp.LATEST_PROTOCOL_VERSION), ts.NewestToolsListBytes, b.MaxToolsetListBytesNewest[ts.Name], tools)
	}
	for _, t := range fp.Tools {
		if b.MaxToolBytes > 0 && t.EntryBytes > b.MaxToolBytes {
			p.addf("tool %q entry is %d bytes, budget %d: %d bytes over; shorten its description, argument descriptions or enums", t.Name, t.EntryBytes, b.MaxToolBytes, t.EntryBytes-b.MaxToolBytes)
		}
	}
	return p.list
}

// warnShare is how close to a budget a size may come before the generator
// warns: within 5% of it, the headroom every budget keeps.
const warnShare = 0.95

// budgetWarnings lists every size within 5% of its budget (and not over
// it): the next change there should make text shorter, not the budget
// larger.
func budgetWarnings(c *compiled) []string {
	b, fp := c.catalog.Budgets, c.footprint
	var out []string
	near := func(what string, size, budget int) {
		if budget > 0 && size <= budget && float64(size) > warnShare*float64(budget) {
			out = append(out, fmt.Sprintf("%s is %d bytes, within 5%% of its budget %d (%d bytes left): make text shorter before anything is added", what, size, budget, budget-size))
		}
	}
	near("tools/list", fp.ToolsListBytes, b.MaxToolsListBytes)
	near("tools/list at "+mcp.LATEST_PROTOCOL_VERSION, fp.NewestToolsListBytes, b.MaxToolsListBytesNewest)
	for _, ts := range fp.Toolsets {
		near(fmt.Sprintf("tools/list of toolset %q", ts.Name), ts.ToolsListBytes, b.MaxToolsetListBytes[ts.Name])
		near(fmt.Sprintf("tools/list of toolset %q at %s", ts.Name, mcp.LATEST_PROTOCOL_VERSION), ts.NewestToolsListBytes, b.MaxToolsetListBytesNewest[ts.Name])
	}
	for _, t := range fp.Tools {
		near(fmt.Sprintf("tool %q entry", t.Name), t.EntryBytes, b.MaxToolBytes)
		near(fmt.Sprintf("tool %q description", t.Name), t.DescriptionBytes, b.MaxDescriptionBytes)
		for _, f := range t.Fields {
			near(fmt.Sprintf("tool %q %s %q description", t.Name, f.Kind, f.Name), f.DescriptionBytes, b.MaxFieldDescriptionBytes)
		}
	}
	near("instructions", fp.InstructionsBytes, b.MaxInstructionsBytes)
	for _, v := range c.views {
		near(fmt.Sprintf("view %q", v.Name), len(v.HTML), v.MaxBytes)
	}
	return out
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
