package papers

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

type storeHit = store.Hit

func storePage(h []store.Hit, total int) store.Page { return store.Page{Hits: h, Total: total} }

func TestTruncate(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		max       int
		wantText  string
		truncated bool
	}{
		{"short", "hello", 10, "hello", false},
		{"exact", "hello", 5, "hello", false},
		{"ascii cut", "hello world", 5, "hello\n\n[truncated: showing the first 5 of 11 characters; 6 characters cut. more]", true},
		{"runes not bytes", "视觉变换器模型", 3, "视觉变\n\n[truncated: showing the first 3 of 7 characters; 4 characters cut. more]", true},
		{"no limit", "abc", 0, "abc", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := truncate(tc.in, tc.max, "more")
			if c.Text != tc.wantText || c.Truncated != tc.truncated || c.Total != utf8.RuneCountInString(tc.in) {
				t.Fatalf("truncate = %+v", c)
			}
			if c.Truncated && c.Returned != tc.max {
				t.Fatalf("returned %d", c.Returned)
			}
		})
	}
}

func TestParseURI(t *testing.T) {
	id := "cac723451c36d030bd1cfe72b38b42b4"
	tests := []struct {
		uri  string
		want PaperURI
		err  string
	}{
		{"paper://" + id + "/metadata", PaperURI{PaperID: id, Kind: KindMetadata}, ""},
		{"paper://123/summary", PaperURI{PaperID: "123", Kind: KindSummary}, ""},
		{"paper://123/summary/deep_read", PaperURI{PaperID: "123", Kind: KindSummary, Template: "deep_read"}, ""},
		{"paper://123/source", PaperURI{PaperID: "123", Kind: KindSource}, ""},
		{"paper://123/translation/ZH", PaperURI{PaperID: "123", Kind: KindTranslation, Lang: "zh"}, ""},
		{"paper://Mixed_Case-Id/metadata", PaperURI{PaperID: "Mixed_Case-Id", Kind: KindMetadata}, ""},
		{"paper://deep%5Fread/summary", PaperURI{PaperID: "deep_read", Kind: KindSummary}, ""},
		{"https://123/metadata", PaperURI{}, "does not start with"},
		{"paper://123", PaperURI{}, "needs a paper_id"},
		{"paper:///metadata", PaperURI{}, "needs a paper_id"},
		{"paper://a%2Fb/metadata", PaperURI{}, "needs a paper_id"},
		{"paper://../metadata", PaperURI{}, "needs a paper_id"},
		{"paper://123/metadata/x", PaperURI{}, "is not one of"},
		{"paper://123/source/x", PaperURI{}, "is not one of"},
		{"paper://123/translation", PaperURI{}, "is not one of"},
		{"paper://123/summary/..", PaperURI{}, "not a template name"},
		{"paper://123/summary/a%2Fb", PaperURI{}, "not a template name"},
		{"paper://123/translation/z%20h", PaperURI{}, "not a language code"},
		{"paper://123/summary?x=1", PaperURI{}, "query or fragment"},
		{"paper://123/summary/%zz", PaperURI{}, "bad escape"},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := ParseURI(tc.uri)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseURI = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// FuzzParseURI checks that ParseURI never panics and that what it accepts
// is a clean paper URI that parses back to itself.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"paper://123/summary/deep_read", "paper://a/translation/zh", "paper://%2e%2e/metadata", "paper://x/summary/%2F", "paper://", "paper://a/b/c/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		u, err := ParseURI(uri)
		if err != nil {
			return
		}
		if !papertools.FormatPaperID.Valid(u.PaperID) || strings.Contains(u.Template, "/") || strings.Contains(u.Lang, "/") || u.Template == ".." {
			t.Fatalf("ParseURI(%q) accepted %+v", uri, u)
		}
		again, err := ParseURI(u.String())
		if err != nil || again != u {
			t.Fatalf("round trip of %q: %+v, %v", u.String(), again, err)
		}
	})
}
