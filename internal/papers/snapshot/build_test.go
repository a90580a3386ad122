package snapshot

import (
	"database/sql"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/textnorm"
)

func openRW(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.String)
	}
	return out
}

func TestPaperID(t *testing.T) {
	tests := []struct{ key, want string }{
		// Values computed independently (Python hashlib).
		{"abc", "172919eae762793958c6126d985d5480"},
		{KeyViT, "cac723451c36d030bd1cfe72b38b42b4"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			got := PaperID(tc.key)
			if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(got) {
				t.Fatalf("PaperID(%q) = %q is not 32 lowercase hex characters", tc.key, got)
			}
			if got != tc.want {
				t.Fatalf("PaperID(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

func TestBuildFixture(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "current"
		if legacy {
			name = "legacy"
		}
		t.Run(name, func(t *testing.T) {
			snap, err := BuildFixture(t.TempDir(), legacy)
			if err != nil {
				t.Fatal(err)
			}
			db := openRW(t, snap.DBPath)
			if n := queryStrings(t, db, "SELECT count(*) FROM paper"); n[0] != "30" {
				t.Fatalf("papers = %s, want 30", n[0])
			}
			tables := queryStrings(t, db, "SELECT name FROM sqlite_master WHERE type='table' AND name='paper_bibtex'")
			cols := queryStrings(t, db, "SELECT name FROM pragma_table_info('paper') WHERE name='doi'")
			if legacy != (len(tables) == 0) || legacy != (len(cols) == 0) {
				t.Fatalf("legacy=%v but paper_bibtex tables %v, doi columns %v", legacy, tables, cols)
			}
			for _, id := range queryStrings(t, db, "SELECT paper_id FROM paper") {
				if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
					t.Errorf("paper_id %q is not 32 hex characters", id)
				}
			}
			for _, p := range queryStrings(t, db, "SELECT summary_preview FROM paper") {
				if n := utf8.RuneCountInString(p); n > PreviewChars || n == 0 {
					t.Errorf("summary_preview has %d characters: %q", n, p)
				}
			}
		})
	}
}

// TestFixtureFacets checks the facet counts against a count made here from
// Fixture() itself, and the skew the tests rely on.
func TestFixtureFacets(t *testing.T) {
	snap, err := BuildFixture(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	db := openRW(t, snap.DBPath)
	count := map[string]int{}
	for _, p := range Fixture() {
		for _, a := range p.Authors {
			count[textnorm.FacetValue(a)]++
		}
	}
	type kv struct {
		v string
		n int
	}
	var want []kv
	for v, n := range count {
		want = append(want, kv{v, n})
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].n != want[j].n {
			return want[i].n > want[j].n
		}
		return want[i].v < want[j].v
	})
	rows, err := db.Query("SELECT value, paper_count FROM author ORDER BY paper_count DESC, value ASC")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []kv
	for rows.Next() {
		var e kv
		if err := rows.Scan(&e.v, &e.n); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if len(got) != len(want) {
		t.Fatalf("%d authors, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("author %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	skew := []kv{{"alice zhang", 9}, {"bob li", 6}, {"carol wu", 6}, {"dan kim", 4}, {"erin park", 3}, {"frank chen", 3}}
	for i, s := range skew {
		t.Run(s.v, func(t *testing.T) {
			if got[i] != s {
				t.Fatalf("rank %d = %+v, want %+v", i+1, got[i], s)
			}
		})
	}
	kw := queryStrings(t, db, "SELECT value || '=' || paper_count FROM keyword WHERE value IN ('transformer', 'vision transformer') ORDER BY value")
	if strings.Join(kw, ",") != "transformer=6,vision transformer=3" {
		t.Fatalf("keyword counts %v", kw)
	}
}

func TestFixtureAssets(t *testing.T) {
	snap, err := BuildFixture(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	db := openRW(t, snap.DBPath)
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(snap.AssetsDir, filepath.FromSlash(rel)))
		return err == nil
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(snap.AssetsDir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	vit := PaperID(KeyViT)
	long := PaperID(KeyLongSource)
	tests := []struct {
		name string
		ok   func() bool
	}{
		{"preferred summary equals its template file", func() bool {
			return read(assets.PreferredSummaryPath(vit)) == read(assets.TemplateSummaryPath(vit, TemplateDeepRead))
		}},
		{"every listed template has a file but the omitted one", func() bool {
			rows := queryStrings(t, db, "SELECT paper_id || '/' || template_tag FROM paper_summary")
			missing := 0
			for _, r := range rows {
				id, tpl, _ := strings.Cut(r, "/")
				if !exists(assets.TemplateSummaryPath(id, tpl)) {
					missing++
					if id != PaperID(KeyMissingAsset) || tpl != TemplateDeepRead {
						return false
					}
				}
			}
			return missing == 1
		}},
		{"broken summary is not JSON", func() bool {
			return !strings.HasSuffix(strings.TrimSpace(read(assets.TemplateSummaryPath(PaperID(KeyBrokenSummary), TemplateCritical))), "}")
		}},
		{"long source over 60000 characters", func() bool {
			h := queryStrings(t, db, "SELECT source_md_content_hash FROM paper WHERE paper_id = ?", long)[0]
			src := read(assets.SourcePath(h))
			return utf8.RuneCountInString(src) > 60000 && strings.Contains(src, LongSourceEndMarker)
		}},
		{"no-source paper has a NULL hash", func() bool {
			return queryStrings(t, db, "SELECT count(*) FROM paper WHERE source_md_content_hash IS NULL")[0] == "1" &&
				queryStrings(t, db, "SELECT count(*) FROM paper WHERE paper_id = ? AND source_md_content_hash IS NULL", PaperID(KeyNoSource))[0] == "1"
		}},
		{"CJK translations written", func() bool {
			rows := queryStrings(t, db, "SELECT lang || ':' || md_content_hash FROM paper_translation WHERE paper_id = ? ORDER BY lang", vit)
			if len(rows) != 2 {
				return false
			}
			for _, r := range rows {
				lang, h, _ := strings.Cut(r, ":")
				if !exists(assets.TranslationPath(lang, h)) {
					return false
				}
			}
			return strings.Contains(read(assets.TranslationPath("zh", strings.Split(rows[1], ":")[1])), "视觉变换器")
		}},
		{"CJK spaced in the full-text index", func() bool {
			title := queryStrings(t, db, "SELECT title FROM paper_fts WHERE paper_id = ?", PaperID(KeyChinese))[0]
			return strings.HasPrefix(title, "视 觉 变 换 器")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok() {
				t.Fatal("does not hold")
			}
		})
	}
}

func TestBuildRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	if _, err := Build(dir, Generated(3, 1), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(dir, Generated(3, 1), Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second build: %v", err)
	}
}

func TestBuildRejectsBadPapers(t *testing.T) {
	good := Generated(1, 7)[0]
	tests := []struct {
		name   string
		mutate func(p *Paper)
		want   string
	}{
		{"no key", func(p *Paper) { p.Key = "" }, "key and title"},
		{"no summary", func(p *Paper) { p.Summaries = nil }, "at least one summary"},
		{"preferred missing", func(p *Paper) { p.Preferred = "nope" }, "preferred template"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.mutate(&p)
			if _, err := Build(t.TempDir(), []Paper{p}, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	long := strings.Repeat("word ", 200)
	tests := []struct {
		name, in string
		check    func(string) bool
	}{
		{"short kept", "## Summary\n\nA **short** text.", func(s string) bool { return s == "Summary A short text." }},
		{"long cut with ellipsis", long, func(s string) bool {
			return utf8.RuneCountInString(s) <= PreviewChars && strings.HasSuffix(s, "…")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Preview(tc.in); !tc.check(got) {
				t.Fatalf("Preview = %q", got)
			}
		})
	}
}
