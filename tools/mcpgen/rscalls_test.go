package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is the module the generated test packages live in.
const modulePath = "github.com/pdpp-mcp/pdpp-mcp"

// rscallsOptions generate the mapping test catalog against its spec.
func rscallsOptions(rsclient string) options {
	return options{
		catalog:      "testdata/rscalls/catalog.yaml",
		openapi:      "testdata/rscalls/openapi.yaml",
		instructions: testInstructions,
		rsclient:     rsclient,
	}
}

// TestMappedArgumentsReachRS generates a typed RS client (oapi-codegen) and
// a tool package (mcpgen) from a spec and catalog in testdata, then runs a
// program that decodes a tool call's arguments as the server does, builds
// the request with the generated mapping alone (the handler sets only the
// by_hand cursor) and sends it to a real HTTP server: every argument with a
// param: arrives, converted to the parameter's type, with nothing written
// by hand for it. Adding a parameter to the spec and one argument to the
// catalog is all it takes.
func TestMappedArgumentsReachRS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	// Inside the module, so the generated code may import internal/mcpserver/mcpkit;
	// the leading underscore keeps ./... patterns away from it.
	dir, err := os.MkdirTemp("testdata", "_gen_rscalls_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pkg := modulePath + "/tools/mcpgen/" + filepath.ToSlash(dir)
	oapi := exec.Command("go", "tool", "oapi-codegen", "-generate", "types,client", "-package", "rsclient",
		"-o", filepath.Join(dir, "rsclient", "rsclient.gen.go"), "testdata/rscalls/openapi.yaml")
	if out, err := oapi.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, out)
	}
	files, _, err := generate(rscallsOptions(pkg + "/rsclient"))
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if _, ok := files[rsCallsFile]; !ok {
		t.Fatalf("no %s generated", rsCallsFile)
	}
	if err := writeFiles(filepath.Join(dir, "rscalls"), files); err != nil {
		t.Fatal(err)
	}
	main := `package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	tools "` + pkg + `/rscalls"
)

func main() {
	seen := make(chan string, 1)
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.EscapedPath() + "?" + r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "{}")
	}))
	defer rs.Close()
	var args tools.ListItemsArgs
	if err := json.Unmarshal([]byte(os.Args[1]), &args); err != nil {
		panic(err)
	}
	if err := args.Validate(); err != nil {
		panic(err)
	}
	call := args.ListRecordsCall()
	cursor := "rs-" + args.Cursor // by_hand: the handler's own value
	call.Params.Cursor = &cursor
	req, err := call.NewRequest(rs.URL + "/")
	if err != nil {
		panic(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(<-seen)
}
`
	if err := os.MkdirAll(filepath.Join(dir, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main", "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args, want string
	}{
		{"every argument", `{"stream":"notes","limit":5,"cursor":"c1","order":"desc","window":"exact","exact":true,"ratio":0.5,"streams":["a","b"],"q":"hi there"}`,
			"/v1/streams/notes/records?limit=5&cursor=rs-c1&order=desc&window=exact&exact=true&ratio=0.5&streams=a&streams=b&q=hi+there"},
		{"only the required", `{"stream":"notes","q":"x"}`, "/v1/streams/notes/records?cursor=rs-&q=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("go", "run", "./"+filepath.ToSlash(filepath.Join(dir, "main")), tc.args).CombinedOutput()
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("the RS saw\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

// TestMappingRules provokes each rule of the generated mapping with an edit
// of the mapping test catalog, and checks generation fails naming the
// argument or parameter and the way out.
func TestMappingRules(t *testing.T) {
	base, err := os.ReadFile("testdata/rscalls/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new string
		want           []string
	}{
		{"type contradicts the spec", "{name: limit, param: limit}", "{name: limit, param: limit, type: string, description: Page size.}",
			[]string{`tool "list_items" arg "limit": type string contradicts the OpenAPI type of parameter "limit" of listRecords (integer)`, "drop type", "by_hand"}},
		{"required parameter without an argument", "      - {name: q, param: q, required: true}\n", "",
			[]string{`tool "list_items": listRecords requires parameter "q", which no argument sets`, "param: q", "by_hand"}},
		{"required parameter from an optional argument", "{name: q, param: q, required: true}", "{name: q, param: q}",
			[]string{`tool "list_items" arg "q": listRecords requires parameter "q", so the argument must be required: true`}},
		{"path parameter from an optional argument", "{name: stream, param: stream, required: true, description: Stream name.}", "{name: stream, param: stream, description: Stream name.}",
			[]string{`arg "stream": parameter "stream" is part of the path of listRecords`}},
		{"by_hand names no parameter", "cursor: decoded from the page cursor", "cursor: decoded from the page cursor\n      page: nothing",
			[]string{`tool "list_items" by_hand "page": no operation of the tool (listRecords) has that parameter`}},
		{"by_hand without a reason", "cursor: decoded from the page cursor", `cursor: ""`,
			[]string{`tool "list_items" by_hand "cursor": say why the handler sets it`}},
		{"unknown also_operations", "operation: listRecords", "operation: listRecords\n    also_operations: [listThings]",
			[]string{`tool "list_items": also_operations names "listThings", which is not in the OpenAPI document`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(base), tc.old) {
				t.Fatalf("catalog does not hold %q", tc.old)
			}
			dir := t.TempDir()
			catalog := filepath.Join(dir, "catalog.yaml")
			if err := os.WriteFile(catalog, []byte(strings.Replace(string(base), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			opt := rscallsOptions(modulePath + "/gen/rsclient")
			opt.catalog = catalog
			_, _, err := generate(opt)
			var lint *lintError
			if !errors.As(err, &lint) {
				t.Fatalf("generate error = %v, want a lint error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}
