package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// specDay is a copy of the real spec, catalog, instructions, evidence view
// source and committed gen/mcptools in a temporary folder, laid out as in
// the repository, for a maintainer's edit to be tried on.
type specDay struct {
	root string
	opt  options
}

func newSpecDay(t *testing.T) *specDay {
	t.Helper()
	root := t.TempDir()
	copyInto := func(from, to string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(repoRoot, from))
		if err != nil {
			t.Skipf("real file %s is not present: %v", from, err)
		}
		full := filepath.Join(root, to)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{realOptions.catalog, realOptions.openapi, realOptions.instructions, "internal/pdpp/view/evidence.html"} {
		copyInto(f, f)
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, realOptions.out))
	if err != nil {
		t.Skipf("committed %s is not present: %v", realOptions.out, err)
	}
	for _, e := range entries {
		copyInto(filepath.Join(realOptions.out, e.Name()), filepath.Join(realOptions.out, e.Name()))
	}
	d := &specDay{root: root, opt: realOptions}
	d.opt.catalog = filepath.Join(root, realOptions.catalog)
	d.opt.openapi = filepath.Join(root, realOptions.openapi)
	d.opt.instructions = filepath.Join(root, realOptions.instructions)
	d.opt.out = filepath.Join(root, realOptions.out)
	d.opt.rsclient = modulePath + "/gen/rsclient"
	return d
}

// edit replaces old with new in one of the copied files, which must hold it.
func (d *specDay) edit(t *testing.T, file, old, new string) {
	t.Helper()
	path := filepath.Join(d.root, file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s does not hold %q", file, old)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot reads every file under the copied folder but the spec.
func (d *specDay) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Dir(d.opt.out), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run runs mcpgen as go generate does and returns its exit code and
// stderr, failing the test if it changed anything under gen/.
func (d *specDay) run(t *testing.T, extra ...string) (int, string) {
	t.Helper()
	before := d.snapshot(t)
	args := []string{"-catalog", d.opt.catalog, "-openapi", d.opt.openapi, "-instructions", d.opt.instructions,
		"-rsclient", d.opt.rsclient, "-out", d.opt.out, "-lint"}
	var stderr bytes.Buffer
	code := run(append(args, extra...), &stderr)
	after := d.snapshot(t)
	if len(after) != len(before) {
		t.Errorf("gen/ holds %d files after the run, %d before", len(after), len(before))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("the run changed %s", p)
		}
	}
	return code, stderr.String()
}

// TestSpecDayRefusals tries a maintainer's edits that must fail generation
// before anything is written, each with a message that names what is wrong
// and says what to do.
func TestSpecDayRefusals(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		old, new   string
		want       []string
		wantRegexp string
	}{
		{
			name: "anyOf parameter", file: realOptions.openapi,
			old: "      schema:\n        type: array\n        minItems: 1\n        items:\n          type: string\n          minLength: 1\n    SearchLimit:",
			new: "      schema:\n        anyOf:\n          - type: string\n          - type: array\n            items: {type: string}\n    SearchLimit:",
			want: []string{"catalog has 1 problem(s)", `OpenAPI parameter "streams" (in query) of searchRecordsHybrid, searchRecordsLexical, searchRecordsSemantic: its schema uses anyOf, which oapi-codegen cannot generate for a parameter`,
				"type: array, items: {type: string}, style: form, explode: true", "Nothing was written"},
		},
		{
			name: "misspelt toolset", file: realOptions.catalog,
			old: "    title: Aggregate a stream\n    toolset: read", new: "    title: Aggregate a stream\n    toolset: raed",
			want: []string{`tool "aggregate": toolset "raed" is not declared under toolsets (declared: events, read); did you mean "read"?`},
		},
		{
			name: "type contradicts the spec", file: realOptions.catalog,
			old: "      - name: limit\n        param: limit\n        description: Page size.", new: "      - name: limit\n        param: limit\n        type: string\n        description: Page size.",
			want: []string{`tool "query_records" arg "limit": type string contradicts the OpenAPI type of parameter "limit" of listRecords (integer); drop type`},
		},
		{
			name: "tools/list budget", file: realOptions.catalog,
			old: "  max_tools_list_bytes: 15232", new: "  max_tools_list_bytes: 12000",
			wantRegexp: `tools/list is (\d+) bytes, budget 12000: (\d+) bytes over; no tool's entry changed against the committed [^ ]*FOOTPRINT.md; largest tools \(entry bytes\): read_record_field \d+, `,
		},
		{
			name: "tools/list budget after a longer description", file: realOptions.catalog,
			old: "  max_tools_list_bytes: 15232", new: "  max_tools_list_bytes: 12000",
			want: []string{`change per tool against the committed`, `query_records +9 (1849 -> 1858)`},
		},
		{
			name: "description rule", file: realOptions.catalog,
			old: "Compute a metric over one stream, optionally by field or time bucket.\n      Read-only;", new: "Compute a metric over one stream, optionally by field or time bucket.\n      Reads;",
			want: []string{`tool "aggregate": description does not say "Read-only", though readOnlyHint is true (description_rules.read_only_says)`},
		},
		{
			name: "toolset hints", file: realOptions.catalog,
			old:  "    hints: {readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false}",
			new:  "    hints: {readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true}",
			want: []string{`tool "schema": openWorldHint is false, but every tool of toolset "read" has true (toolsets.read.hints)`},
		},
		{
			name: "declared toolset without tools", file: realOptions.catalog,
			old: "  events: {}\n", new: "  events: {}\n  admin: {}\n",
			want: []string{`toolsets: "admin" has no tools; remove it or give it a tool`},
		},
		{
			name: "endpoint not named", file: realOptions.catalog,
			old: "Read-only; GET /v1/streams/{stream}/aggregate.", new: "Read-only; GET /v1/stream/{stream}/aggregate.",
			want: []string{`tool "aggregate": description does not name its RS endpoint "GET /v1/streams/{stream}/aggregate" (description_rules.name_endpoint)`},
		},
		{
			name: "rules of use not pointed to", file: realOptions.catalog,
			old: "Filters: server instructions.", new: "Filters: see filter.",
			want: []string{`tool "aggregate": description points to none of "server instructions", "discover_event_subscription_capabilities", where the rules of use live (description_rules.points_to)`},
		},
		{
			name: "forbidden word", file: realOptions.catalog,
			old: "Filters: server instructions.", new: "Filters: server instructions. Hidden totals too.",
			want: []string{`tool "aggregate": description says "hidden" (description_rules.forbidden)`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newSpecDay(t)
			d.edit(t, tc.file, tc.old, tc.new)
			if strings.Contains(tc.name, "longer description") {
				// query_records's entry grows by 9 bytes.
				d.edit(t, realOptions.catalog, "List one stream's records.", "List one stream's records here.")
				d.edit(t, realOptions.catalog, "        description: Sort order.", "        description: Sort order now.")
			}
			code, stderr := d.run(t)
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if tc.wantRegexp != "" {
				m := regexp.MustCompile(tc.wantRegexp).FindStringSubmatch(stderr)
				if m == nil {
					t.Fatalf("stderr does not match %s:\n%s", tc.wantRegexp, stderr)
				}
				size, _ := strconv.Atoi(m[1])
				over, _ := strconv.Atoi(m[2])
				if over != size-12000 {
					t.Errorf("overage %d, want %d", over, size-12000)
				}
			}
		})
	}
}

// TestSpecDayYAMLErrorLine checks a YAML slip is reported by file and by
// the line that holds it, not by the line its block starts at.
func TestSpecDayYAMLErrorLine(t *testing.T) {
	for _, file := range []string{realOptions.catalog, realOptions.openapi} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			d := newSpecDay(t)
			data, err := os.ReadFile(filepath.Join(d.root, file))
			if err != nil {
				t.Fatal(err)
			}
			// Indent the second line of the first list item that spans
			// two lines one space less than its first.
			lines := strings.Split(string(data), "\n")
			slip := 0
			for i := 1; i < len(lines); i++ {
				prev := lines[i-1]
				dash := strings.Index(prev, "- name: ")
				if dash >= 0 && strings.TrimSpace(prev[:dash]) == "" && strings.HasPrefix(lines[i], strings.Repeat(" ", dash+2)) &&
					lines[i][dash+2] != ' ' && i > 100 {
					lines[i] = lines[i][1:]
					slip = i + 1
					break
				}
			}
			if slip == 0 {
				t.Fatal("found no list item to break")
			}
			if err := os.WriteFile(filepath.Join(d.root, file), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stderr := d.run(t)
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr:\n%s", code, stderr)
			}
			if want := filepath.Base(file) + ":" + strconv.Itoa(slip) + ": "; !strings.Contains(stderr, want) {
				t.Errorf("stderr does not name %q:\n%s", want, stderr)
			}
		})
	}
}

// TestSpecDayBudgetWarning checks a size within 5% of its budget is warned
// about on stderr while generation succeeds.
func TestSpecDayBudgetWarning(t *testing.T) {
	d := newSpecDay(t)
	_, c, err := generate(d.opt)
	if err != nil {
		t.Fatal(err)
	}
	budget := c.footprint.ToolsListBytes * 100 / 97 // 3% headroom
	d.edit(t, realOptions.catalog, "  max_tools_list_bytes: 15232", "  max_tools_list_bytes: "+strconv.Itoa(budget))
	code, stderr := d.run(t)
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr)
	}
	want := "mcpgen: warning: " + filepath.Base(realOptions.catalog) + ": tools/list is " + strconv.Itoa(c.footprint.ToolsListBytes) +
		" bytes, within 5% of its budget " + strconv.Itoa(budget)
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	if strings.Count(stderr, "warning") != 1 {
		t.Errorf("want one warning:\n%s", stderr)
	}
}
