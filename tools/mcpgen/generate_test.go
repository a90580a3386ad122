package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is where go generate runs mcpgen; tests that compare with the
// committed output run from there so paths in the output match.
const repoRoot = "../.."

// realOptions are the flags of the go:generate line in generate.go.
var realOptions = options{
	catalog:      "spec/tools.yaml",
	openapi:      "spec/pdpp-rs.openapi.yaml",
	instructions: "spec/instructions.md",
	out:          "gen/mcptools",
	rsclient:     "github.com/pdpp-mcp/pdpp-mcp/gen/rsclient",
}

// chdirRoot moves the test to the repository root, skipping when the real
// spec files are not there.
func chdirRoot(t *testing.T) {
	t.Helper()
	t.Chdir(repoRoot)
	for _, p := range []string{realOptions.catalog, realOptions.openapi, realOptions.instructions} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("real spec file %s is not present: %v", p, err)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	chdirRoot(t)
	first, _, err := generate(realOptions)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	for run := range 3 {
		again, _, err := generate(realOptions)
		if err != nil {
			t.Fatalf("generate run %d: %v", run+2, err)
		}
		if !slices.Equal(sortedKeys(first), sortedKeys(again)) {
			t.Fatalf("run %d produced files %v, first run %v", run+2, sortedKeys(again), sortedKeys(first))
		}
		for name, data := range first {
			if !bytes.Equal(data, again[name]) {
				t.Fatalf("run %d: %s differs from the first run", run+2, name)
			}
		}
	}
}

// TestGeneratedUpToDate fails when gen/mcptools is not what the current
// spec produces (run go generate ./... to refresh it).
func TestGeneratedUpToDate(t *testing.T) {
	chdirRoot(t)
	files, _, err := generate(realOptions)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if stale := staleFiles(realOptions.out, files); len(stale) > 0 {
		t.Fatalf("%s is stale: %v; run go generate ./...", realOptions.out, stale)
	}
}

// TestRealCatalogRules checks the PDPP catalog keeps the surface rules that
// the lint cannot express generically: the footprint ceilings of the issue,
// the guidance homes for connection_id recovery and webhook signing, and
// that it still declares the description rules and toolset hints the
// generator enforces on every tool.
func TestRealCatalogRules(t *testing.T) {
	chdirRoot(t)
	_, c, err := generate(realOptions)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	b := c.catalog.Budgets
	t.Run("budgets", func(t *testing.T) {
		// The ceilings: up to 2025-11-25, and at 2026-07-28 (which
		// adds resultType, cache hints and the server's identity).
		const allCeiling, readCeiling = 15232, 10112
		const allNewest, readNewest = 16 << 10, 10 << 10
		for _, c := range []struct {
			name         string
			got, ceiling int
		}{
			{"max_tools_list_bytes", b.MaxToolsListBytes, allCeiling},
			{"max_toolset_list_bytes.read", b.MaxToolsetListBytes["read"], readCeiling},
			{"max_tools_list_bytes_newest", b.MaxToolsListBytesNewest, allNewest},
			{"max_toolset_list_bytes_newest.read", b.MaxToolsetListBytesNewest["read"], readNewest},
		} {
			if c.got <= 0 || c.got > c.ceiling {
				t.Errorf("%s = %d, want a budget of at most %d", c.name, c.got, c.ceiling)
			}
		}
		if c.footprint.NewestToolsListBytes <= c.footprint.ToolsListBytes || c.footprint.NewestToolsListBytes > b.MaxToolsListBytesNewest {
			t.Errorf("tools/list at the newest revision is %d bytes (budget %d), up to 2025-11-25 %d", c.footprint.NewestToolsListBytes, b.MaxToolsListBytesNewest, c.footprint.ToolsListBytes)
		}
		if c.footprint.ToolsListBytes > b.MaxToolsListBytes {
			t.Errorf("tools/list %d bytes over budget %d", c.footprint.ToolsListBytes, b.MaxToolsListBytes)
		}
		for _, ts := range c.footprint.Toolsets {
			if max := b.MaxToolsetListBytes[ts.Name]; max > 0 && ts.ToolsListBytes > max {
				t.Errorf("toolset %s: tools/list %d bytes over budget %d", ts.Name, ts.ToolsListBytes, max)
			}
		}
	})
	t.Run("guidance homes", func(t *testing.T) {
		want := map[string]string{
			"ambiguous_connection":  homeInstructions,
			"available_connections": homeInstructions,
			"webhook-signature":     eventsDiscoveryTool,
			"HMAC":                  eventsDiscoveryTool,
			"retries":               eventsDiscoveryTool,
		}
		for phrase, home := range want {
			if got := c.catalog.GuidanceHomes[phrase]; got != home {
				t.Errorf("guidance_homes[%q] = %q, want %q", phrase, got, home)
			}
		}
	})
	// The wording rules of the descriptions and the read toolset's hints
	// are the generator's (description_rules, toolsets); the catalog must
	// keep declaring them.
	t.Run("description rules", func(t *testing.T) {
		r := c.catalog.DescriptionRules
		if r.ReadOnlySays != "Read-only" || r.MutatingSays != "Mutating" || !r.NameEndpoint ||
			!slices.Contains(r.PointsTo, "server instructions") || !slices.Contains(r.PointsTo, eventsDiscoveryTool) ||
			!slices.Contains(r.Forbidden, "hidden") {
			t.Errorf("description_rules = %+v, want Read-only, Mutating, name_endpoint, points to the instructions and %s, hidden forbidden", r, eventsDiscoveryTool)
		}
		h := c.catalog.Toolsets["read"].Hints
		if h.ReadOnlyHint == nil || !*h.ReadOnlyHint || h.DestructiveHint == nil || *h.DestructiveHint {
			t.Errorf("toolsets.read.hints = %+v, want read-only and not destructive", h)
		}
	})
}

// eventsDiscoveryTool is the one tool that holds event-subscription
// signing, delivery and preflight guidance.
const eventsDiscoveryTool = "discover_event_subscription_capabilities"

// catalogCases are every catalog the schema tests compile.
func catalogCases(t *testing.T) []struct {
	name string
	opt  options
} {
	cases := []struct {
		name string
		opt  options
	}{
		{"sample", options{catalog: "testdata/catalog.yaml", openapi: testOpenAPI, instructions: testInstructions}},
		{"paper", options{catalog: "testdata/paper/catalog.yaml", instructions: "testdata/paper/instructions.md"}},
	}
	real := options{
		catalog:      filepath.Join(repoRoot, realOptions.catalog),
		openapi:      filepath.Join(repoRoot, realOptions.openapi),
		instructions: filepath.Join(repoRoot, realOptions.instructions),
		rsclient:     realOptions.rsclient,
	}
	if _, err := os.Stat(real.openapi); err == nil {
		cases = append(cases, struct {
			name string
			opt  options
		}{"pdpp", real})
	} else {
		t.Logf("real OpenAPI missing, pdpp catalog not checked: %v", err)
	}
	return cases
}

// TestSchemasPortable checks every input and output schema for the
// keywords some clients reject, and that properties keep catalog order.
func TestSchemasPortable(t *testing.T) {
	for _, cc := range catalogCases(t) {
		_, c, err := generate(cc.opt)
		if err != nil {
			t.Fatalf("%s: generate: %v", cc.name, err)
		}
		for _, tool := range c.catalog.Tools {
			s := c.schemas[tool.Name]
			for kind, raw := range map[string][]byte{"input": s.input, "output": s.output} {
				t.Run(cc.name+"/"+tool.Name+"/"+kind, func(t *testing.T) {
					for _, kw := range []string{`"$ref"`, `"$defs"`, `"$schema"`, `"additionalProperties"`, `"anyOf"`, `"oneOf"`, `"allOf"`} {
						if bytes.Contains(raw, []byte(kw)) {
							t.Errorf("schema contains %s: %s", kw, raw)
						}
					}
					var compact bytes.Buffer
					if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
						t.Errorf("schema is not compact JSON (err %v): %s", err, raw)
					}
					var want []string
					if kind == "input" {
						for _, a := range tool.Args {
							want = append(want, a.Name)
						}
					} else {
						for _, o := range tool.Output {
							want = append(want, o.Name)
						}
					}
					if got := propertyOrder(t, raw); !slices.Equal(got, want) {
						t.Errorf("property order %v, want catalog order %v", got, want)
					}
				})
			}
		}
	}
}

// propertyOrder reads the top-level property names of a schema in the
// order they appear in the JSON text.
func propertyOrder(t *testing.T, raw []byte) []string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("schema: %v", err)
	}
	props, ok := top["properties"]
	if !ok {
		t.Fatalf("schema has no properties: %s", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestSchemaFacts checks what the sample catalog's schemas say, including
// facts pulled from OpenAPI parameters and catalog values that override
// them.
func TestSchemaFacts(t *testing.T) {
	_, c, err := generate(options{catalog: "testdata/catalog.yaml", openapi: testOpenAPI, instructions: testInstructions})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	in := c.schemas["list_items"].input
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(in, &schema); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		prop, key string
		want      string // JSON
	}{
		{"stream", "type", `"string"`},
		{"stream", "description", `"Stream name."`}, // catalog text wins
		{"limit", "type", `"integer"`},              // from the OpenAPI
		{"limit", "minimum", `1`},                   // from the OpenAPI
		{"limit", "maximum", `100`},                 // from the OpenAPI
		{"limit", "description", `"Page size."`},    // from the OpenAPI
		{"order", "enum", `["asc","desc"]`},         // from the OpenAPI
		{"order", "default", `"desc"`},              // from the catalog
		{"filter", "type", `"object"`},              // deepObject parameter
		{"fields", "type", `"array"`},               // string_array
		{"fields", "items", `{"type":"string","enum":["id","title","body"]}`},
		{"ratio", "type", `"number"`},
		{"ratio", "minimum", `0`},
		{"ratio", "maximum", `1`},
		{"exact", "default", `false`},
		{"note", "maxLength", `8`},
	}
	for _, tc := range tests {
		t.Run(tc.prop+"."+tc.key, func(t *testing.T) {
			got, ok := schema.Properties[tc.prop][tc.key]
			if !ok {
				t.Fatalf("property %s has no %s: %s", tc.prop, tc.key, in)
			}
			b, _ := json.Marshal(got)
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			wb, _ := json.Marshal(want)
			if !bytes.Equal(b, wb) {
				t.Fatalf("%s.%s = %s, want %s", tc.prop, tc.key, b, wb)
			}
		})
	}
	if !slices.Equal(schema.Required, []string{"stream"}) {
		t.Errorf("required = %v, want [stream]", schema.Required)
	}
	out := string(c.schemas["list_items"].output)
	if !strings.Contains(out, `"next_cursor":{"type":"string","description":"Cursor of the next page."}`) {
		t.Errorf("output not published with its type: %s", out)
	}
	if strings.Contains(out, `"type":[`) {
		t.Errorf("output schema spells a type as an array: %s", out)
	}
	if strings.Contains(out, `"required"`) {
		t.Errorf("output schema must not require properties: %s", out)
	}
}

// TestGeneratedPackageBuilds compiles and vets the packages generated from
// the test catalogs, the paper one having no OpenAPI document at all.
func TestGeneratedPackageBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated packages with the go command")
	}
	for _, cc := range catalogCases(t)[:2] {
		t.Run(cc.name, func(t *testing.T) {
			files, _, err := generate(cc.opt)
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			// Inside the module, so the generated code may import internal/mcpserver/mcpkit;
			// the leading underscore keeps ./... patterns away from it.
			dir, err := os.MkdirTemp("testdata", "_gen_"+cc.name+"_")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := writeFiles(dir, files); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "vet", "./"+filepath.ToSlash(dir))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go vet of generated %s package: %v\n%s", cc.name, err, out)
			}
		})
	}
}

// TestToolsetFootprint checks the per-toolset tools/list sizes: each is the
// size of a tools/list holding only that toolset's tools, so the sizes add
// up to the whole list plus one `{"tools":[]}` wrapper less a comma for
// every extra toolset.
func TestToolsetFootprint(t *testing.T) {
	for _, cc := range catalogCases(t) {
		t.Run(cc.name, func(t *testing.T) {
			_, c, err := generate(cc.opt)
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			fp := c.footprint
			if len(fp.Toolsets) != len(toolsetOrder(c.catalog)) {
				t.Fatalf("measured %d toolsets, catalog has %v", len(fp.Toolsets), toolsetOrder(c.catalog))
			}
			sum, tools := 0, 0
			for _, ts := range fp.Toolsets {
				sum += ts.ToolsListBytes
				tools += ts.Tools
			}
			wrapper := len(`{"tools":[]}`)
			if want := fp.ToolsListBytes + (len(fp.Toolsets)-1)*(wrapper-1); sum != want {
				t.Errorf("toolset sizes add up to %d, want %d (whole list %d)", sum, want, fp.ToolsListBytes)
			}
			if tools != len(c.catalog.Tools) {
				t.Errorf("toolsets hold %d tools, catalog %d", tools, len(c.catalog.Tools))
			}
		})
	}
}

// TestFormatChecksGenerated checks that every argument naming a catalog
// format gets a CheckFormat call in its Validate method (each item of a
// string_array, a required value always, an optional one when present),
// and that each format becomes one exported variable.
func TestFormatChecksGenerated(t *testing.T) {
	files, c, err := generate(options{catalog: "testdata/catalog.yaml", openapi: testOpenAPI, instructions: testInstructions})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	src := string(files["args.go"])
	for _, want := range []string{
		"FormatSlug = mcpkit.NewFormat(\"slug\", \"lower-case letters, digits and \\\"_\\\"\", `^[a-z][a-z0-9_]*$`, 32, true)",
		"FormatItemID = mcpkit.NewFormat(\"item_id\", \"one path segment of at most 64 bytes\", ``, 64, true)",
		"\tif err := mcpkit.CheckFormat(\"list_items\", \"stream\", a.Stream, FormatSlug); err != nil {",
		"\tfor _, v := range a.Streams {\n\t\tif err := mcpkit.CheckFormat(\"list_items\", \"streams\", v, FormatSlug); err != nil {",
		"\tif a.Item != \"\" {\n\t\tif err := mcpkit.CheckFormat(\"list_items\", \"item\", a.Item, FormatItemID); err != nil {",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated args.go lacks:\n%s", want)
		}
	}
	// The schemas do not publish formats: they cost tools/list bytes and
	// the server checks them anyway.
	if in := string(c.schemas["list_items"].input); strings.Contains(in, "pattern") {
		t.Errorf("input schema publishes a pattern: %s", in)
	}
}

// TestGenerateLinesMatchRealOptions keeps realOptions the flags generate.go
// passes for gen/mcptools, so the tests compare with what go generate writes.
func TestGenerateLinesMatchRealOptions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "generate.go"))
	if err != nil {
		t.Skipf("generate.go is not present: %v", err)
	}
	o := realOptions
	want := "-catalog " + o.catalog + " -openapi " + o.openapi + " -instructions " + o.instructions + " -rsclient " + o.rsclient
	if !strings.Contains(string(data), want) || !strings.Contains(string(data), "-out "+o.out) {
		t.Errorf("generate.go has no go:generate line with %q and -out %s", want, o.out)
	}
}
