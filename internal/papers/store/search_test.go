package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/textnorm"
)

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.PaperID
	}
	return out
}

func TestSearch(t *testing.T) {
	s := openFixture(t)
	ctx := context.Background()
	tests := []struct {
		name      string
		query     string
		wantFirst string // key of the expected best hit
		wantTotal int
		snippet   string // must appear in the best hit's snippet
	}{
		{"title match ranks first", "vision transformer", snapshot.KeyViT, 4, "**vision"},
		{"graph attention", "graph attention", "graph-attention", 1, "**Graph Attention**"},
		{"chinese phrase", "医学图像", snapshot.KeyChinese, 1, "**医学图像**"},
		{"chinese title beats translations", "视觉变换器", snapshot.KeyChinese, 3, "**视觉变换器**"},
		{"japanese", "大規模言語モデル", snapshot.KeyJapanese, 1, "**大規模言語モデル**"},
		{"source text", snapshot.LongSourceEndMarker, snapshot.KeyLongSource, 1, "**" + snapshot.LongSourceEndMarker + "**"},
		{"doi in metadata", "10.48550/fixture.2017.017", "graph-convolution", 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := s.Search(ctx, tc.query, 10, 0)
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != tc.wantTotal || len(page.Hits) != min(tc.wantTotal, 10) {
				t.Fatalf("total %d with %d hits, want %d", page.Total, len(page.Hits), tc.wantTotal)
			}
			if page.Hits[0].PaperID != snapshot.PaperID(tc.wantFirst) {
				t.Fatalf("first hit %q (%s), want %s", page.Hits[0].Title, page.Hits[0].PaperID, tc.wantFirst)
			}
			if !strings.Contains(page.Hits[0].SnippetMarkdown, tc.snippet) {
				t.Fatalf("snippet %q lacks %q", page.Hits[0].SnippetMarkdown, tc.snippet)
			}
			for i := 1; i < len(page.Hits); i++ {
				if page.Hits[i].Score < page.Hits[i-1].Score {
					t.Fatalf("hits not ordered by relevance: %v then %v", page.Hits[i-1].Score, page.Hits[i].Score)
				}
			}
		})
	}
}

func TestSearchOperatorsAndPaging(t *testing.T) {
	s := openFixture(t)
	ctx := context.Background()
	diffusion, _ := s.Search(ctx, "diffusion", 100, 0)
	graph, _ := s.Search(ctx, "graph", 100, 0)
	both, err := s.Search(ctx, "diffusion OR graph", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	union := map[string]bool{}
	for _, h := range append(diffusion.Hits, graph.Hits...) {
		union[h.PaperID] = true
	}
	if both.Total != len(union) || both.Total <= diffusion.Total {
		t.Fatalf("OR total %d, union %d, diffusion %d", both.Total, len(union), diffusion.Total)
	}
	and, _ := s.Search(ctx, "diffusion graph", 100, 0)
	if and.Total != 0 {
		t.Fatalf("implicit AND of disjoint words found %d", and.Total)
	}
	// Pages of 2 put together give the single page, in the same order.
	var paged []string
	for off := 0; off < both.Total; off += 2 {
		p, err := s.Search(ctx, "diffusion OR graph", 2, off)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != both.Total {
			t.Fatalf("total %d on page at %d, want %d", p.Total, off, both.Total)
		}
		paged = append(paged, ids(p.Hits)...)
	}
	if !slices.Equal(paged, ids(both.Hits)) {
		t.Fatalf("paged %v\nwhole %v", paged, ids(both.Hits))
	}
	past, err := s.Search(ctx, "diffusion OR graph", 10, 500)
	if err != nil || len(past.Hits) != 0 || past.Total != both.Total {
		t.Fatalf("past the end: %+v %v", past, err)
	}
	empty, err := s.Search(ctx, "?!", 10, 0)
	if err != nil || empty.Total != 0 {
		t.Fatalf("no terms: %+v %v", empty, err)
	}
}

func TestSearchByKeyword(t *testing.T) {
	s := openFixture(t)
	ctx := context.Background()
	// Expected papers: computed here from the fixture definition.
	expect := func(sub string) []string {
		var out []string
		for _, p := range snapshot.Fixture() {
			for _, v := range append(slices.Clone(p.Keywords), p.Tags...) {
				if strings.Contains(textnorm.FacetValue(v), sub) {
					out = append(out, snapshot.PaperID(p.Key))
					break
				}
			}
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name, keyword, norm string
		mustHave            []string
	}{
		{"substring finds vision transformer and the tag", "transformer", "transformer", []string{snapshot.KeyViT, snapshot.KeyDecision, "attention-layers"}},
		{"case and spaces ignored", "  Vision   TRANSFORMER ", "vision transformer", []string{snapshot.KeyViT, "shifted-windows", "data-efficient-image"}},
		{"cjk keyword", "医学", "医学", []string{snapshot.KeyChinese}},
		{"like wildcards are literal", "_%", "_%", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := s.SearchByKeyword(ctx, tc.keyword, 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(page.Hits)
			sorted := slices.Clone(got)
			slices.Sort(sorted)
			if want := expect(tc.norm); !slices.Equal(sorted, want) || page.Total != len(want) {
				t.Fatalf("got %v (total %d), want %v", sorted, page.Total, want)
			}
			for _, k := range tc.mustHave {
				if !slices.Contains(got, snapshot.PaperID(k)) {
					t.Errorf("missing %s", k)
				}
			}
			for i, h := range page.Hits {
				if len(h.MatchedValues) == 0 || !strings.Contains(h.MatchedValues[0], tc.norm) {
					t.Errorf("hit %d matched values %v", i, h.MatchedValues)
				}
				if h.SnippetMarkdown == "" {
					t.Errorf("hit %d has no preview", i)
				}
				if i > 0 && h.Year > page.Hits[i-1].Year {
					t.Errorf("not newest first: %s after %s", h.Year, page.Hits[i-1].Year)
				}
			}
		})
	}
	t.Run("paging", func(t *testing.T) {
		all, _ := s.SearchByKeyword(ctx, "transformer", 100, 0)
		first, _ := s.SearchByKeyword(ctx, "transformer", 4, 0)
		second, _ := s.SearchByKeyword(ctx, "transformer", 4, 4)
		if !slices.Equal(append(ids(first.Hits), ids(second.Hits)...), ids(all.Hits)[:8]) {
			t.Fatal("pages do not line up")
		}
	})
}

func TestTopFacets(t *testing.T) {
	s := openFixture(t)
	ctx := context.Background()
	for _, cat := range FacetCategories {
		t.Run(cat, func(t *testing.T) {
			facets, total, err := s.TopFacets(ctx, cat, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(facets) == 0 || total != len(facets) {
				t.Fatalf("%d facets, total %d", len(facets), total)
			}
			for i := 1; i < len(facets); i++ {
				a, b := facets[i-1], facets[i]
				if b.PaperCount > a.PaperCount || (b.PaperCount == a.PaperCount && b.Value < a.Value) {
					t.Fatalf("order broken at %d: %+v then %+v", i, a, b)
				}
			}
		})
	}
	top, _, _ := s.TopFacets(ctx, "author", 3)
	want := []Facet{{"alice zhang", 9}, {"bob li", 6}, {"carol wu", 6}}
	if !slices.Equal(top, want) {
		t.Fatalf("top authors %v, want %v", top, want)
	}
	if _, _, err := s.TopFacets(ctx, "paper; DROP TABLE paper", 3); err == nil {
		t.Fatal("unknown category accepted")
	}
}

func TestPaper(t *testing.T) {
	s := openFixture(t)
	ctx := context.Background()
	p, err := s.Paper(ctx, snapshot.PaperID(snapshot.KeyViT))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name     string
		got, exp any
	}{
		{"title", p.Title, "Vision Transformers for Image Recognition at Scale"},
		{"preferred", p.PreferredTemplate, snapshot.TemplateDeepRead},
		{"templates", strings.Join(p.Templates, ","), "critical_review,deep_read,simple"},
		{"authors in paper order", strings.Join(p.Authors, ","), "alice zhang,bob li,hana sato"},
		{"langs", strings.Join(p.Langs(), ","), "ja,zh"},
		{"doi", p.DOI, "10.48550/fixture.2021.001"},
		{"bibtex", p.HasBibTeX, true},
		{"has source", p.SourceHash != "", true},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.exp {
				t.Fatalf("%v, want %v", c.got, c.exp)
			}
		})
	}
	if _, err := s.Paper(ctx, "00000000000000000000000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing paper: %v", err)
	}
	u, err := s.Paper(ctx, snapshot.PaperID(snapshot.KeyUnknowns))
	if err != nil || u.Year != "unknown" || u.Venue != "unknown" || u.DOI != "" {
		t.Fatalf("unknowns: %+v %v", u, err)
	}
	ns, _ := s.Paper(ctx, snapshot.PaperID(snapshot.KeyNoSource))
	if ns.SourceHash != "" {
		t.Fatalf("no-source paper has hash %q", ns.SourceHash)
	}
}
