package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// defaultKitImport is the runtime package generated code calls.
const defaultKitImport = "github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"

// options are the generator inputs.
type options struct {
	catalog      string // catalog YAML path
	openapi      string // OpenAPI document path; optional
	instructions string // instructions file path
	out          string // output directory
	kitImport    string // import path of the mcpkit runtime
	// rsclient is the import path of the typed RS client oapi-codegen writes
	// from the OpenAPI document, for the argument mapping (rscalls.go); "": none.
	rsclient string
}

// lintError carries every problem found, so one run reports them all.
type lintError struct{ problems []string }

func (e *lintError) Error() string {
	return fmt.Sprintf("catalog has %d problem(s):\n  - %s", len(e.problems), strings.Join(e.problems, "\n  - "))
}

// compiled is a catalog after resolution, with its schemas, tools and
// measurements; everything the templates need.
type compiled struct {
	catalog      *Catalog
	instructions string
	source       string // catalog path as shown in generated comments
	kitImport    string
	schemas      map[string]toolSchemas
	tools        []mcp.Tool // catalog order
	footprint    footprint
	views        []builtView // catalog order
	// rsOps and calls are the generated mapping of arguments to RS
	// operations, written when rsclientImport is set.
	rsOps          []*rsOp
	calls          []toolCall
	rsclientImport string
}

type toolSchemas struct{ input, output []byte }

// generate compiles the catalog and renders every output file, keyed by
// file name relative to the output directory. Nothing is written.
func generate(opt options) (map[string][]byte, *compiled, error) {
	cat, err := loadCatalog(opt.catalog)
	if err != nil {
		return nil, nil, err
	}
	var instructions string
	if opt.instructions != "" {
		data, err := os.ReadFile(opt.instructions)
		if err != nil {
			return nil, nil, fmt.Errorf("read instructions: %w", err)
		}
		instructions = strings.TrimSpace(string(data))
	}
	var api *apiDoc
	if opt.openapi != "" {
		if api, err = loadOpenAPI(opt.openapi); err != nil {
			return nil, nil, err
		}
	}
	views, problems := loadViews(cat, filepath.Dir(opt.catalog))
	if len(problems) > 0 {
		return nil, nil, &lintError{problems: problems}
	}
	c, err := compile(cat, api, instructions, views, opt.rsclient != "", readCommittedFootprint(opt.out))
	if err != nil {
		return nil, nil, err
	}
	c.source, c.kitImport, c.rsclientImport = displayPath(opt.catalog), cmp.Or(opt.kitImport, defaultKitImport), opt.rsclient
	files, err := render(c)
	return files, c, err
}

// compile resolves, lints, builds schemas and checks the byte budgets.
// mapping: the arguments' mapping to RS operations is planned (and its
// rules checked); committed is the footprint the output folder holds, which
// a budget failure is told against.
func compile(cat *Catalog, api *apiDoc, instructions string, views []builtView, mapping bool, committed committedFootprint) (*compiled, error) {
	var p problems
	if api != nil {
		api.lintParams(&p)
	}
	resolveArgs(&p, cat, api)
	c := &compiled{catalog: cat, instructions: instructions, schemas: map[string]toolSchemas{}, views: views}
	if mapping {
		c.rsOps, c.calls = planCalls(&p, cat, api)
	}
	lintCatalog(&p, cat, instructions)
	lintDescriptionRules(&p, cat, api)
	if len(p.list) > 0 {
		return nil, &lintError{problems: p.list}
	}
	viewURIs := map[string]string{} // view name -> URI; "" (no view) names none
	for _, v := range views {
		viewURIs[v.Name] = v.URI
	}
	for _, t := range cat.Tools {
		in, err := inputSchema(t)
		if err != nil {
			return nil, fmt.Errorf("tool %q input schema: %w", t.Name, err)
		}
		out, err := outputSchema(t)
		if err != nil {
			return nil, fmt.Errorf("tool %q output schema: %w", t.Name, err)
		}
		c.schemas[t.Name] = toolSchemas{input: in, output: out}
		c.tools = append(c.tools, mcpTool(t, in, out, viewURIs[t.View]))
	}
	var err error
	if c.footprint, err = measure(c); err != nil {
		return nil, err
	}
	if problems := checkBudgets(cat.Budgets, c.footprint, committed); len(problems) > 0 {
		return nil, &lintError{problems: problems}
	}
	return c, nil
}

// mcpTool is the tool definition exactly as the generated Tools() builds it.
func mcpTool(t Tool, in, out []byte, viewURI string) mcp.Tool {
	tool := mcp.Tool{
		Name:            t.Name,
		Title:           t.Title,
		Description:     t.Description,
		RawInputSchema:  json.RawMessage(in),
		RawOutputSchema: json.RawMessage(out),
		Annotations: mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(*t.Annotations.ReadOnlyHint),
			DestructiveHint: mcp.ToBoolPtr(*t.Annotations.DestructiveHint),
			IdempotentHint:  mcp.ToBoolPtr(*t.Annotations.IdempotentHint),
			OpenWorldHint:   mcp.ToBoolPtr(*t.Annotations.OpenWorldHint),
		},
	}
	if viewURI != "" { // the views template's viewToolMeta
		tool.Meta = &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": viewURI}}}
	}
	return tool
}

// toolsListResult is the tools/list result an mcp-go server sends for
// these tools: sorted by name, as the server sorts them.
func toolsListResult(tools []mcp.Tool) mcp.ListToolsResult {
	return mcp.ListToolsResult{Tools: slices.SortedFunc(slices.Values(tools), func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })}
}

// displayPath keeps generated comments free of machine paths: a relative
// path is shown as given (with forward slashes), an absolute one by its
// base name.
func displayPath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Base(p)
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// writeFiles writes the rendered files into dir, creating it if needed;
// dir is a fresh folder of the stage that writeAll swaps in whole.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// staleFiles lists the files in dir that differ from the rendered ones.
func staleFiles(dir string, files map[string][]byte) []string {
	var stale []string
	for _, name := range sortedKeys(files) {
		have, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(have, files[name]) {
			stale = append(stale, name)
		}
	}
	return stale
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
