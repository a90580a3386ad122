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
// the lint cannot express generically.
func TestRealCatalogRules(t *testing.T) {
	chdirRoot(t)
	_, c, err := generate(realOptions)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if c.footprint.ToolsListBytes > c.catalog.Budgets.MaxToolsListBytes {
		t.Fatalf("tools/list %d bytes over budget %d", c.footprint.ToolsListBytes, c.catalog.Budgets.MaxToolsListBytes)
	}
	for _, tool := range c.catalog.Tools {
		t.Run(tool.Name, func(t *testing.T) {
			if !strings.Contains(tool.Description, "Read-only") {
				t.Errorf("description does not say it is read-only: %q", tool.Description)
			}
			if !strings.Contains(tool.Description, "/v1/") {
				t.Errorf("description does not name its RS endpoint: %q", tool.Description)
			}
			if strings.Contains(strings.ToLower(tool.Description), "hidden") {
				t.Errorf("description calls output hidden: %q", tool.Description)
			}
			a := tool.Annotations
			if !*a.ReadOnlyHint || *a.DestructiveHint || !*a.IdempotentHint || *a.OpenWorldHint {
				t.Errorf("hints are not the read-only set: %+v", a)
			}
		})
	}
}

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
	if !strings.Contains(out, `"next_cursor":{"description":"Cursor of the next page.","type":["string","null"]}`) &&
		!strings.Contains(out, `"next_cursor":{"type":["string","null"],"description":"Cursor of the next page."}`) {
		t.Errorf("nullable output not rendered as a type pair: %s", out)
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
			// Inside the module, so the generated code may import internal/mcpkit;
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
