package pdpp_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenCases are the representative results whose content[] text is kept
// in testdata/<name>.golden. They run against the demo RS with fixed tokens.
var goldenCases = []struct {
	name string
	tool string
	args map[string]any
}{
	{"schema_compact", "schema", map[string]any{}},
	{"search_lexical", "search", map[string]any{"q": "needle5", "streams": []string{"transcripts"}}},
	{"search_mixed_page", "search", map[string]any{"q": "zephyrmarker", "limit": 3}},
	{"search_semantic", "search", map[string]any{"q": "weekly sync", "mode": "semantic", "limit": 2}},
	{"fetch_projected", "fetch", map[string]any{"id": connMain + "/transcripts:tr-5", "fields": []string{"id", "language", "created_at"}}},
	{"fetch_long", "fetch", map[string]any{"id": connMain + "/transcripts:tr-5"}},
	{"fetch_blob", "fetch", map[string]any{"id": connNotes + "/notes:note-2"}},
	{"read_first_window", "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text"}},
	{"read_q_window", "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "q": "needle5", "before_chars": 200, "after_chars": 300}},
	{"read_last_window", "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "offset_chars": 20000}},
	{"read_small_field", "read_record_field", map[string]any{"id": connNotes + "/notes:note-4", "field_path": "title"}},
	{"query_records", "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2, "fields": []string{"id", "language", "created_at"}}},
	{"aggregate_grouped", "aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by": "language"}},
	{"error_ambiguous", "fetch", map[string]any{"id": "transcripts:tr-5"}},
}

var cursorRE = regexp.MustCompile(`"cursor":"[^"]*"`)

// normalizeGolden replaces cursor strings, the only part of the text allowed
// to differ between runs.
func normalizeGolden(s string) string {
	return cursorRE.ReplaceAllString(s, `"cursor":"<cursor>"`)
}

// renderGolden runs every golden case against a fresh demo RS.
func renderGolden(t *testing.T) map[string]string {
	t.Helper()
	h := newDemoHarness(t, tokClient)
	out := map[string]string{}
	for _, gc := range goldenCases {
		out[gc.name] = h.call(t, gc.tool, gc.args).Text
	}
	return out
}

func TestGoldenText(t *testing.T) {
	got := renderGolden(t)
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			path := filepath.Join("testdata", gc.name+".golden")
			text := normalizeGolden(got[gc.name])
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/pdpp -run TestGoldenText -update to create it)", err)
			}
			if text != string(want) {
				t.Errorf("content[] text of %s %s changed; review the diff and refresh with -update:\n%s", gc.tool, mustJSON(gc.args), firstDiff(string(want), text))
			}
		})
	}
}

// TestGoldenDeterministic renders the golden cases against two independent
// demo RS instances: apart from cursors, the text must be identical, and any
// cursor that differs is reported.
func TestGoldenDeterministic(t *testing.T) {
	a, b := renderGolden(t), renderGolden(t)
	for _, gc := range goldenCases {
		if a[gc.name] == b[gc.name] {
			continue
		}
		if normalizeGolden(a[gc.name]) != normalizeGolden(b[gc.name]) {
			t.Errorf("%s: text differs between two runs beyond cursors:\n%s", gc.name, firstDiff(a[gc.name], b[gc.name]))
		} else {
			t.Logf("%s: cursor strings differ between runs (normalized in golden files)", gc.name)
		}
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n- " + clip(w) + "\n+ " + clip(g)
		}
	}
	return "(no line differs)"
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
