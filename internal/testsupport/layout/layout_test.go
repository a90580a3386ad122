package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/pdpp-mcp/pdpp-mcp/"

// group names the part of the tree a package belongs to: a product group under
// internal/, one generated package, or the top folder (cmd, tools, …).
func group(path string) string {
	p := strings.TrimPrefix(path, module)
	parts := strings.Split(p, "/")
	switch {
	case parts[0] == "internal" && len(parts) > 1:
		return "internal/" + parts[1]
	case parts[0] == "gen" && len(parts) > 1:
		return "gen/" + parts[1]
	default:
		return parts[0]
	}
}

// allowed lists, for each group, the other groups its non-test code may
// import. A group may always import itself. Groups absent here (cmd, tools,
// internal/testsupport) are unrestricted, except for the test-support rule.
var allowed = map[string][]string{
	// The serving kit both servers use imports neither product.
	"internal/mcpserver": {},
	// The PDPP adapter: the kit, its generated catalog and RS client, and the
	// demo RS (the demo subcommand serves one).
	"internal/pdpp": {"internal/mcpserver", "gen/mcptools", "gen/rsclient", "internal/demors"},
	// The paper server imports nothing of the PDPP adapter.
	"internal/papers": {"internal/mcpserver", "gen/papertools"},
	// The demo RS implements the generated strict server, nothing more.
	"internal/demors": {"gen/rsserver", "internal/mcpserver"},
	"gen/mcptools":    {"internal/mcpserver", "gen/rsclient"},
	"gen/papertools":  {"internal/mcpserver"},
	"gen/rsclient":    {},
	"gen/rsserver":    {},
}

// testForbidden lists, for each group, the groups its tests may not import
// either: the products stay apart in their tests too. (Kit tests may use a
// generated catalog as a fixture.)
var testForbidden = map[string][]string{
	"internal/mcpserver": {"internal/pdpp", "internal/papers"},
	"internal/papers":    {"internal/pdpp", "gen/mcptools", "gen/rsclient"},
	"internal/pdpp":      {"internal/papers", "gen/papertools"},
}

// data are the packages that only embed the project's contracts (spec/,
// templates/): any group may read them.
var data = []string{"spec", "templates"}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages of the module; is the test run inside it?", len(pkgs))
	}
	return pkgs
}

func own(imports []string) []string {
	var out []string
	for _, imp := range imports {
		if strings.HasPrefix(imp, module) {
			out = append(out, imp)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for _, p := range pkgs {
		from := group(p.ImportPath)
		t.Run(strings.TrimPrefix(p.ImportPath, module), func(t *testing.T) {
			for _, imp := range own(p.Imports) {
				to := group(imp)
				if to == from || contains(data, to) {
					continue
				}
				if to == "internal/testsupport" && from != "tools" {
					t.Errorf("%s imports %s: test support is for tests and tools/ only", p.ImportPath, imp)
				}
				if rule, ok := allowed[from]; ok && !contains(rule, to) {
					t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, imp, from, rule)
				}
			}
			for _, imp := range own(append(append([]string{}, p.TestImports...), p.XTestImports...)) {
				if to := group(imp); contains(testForbidden[from], to) {
					t.Errorf("a test of %s imports %s: tests of %s may not import %v", p.ImportPath, imp, from, testForbidden[from])
				}
			}
		})
	}
}

// TestGroupsAreFew keeps internal/ to a handful of top-level groups, so the
// tree says what the project is made of.
func TestGroupsAreFew(t *testing.T) {
	groups := map[string]bool{}
	for _, p := range listPackages(t) {
		if g := group(p.ImportPath); strings.HasPrefix(g, "internal/") {
			groups[g] = true
		}
	}
	if len(groups) > 7 {
		t.Errorf("internal/ has %d top-level groups, want at most 7: %v", len(groups), groups)
	}
	for g := range groups {
		if _, ok := allowed[g]; !ok && g != "internal/testsupport" {
			t.Errorf("group %s has no import rule: add it to allowed (and to docs/architecture.md)", g)
		}
	}
}
