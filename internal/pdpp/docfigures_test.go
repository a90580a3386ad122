package pdpp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// The documents whose tool lists and figures TestDocsAgreeWithCatalog checks.
const (
	readmeDoc     = "../../README.md"
	toolsDoc      = "../../docs/tools.md"
	benchmarksDoc = "../../docs/benchmarks.md"
)

// catalogFacts are the figures the docs quote, taken from the generated catalog and
// measured on the wire as a client receives them.
type catalogFacts struct {
	tools    map[string]int // tools per toolset; "" is every tool
	listOld  map[string]int // tools/list bytes up to 2025-11-25, per exposure ("" all, "read")
	listNew  map[string]int // the same at 2026-07-28, with the longest server identity
	listDev  int            // all tools at 2026-07-28, the default name and a devel build
	budget   map[string]int // the catalog's tools/list budgets, keys as listOld, "new"+key at 2026-07-28
	instrLen int            // bytes of the initialize instructions
}

// measureToolsList returns the bytes of tools/list as the official SDK client receives
// them over stdio, from a server with the given identity and toolsets, at each
// revision in versions, and fails if they differ between those revisions.
func measureToolsList(t *testing.T, toolsets []string, name, version string, versions []string) int {
	t.Helper()
	// tools/list reaches no RS; one that answers every request 404 stands in.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	source := func(context.Context) (string, error) { return tokClient, nil }
	rsClient, err := rs.New(srv.URL, source, rs.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	size := -1
	for _, v := range versions {
		s := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rsClient, Token: source}), pdpp.ServerOptions{Name: name, Version: version, Toolsets: toolsets})
		n := len(connectWire(t, s, "stdio", v).listTools(t))
		if size >= 0 && n != size {
			t.Fatalf("tools/list of %v is %d bytes at %s, %d at an earlier revision of the same group", toolsets, n, v, size)
		}
		size = n
	}
	if size < 0 {
		t.Fatal("no protocol revision to measure at")
	}
	return size
}

func measureCatalog(t *testing.T) catalogFacts {
	t.Helper()
	var old, modern []string
	for _, v := range transport.DefaultProtocolVersions() {
		if mcp.IsModernProtocol(v) {
			modern = append(modern, v)
		} else {
			old = append(old, v)
		}
	}
	f := catalogFacts{
		tools:   map[string]int{"": len(mcptools.Tools())},
		listOld: map[string]int{}, listNew: map[string]int{},
		budget: map[string]int{
			"": mcptools.MaxToolsListBytes, "read": mcptools.ToolsetListBudget("read"),
			"new": mcptools.MaxToolsListBytesNewest, "newread": mcptools.ToolsetListBudgetNewest("read"),
		},
		instrLen: len(mcptools.Instructions),
	}
	for _, set := range mcptools.Toolsets() {
		f.tools[set] = len(catalogNames([]string{set}))
	}
	for key, toolsets := range map[string][]string{"": nil, "read": {"read"}} {
		f.listOld[key] = measureToolsList(t, toolsets, wireServerName, wireServerVersion, old)
		f.listNew[key] = measureToolsList(t, toolsets, wireServerName, wireServerVersion, modern)
	}
	f.listDev = measureToolsList(t, nil, mcptools.ServerName, "devel", modern)
	return f
}

// docClaim is one sentence of a document that quotes catalog figures: pattern's
// groups, in order, must read as want's numbers (digits with thousands commas, or a
// number word). what says in a few words what the figures are.
type docClaim struct {
	doc, what string
	pattern   *regexp.Regexp
	want      func(catalogFacts) []string
}

var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
	"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}

// word spells n as the docs do in prose: a word up to twenty.
func word(n int) string {
	if n >= 0 && n < len(numberWords) {
		return numberWords[n]
	}
	return strconv.Itoa(n)
}

// thousands writes n with thousands commas, as the docs write byte figures.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// under is how far below budget a figure is, in percent with one decimal, as
// docs/benchmarks.md writes it.
func under(figure, budget int) string {
	return strconv.FormatFloat(100*float64(budget-figure)/float64(budget), 'f', 1, 64) + "%"
}

func nums(vs ...any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// docClaims are the tool counts and byte figures of README.md, docs/tools.md and the
// tools/list row of docs/benchmarks.md. Each must be found: a claim reworded away fails
// too, and is then reworded here.
var docClaims = []docClaim{
	{readmeDoc, "read tools", regexp.MustCompile(`The (\w+) read tools \(toolset ` + "`read`" + `\)`),
		func(f catalogFacts) []string { return nums(word(f.tools["read"])) }},
	{readmeDoc, "event tools", regexp.MustCompile(`The (\w+) event-subscription tools \(toolset ` + "`events`" + `\)`),
		func(f catalogFacts) []string { return nums(word(f.tools["events"])) }},
	{readmeDoc, "--toolsets read", regexp.MustCompile(`exposes only the (\w+) read\s+tools`),
		func(f catalogFacts) []string { return nums(word(f.tools["read"])) }},
	{readmeDoc, "tools/list bytes, tools, read bytes", regexp.MustCompile("`tools/list`: ([\\d,]+) bytes for all (\\d+) tools, ([\\d,]+) for `--toolsets read`"),
		func(f catalogFacts) []string {
			return nums(thousands(f.listOld[""]), f.tools[""], thousands(f.listOld["read"]))
		}},
	{readmeDoc, "tools/list bytes at 2026-07-28 (all, read, default identity)", regexp.MustCompile(`2026-07-28 at most ([\d,]+) and ([\d,]+) \(a 64-byte server name and version\), ([\d,]+) with\s+the default name`),
		func(f catalogFacts) []string {
			return nums(thousands(f.listNew[""]), thousands(f.listNew["read"]), thousands(f.listDev))
		}},
	{readmeDoc, "instructions bytes", regexp.MustCompile("`initialize` instructions ([\\d,]+) bytes"),
		func(f catalogFacts) []string { return nums(thousands(f.instrLen)) }},

	{toolsDoc, "read tools", regexp.MustCompile(`The (\w+) read\s+tools \(toolset ` + "`read`" + `\)`),
		func(f catalogFacts) []string { return nums(word(f.tools["read"])) }},
	{toolsDoc, "event tools", regexp.MustCompile(`These (\w+) tools map to`),
		func(f catalogFacts) []string { return nums(word(f.tools["events"])) }},
	{toolsDoc, "--toolsets read", regexp.MustCompile(`exposes only the (\w+) read\s+tools`),
		func(f catalogFacts) []string { return nums(word(f.tools["read"])) }},
	{toolsDoc, "footprint row --toolsets read (tools, bytes, budget)", regexp.MustCompile("\\| `tools/list`, `--toolsets read` \\((\\d+) tools\\) \\| ([\\d,]+) \\| ([\\d,]+) \\|"),
		func(f catalogFacts) []string {
			return nums(f.tools["read"], thousands(f.listOld["read"]), thousands(f.budget["read"]))
		}},
	{toolsDoc, "footprint row all tools (tools, bytes, budget)", regexp.MustCompile("\\| `tools/list`, all (\\d+) tools \\| ([\\d,]+) \\| ([\\d,]+) \\|"),
		func(f catalogFacts) []string {
			return nums(f.tools[""], thousands(f.listOld[""]), thousands(f.budget[""]))
		}},
	{toolsDoc, "footprint row instructions (bytes, budget)", regexp.MustCompile(`\| instructions \([^|]*\) \| ([\d,]+) \| ([\d,]+) \|`),
		func(f catalogFacts) []string {
			return nums(thousands(f.instrLen), thousands(mcptools.MaxInstructionsBytes))
		}},

	{benchmarksDoc, "tools/list target, measure and verdict", regexp.MustCompile("\\| `tools/list` on the wire ≤ ([\\d,]+) bytes for all (\\d+) tools and ≤ ([\\d,]+) for the `read` toolset up to 2025-11-25; ≤ ([\\d,]+) / ([\\d,]+) at 2026-07-28 \\| ([\\d,]+) and ([\\d,]+) bytes; at 2026-07-28 at most ([\\d,]+) and ([\\d,]+) \\([^:]*: ([\\d,]+)\\)[^|]*\\| met, ([\\d.]+%) and ([\\d.]+%) under \\(([\\d.]+%) and ([\\d.]+%) at 2026-07-28\\) \\|"),
		func(f catalogFacts) []string {
			return nums(thousands(f.budget[""]), f.tools[""], thousands(f.budget["read"]), thousands(f.budget["new"]), thousands(f.budget["newread"]),
				thousands(f.listOld[""]), thousands(f.listOld["read"]), thousands(f.listNew[""]), thousands(f.listNew["read"]), thousands(f.listDev),
				under(f.listOld[""], f.budget[""]), under(f.listOld["read"], f.budget["read"]),
				under(f.listNew[""], f.budget["new"]), under(f.listNew["read"], f.budget["newread"]))
		}},
}

// docToolTable is a section of a document whose table rows name a toolset's tools, in
// catalog order, in their first column (several to a row when separated by commas).
type docToolTable struct {
	doc, heading, toolset string
}

var docToolTables = []docToolTable{
	{readmeDoc, "## Tools", "read"},
	{toolsDoc, "## Read tools (toolset `read`)", "read"},
	{toolsDoc, "## Event subscriptions (toolset `events`)", "events"},
}

// docToolLists are sections that name a toolset's tools in prose, each in backquotes.
var docToolLists = []docToolTable{
	{readmeDoc, "## Tools", "events"},
}

var backquoted = regexp.MustCompile("`([a-z_]+)`")

// section returns the text from a line equal to heading to the next heading of the same
// or a higher level.
func section(doc, heading string) (string, bool) {
	lines := strings.Split(doc, "\n")
	level := strings.Index(heading, " ")
	for i, line := range lines {
		if line != heading {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if h := strings.Index(lines[j], " "); h > 0 && h <= level && strings.Trim(lines[j][:h], "#") == "" {
				end = j
				break
			}
		}
		return strings.Join(lines[i+1:end], "\n"), true
	}
	return "", false
}

// TestDocsAgreeWithCatalog checks the tool tables, tool counts and tools/list figures
// of README.md, docs/tools.md and docs/benchmarks.md against the generated catalog and
// what a client receives, so a tool added, moved between toolsets or described longer
// fails here with the sentence to change.
func TestDocsAgreeWithCatalog(t *testing.T) {
	docs := map[string]string{}
	for _, path := range []string{readmeDoc, toolsDoc, benchmarksDoc} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs[path] = string(raw)
	}
	name := func(path string) string { return strings.TrimPrefix(path, "../../") }

	t.Run("tables", func(t *testing.T) {
		for _, tab := range docToolTables {
			text, ok := section(docs[tab.doc], tab.heading)
			if !ok {
				t.Errorf("%s: no section %q; update docToolTables if it was renamed", name(tab.doc), tab.heading)
				continue
			}
			var listed []string
			for _, line := range strings.Split(text, "\n") {
				cells := strings.Split(line, "|")
				if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
					continue
				}
				for _, m := range backquoted.FindAllStringSubmatch(cells[1], -1) {
					listed = append(listed, m[1])
				}
			}
			if want := catalogOrder(tab.toolset); !slices.Equal(listed, want) {
				t.Errorf("%s, section %q: the table lists %v; the catalog's toolset %s is %v (spec/tools.yaml order): add, remove or reorder rows to match",
					name(tab.doc), tab.heading, listed, tab.toolset, want)
			}
		}
		for _, l := range docToolLists {
			text, _ := section(docs[l.doc], l.heading)
			for _, tool := range catalogOrder(l.toolset) {
				if !strings.Contains(text, "`"+tool+"`") {
					t.Errorf("%s, section %q does not name %s of toolset %s: add it", name(l.doc), l.heading, tool, l.toolset)
				}
			}
		}
	})

	t.Run("figures", func(t *testing.T) {
		facts := measureCatalog(t)
		t.Logf("catalog: %v tools; tools/list %v bytes (2026-07-28: %v, default identity %d); instructions %d bytes",
			facts.tools, facts.listOld, facts.listNew, facts.listDev, facts.instrLen)
		for _, c := range docClaims {
			matches := c.pattern.FindAllStringSubmatchIndex(docs[c.doc], -1)
			if len(matches) == 0 {
				t.Errorf("%s: no sentence matches the claim %q (%s); if it was reworded, update docClaims", name(c.doc), c.what, c.pattern)
				continue
			}
			want := c.want(facts)
			for _, m := range matches {
				doc := docs[c.doc]
				line := 1 + strings.Count(doc[:m[0]], "\n")
				var got []string
				for g := 1; 2*g < len(m); g++ {
					got = append(got, doc[m[2*g]:m[2*g+1]])
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s:%d (%s) says %s; the catalog and the wire say %s: change the text to match",
						name(c.doc), line, c.what, strings.Join(got, ", "), strings.Join(want, ", "))
				}
			}
		}
	})
}

// catalogOrder lists a toolset's tools in catalog order.
func catalogOrder(set string) []string {
	var names []string
	for _, tool := range mcptools.Tools() {
		if mcptools.Toolset(tool.Name) == set {
			names = append(names, tool.Name)
		}
	}
	return names
}
