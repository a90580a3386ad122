package papers

// One test per scenario of seed 002 that concerns tools and resources;
// the transport scenarios (initialize, GET, protocol version, origin) are
// in internal/papers/cli, served by the command line. Each runs through
// real MCP clients over stdio and over HTTP.

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/textnorm"
)

// Scenario: Tool descriptions for LLM guidance.
func TestScenarioToolDescriptions(t *testing.T) {
	e := newEnv(t, envOptions{})
	eachClient(t, e, func(t *testing.T, h *harness) {
		list, err := h.c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"get_paper_metadata", "get_paper_source", "get_paper_summary", "list_top_facets", "search_papers", "search_papers_by_keyword"}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			if tool.Title == "" || len(tool.Description) < 80 {
				t.Errorf("%s: title %q, description %q", tool.Name, tool.Title, tool.Description)
			}
			if !strings.Contains(tool.Description, "Read-only") {
				t.Errorf("%s: description does not say it is read-only", tool.Name)
			}
			a := tool.Annotations
			if a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
				t.Errorf("%s: hints %+v", tool.Name, a)
			}
			outputSchemaOf(t, tool)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		desc := map[string]string{}
		for _, tool := range list.Tools {
			desc[tool.Name] = tool.Description
		}
		for tool, phrases := range map[string][]string{
			"search_papers":            {"snippet_markdown", "paper_id", "next_offset"},
			"search_papers_by_keyword": {"keyword or tag", "snippet_markdown"},
			"get_paper_metadata":       {"preferred_summary_template", "available_summary_templates"},
			"get_paper_summary":        {"get_paper_metadata first", "full JSON text", "never a link"},
			"get_paper_source":         {"very large", "max_chars"},
			"list_top_facets":          {"paper_count", "author"},
		} {
			for _, p := range phrases {
				if !strings.Contains(desc[tool], p) {
					t.Errorf("%s description lacks %q", tool, p)
				}
			}
		}
		if h.init.Capabilities.Prompts != nil || h.init.Capabilities.Resources == nil || h.init.Capabilities.Tools == nil {
			t.Errorf("capabilities %+v", h.init.Capabilities)
		}
		if !strings.Contains(h.init.Instructions, "search_papers") {
			t.Errorf("instructions: %q", h.init.Instructions)
		}
	})
}

// Scenario: Full-text search.
func TestScenarioFullTextSearch(t *testing.T) {
	e := newEnv(t, envOptions{})
	eachClient(t, e, func(t *testing.T, h *harness) {
		tests := []struct {
			name, query, first, mark string
		}{
			{"english", "vision transformer", snapshot.KeyViT, "**vision"},
			{"chinese", "医学图像", snapshot.KeyChinese, "**医学图像**"},
			{"chinese with punctuation", "视觉变换器，医学", snapshot.KeyChinese, "**"},
			{"japanese", "大規模言語モデル", snapshot.KeyJapanese, "**大規模言語モデル**"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := h.call("search_papers", map[string]any{"query": tc.query})
				if r.IsError {
					t.Fatalf("error: %s", r.Text)
				}
				results, _ := r.Structured["results"].([]any)
				if len(results) == 0 || num(r.Structured["total"]) < len(results) {
					t.Fatalf("results %d total %v", len(results), r.Structured["total"])
				}
				for i, x := range results {
					hit := x.(map[string]any)
					for _, k := range []string{"paper_id", "title", "year", "venue", "snippet_markdown"} {
						if s, _ := hit[k].(string); s == "" {
							t.Errorf("result %d lacks %s: %v", i, k, hit)
						}
					}
				}
				first := results[0].(map[string]any)
				if first["paper_id"] != id(tc.first) {
					t.Fatalf("best match %v, want %s", first["title"], tc.first)
				}
				if s := first["snippet_markdown"].(string); !strings.Contains(s, tc.mark) {
					t.Fatalf("snippet %q lacks %q", s, tc.mark)
				}
				if !strings.Contains(r.Text, "paper_id: "+id(tc.first)) {
					t.Fatalf("text lacks the first paper_id:\n%s", r.Text)
				}
			})
		}
	})
}

// Scenario: Keyword search.
func TestScenarioKeywordSearch(t *testing.T) {
	e := newEnv(t, envOptions{})
	want := map[string]bool{}
	for _, p := range snapshot.Fixture() {
		for _, v := range append(slices.Clone(p.Keywords), p.Tags...) {
			if strings.Contains(textnorm.FacetValue(v), "transformer") {
				want[id(p.Key)] = true
			}
		}
	}
	eachClient(t, e, func(t *testing.T, h *harness) {
		r := h.call("search_papers_by_keyword", map[string]any{"keyword": "transformer", "limit": 100})
		if r.IsError {
			t.Fatalf("error: %s", r.Text)
		}
		results, _ := r.Structured["results"].([]any)
		if len(results) != len(want) || num(r.Structured["total"]) != len(want) {
			t.Fatalf("%d results (total %v), want %d", len(results), r.Structured["total"], len(want))
		}
		for _, x := range results {
			hit := x.(map[string]any)
			if !want[hit["paper_id"].(string)] {
				t.Errorf("unexpected paper %v", hit["title"])
			}
			matched := strs(hit["matched_values"])
			if len(matched) == 0 || !strings.Contains(matched[0], "transformer") {
				t.Errorf("%v matched %v", hit["title"], matched)
			}
			if hit["snippet_markdown"] == "" {
				t.Errorf("%v has no snippet", hit["title"])
			}
		}
		for _, k := range []string{snapshot.KeyViT, snapshot.KeyDecision} {
			if !want[id(k)] {
				t.Fatalf("fixture no longer has %s among transformer papers", k)
			}
		}
		// The snippet is the paper's summary preview.
		first := results[0].(map[string]any)
		meta := h.call("get_paper_metadata", map[string]any{"paper_id": first["paper_id"]})
		if first["snippet_markdown"] != meta.Structured["summary_preview"] {
			t.Fatalf("snippet %q is not the preview %q", first["snippet_markdown"], meta.Structured["summary_preview"])
		}
	})
}

// Scenario: Metadata includes templates.
func TestScenarioMetadataIncludesTemplates(t *testing.T) {
	e := newEnv(t, envOptions{})
	eachClient(t, e, func(t *testing.T, h *harness) {
		r := h.call("get_paper_metadata", map[string]any{"paper_id": id(snapshot.KeyViT)})
		if r.IsError {
			t.Fatalf("error: %s", r.Text)
		}
		s := r.Structured
		checks := []struct {
			field string
			got   any
			want  any
		}{
			{"preferred_summary_template", s["preferred_summary_template"], snapshot.TemplateDeepRead},
			{"available_summary_templates", strings.Join(strs(s["available_summary_templates"]), ","), "critical_review,deep_read,simple"},
			{"authors", strings.Join(strs(s["authors"]), ","), "alice zhang,bob li,hana sato"},
			{"keywords", strings.Join(strs(s["keywords"]), ","), "vision transformer,image classification"},
			{"doi", s["doi"], "10.48550/fixture.2021.001"},
			{"has_source", s["has_source"], true},
			{"translations", strings.Join(strs(s["translations"]), ","), "ja,zh"},
			{"has_bibtex", s["has_bibtex"], true},
			{"year", s["year"], "2021"},
			{"venue", s["venue"], "ICLR"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
			}
		}
		var fromText map[string]any
		if err := json.Unmarshal([]byte(r.Text), &fromText); err != nil || fromText["preferred_summary_template"] != snapshot.TemplateDeepRead {
			t.Fatalf("text is not the metadata JSON: %v\n%s", err, r.Text)
		}
	})
}

// Scenario: Summary proxy fetch.
func TestScenarioSummaryProxyFetch(t *testing.T) {
	e := newEnv(t, envOptions{remoteAssets: true})
	vit := id(snapshot.KeyViT)
	eachClient(t, e, func(t *testing.T, h *harness) {
		tests := []struct {
			name, template, wantTemplate, wantPath string
		}{
			{"explicit deep_read", "deep_read", "deep_read", assets.TemplateSummaryPath(vit, "deep_read")},
			{"preferred by default", "", "deep_read", assets.PreferredSummaryPath(vit)},
			{"another template", "simple", "simple", assets.TemplateSummaryPath(vit, "simple")},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				args := map[string]any{"paper_id": vit}
				if tc.template != "" {
					args["template"] = tc.template
				}
				before := len(e.assets.requested())
				r := h.call("get_paper_summary", args)
				if r.IsError {
					t.Fatalf("error: %s", r.Text)
				}
				if want := asset(t, e.snap, tc.wantPath); r.Text != want {
					t.Fatalf("text is not the asset's full JSON:\n%s", r.Text)
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(r.Text), &doc); err != nil || doc["template_tag"] != tc.wantTemplate {
					t.Fatalf("summary JSON: %v %v", err, doc["template_tag"])
				}
				if r.Structured["template"] != tc.wantTemplate || r.Structured["truncated"] != false {
					t.Fatalf("structured %v", r.Structured)
				}
				seen := e.assets.requested()[before:]
				if !slices.Contains(seen, "/static/"+tc.wantPath) {
					t.Fatalf("asset server saw %v, want /static/%s", seen, tc.wantPath)
				}
				all, _ := json.Marshal(r.Structured)
				for _, leak := range []string{e.assets.URL, "http://", "/static/"} {
					if strings.Contains(r.Text, leak) || strings.Contains(string(all), leak) {
						t.Fatalf("result leaks %q", leak)
					}
				}
			})
		}
	})
}

// Scenario: Missing source content.
func TestScenarioMissingSourceContent(t *testing.T) {
	e := newEnv(t, envOptions{})
	noSource := id(snapshot.KeyNoSource)
	eachClient(t, e, func(t *testing.T, h *harness) {
		r := h.call("get_paper_source", map[string]any{"paper_id": noSource})
		if r.IsError {
			t.Fatalf("a missing source is an answer, not an error: %s", r.Text)
		}
		if r.Structured["available"] != false || r.Structured["reason"] != CodeSourceNotAvailable || r.Structured["paper_id"] != noSource {
			t.Fatalf("structured %v", r.Structured)
		}
		if !strings.Contains(r.Text, "not available") || !strings.Contains(r.Text, "get_paper_summary") {
			t.Fatalf("text %q", r.Text)
		}
		meta := h.call("get_paper_metadata", map[string]any{"paper_id": noSource})
		if meta.Structured["has_source"] != false {
			t.Fatalf("metadata has_source %v", meta.Structured["has_source"])
		}
		if _, err := h.read("paper://" + noSource + "/source"); err == nil || !strings.Contains(err.Error(), CodeSourceNotAvailable) {
			t.Fatalf("resource read: %v", err)
		}
	})
}

// Scenario: Top authors.
func TestScenarioTopAuthors(t *testing.T) {
	e := newEnv(t, envOptions{})
	counts := map[string]int{}
	for _, p := range snapshot.Fixture() {
		for _, a := range p.Authors {
			counts[textnorm.FacetValue(a)]++
		}
	}
	type fc struct {
		v string
		n int
	}
	var want []fc
	for v, n := range counts {
		want = append(want, fc{v, n})
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].n != want[j].n {
			return want[i].n > want[j].n
		}
		return want[i].v < want[j].v
	})
	eachClient(t, e, func(t *testing.T, h *harness) {
		r := h.call("list_top_facets", map[string]any{"category": "author", "limit": 20})
		if r.IsError {
			t.Fatalf("error: %s", r.Text)
		}
		facets, _ := r.Structured["facets"].([]any)
		if len(facets) != 20 || num(r.Structured["total_values"]) != len(want) {
			t.Fatalf("%d facets of %v, want 20 of %d", len(facets), r.Structured["total_values"], len(want))
		}
		for i, x := range facets {
			f := x.(map[string]any)
			if got := (fc{f["value"].(string), num(f["paper_count"])}); got != want[i] {
				t.Fatalf("rank %d = %+v, want %+v", i+1, got, want[i])
			}
		}
		// The skew the fixture promises: a clear leader, then a tie in
		// alphabetical order.
		if want[0] != (fc{"alice zhang", 9}) || want[1] != (fc{"bob li", 6}) || want[2] != (fc{"carol wu", 6}) {
			t.Fatalf("fixture skew changed: %v", want[:3])
		}
		if !strings.Contains(r.Text, "1. alice zhang (9)") {
			t.Fatalf("text %q", r.Text)
		}
	})
}

// Scenario: Read summary resource with template.
func TestScenarioReadSummaryResourceWithTemplate(t *testing.T) {
	e := newEnv(t, envOptions{})
	vit := id(snapshot.KeyViT)
	eachClient(t, e, func(t *testing.T, h *harness) {
		tests := []struct{ uri, path string }{
			{"paper://" + vit + "/summary/deep_read", assets.TemplateSummaryPath(vit, "deep_read")},
			{"paper://" + vit + "/summary/simple", assets.TemplateSummaryPath(vit, "simple")},
			{"paper://" + vit + "/summary", assets.PreferredSummaryPath(vit)},
		}
		for _, tc := range tests {
			t.Run(tc.uri, func(t *testing.T) {
				c := h.readText(tc.uri)
				if c.MIMEType != "application/json" || c.URI != tc.uri {
					t.Fatalf("MIME %q URI %q", c.MIMEType, c.URI)
				}
				if c.Text != asset(t, e.snap, tc.path) {
					t.Fatalf("resource text is not the asset:\n%s", c.Text)
				}
			})
		}
		// The seed's example id is not a paper of the fixture.
		if _, err := h.read("paper://123/summary/deep_read"); err == nil || !strings.Contains(err.Error(), CodeNotFound) {
			t.Fatalf("paper://123/summary/deep_read: %v", err)
		}
	})
}

// Scenario: Read translation resource.
func TestScenarioReadTranslationResource(t *testing.T) {
	e := newEnv(t, envOptions{})
	vit := id(snapshot.KeyViT)
	var zh string
	for _, p := range snapshot.Fixture() {
		if p.Key == snapshot.KeyViT {
			zh = p.Translations["zh"]
		}
	}
	eachClient(t, e, func(t *testing.T, h *harness) {
		for _, lang := range []string{"zh", "ZH"} {
			c := h.readText("paper://" + vit + "/translation/" + lang)
			if c.MIMEType != "text/markdown" || c.Text != zh || !strings.Contains(c.Text, "视觉变换器") {
				t.Fatalf("%s: MIME %q text %q", lang, c.MIMEType, c.Text)
			}
		}
		_, err := h.read("paper://" + vit + "/translation/fr")
		if err == nil || !strings.Contains(err.Error(), CodeTranslationNotAvailable) || !strings.Contains(err.Error(), "ja, zh") {
			t.Fatalf("missing translation: %v", err)
		}
	})
}

// Scenario: Tool truncates large content.
func TestScenarioToolTruncatesLargeContent(t *testing.T) {
	e := newEnv(t, envOptions{})
	long := id(snapshot.KeyLongSource)
	p, err := e.storePaper(long)
	if err != nil {
		t.Fatal(err)
	}
	source := asset(t, e.snap, assets.SourcePath(p.SourceHash))
	total := utf8.RuneCountInString(source)
	if total <= 60000 {
		t.Fatalf("fixture source has only %d characters", total)
	}
	eachClient(t, e, func(t *testing.T, h *harness) {
		for _, max := range []int{10000, DefaultMaxChars} {
			args := map[string]any{"paper_id": long}
			if max != DefaultMaxChars {
				args["max_chars"] = max
			}
			r := h.call("get_paper_source", args)
			if r.IsError {
				t.Fatalf("error: %s", r.Text)
			}
			head := string([]rune(source)[:max])
			if !strings.HasPrefix(r.Text, head) {
				t.Fatalf("max %d: text does not start with the first %d characters", max, max)
			}
			marker := strings.TrimPrefix(r.Text, head)
			wantMarker := "\n\n[truncated: showing the first " + itoa(max) + " of " + itoa(total) + " characters; " + itoa(total-max) + " characters cut."
			if !strings.HasPrefix(marker, wantMarker) || !strings.HasSuffix(marker, "]") || strings.Count(marker, "\n") != 2 {
				t.Fatalf("max %d: marker %q, want prefix %q", max, marker, wantMarker)
			}
			if strings.Contains(r.Text, snapshot.LongSourceEndMarker) {
				t.Fatal("the cut part was returned")
			}
			s := r.Structured
			if s["truncated"] != true || num(s["total_chars"]) != total || num(s["returned_chars"]) != max || s["available"] != true {
				t.Fatalf("structured %v", s)
			}
		}
		whole := h.call("get_paper_source", map[string]any{"paper_id": long, "max_chars": 1000000})
		if whole.Text != source || whole.Structured["truncated"] != false {
			t.Fatal("max_chars above the length did not return the whole source")
		}
		sum := h.call("get_paper_summary", map[string]any{"paper_id": id(snapshot.KeyViT), "max_chars": 100})
		if !strings.Contains(sum.Text, "[truncated: showing the first 100 of") || sum.Structured["truncated"] != true {
			t.Fatalf("summary max_chars: %v", sum.Structured)
		}
	})
}

// Scenario: Resource truncates large content.
func TestScenarioResourceTruncatesLargeContent(t *testing.T) {
	e := newEnv(t, envOptions{})
	long := id(snapshot.KeyLongSource)
	p, err := e.storePaper(long)
	if err != nil {
		t.Fatal(err)
	}
	source := asset(t, e.snap, assets.SourcePath(p.SourceHash))
	total := utf8.RuneCountInString(source)
	eachClient(t, e, func(t *testing.T, h *harness) {
		c := h.readText("paper://" + long + "/source")
		if c.MIMEType != "text/markdown" {
			t.Fatalf("MIME %q", c.MIMEType)
		}
		head := string([]rune(source)[:DefaultMaxChars])
		if !strings.HasPrefix(c.Text, head) {
			t.Fatal("resource does not start with the first 50000 characters")
		}
		marker := strings.TrimPrefix(c.Text, head)
		want := "\n\n[truncated: showing the first 50000 of " + itoa(total) + " characters; " + itoa(total-DefaultMaxChars) + " characters cut. Resource reads stop at 50000 characters"
		if !strings.HasPrefix(marker, want) {
			t.Fatalf("marker %q", marker)
		}
		short := h.readText("paper://" + id(snapshot.KeyViT) + "/source")
		if strings.Contains(short.Text, "[truncated:") {
			t.Fatal("a short source was marked truncated")
		}
	})
}

// Scenario: Template not available.
func TestScenarioTemplateNotAvailable(t *testing.T) {
	e := newEnv(t, envOptions{})
	vit := id(snapshot.KeyViT)
	eachClient(t, e, func(t *testing.T, h *harness) {
		r := h.call("get_paper_summary", map[string]any{"paper_id": vit, "template": "eli5"})
		if code := errorCode(t, r); code != CodeTemplateNotAvailable {
			t.Fatalf("code %q", code)
		}
		s := r.Structured
		if s["paper_id"] != vit || s["template"] != "eli5" || strings.Join(strs(s["available_summary_templates"]), ",") != "critical_review,deep_read,simple" {
			t.Fatalf("structured %v", s)
		}
		if !strings.Contains(r.Text, "critical_review, deep_read, simple") {
			t.Fatalf("text %q", r.Text)
		}
		if _, err := h.read("paper://" + vit + "/summary/eli5"); err == nil || !strings.Contains(err.Error(), CodeTemplateNotAvailable) {
			t.Fatalf("resource: %v", err)
		}
	})
}

// Scenario: Asset fetch failure (404 or timeout), against a real HTTP
// asset server.
func TestScenarioAssetFetchFailure(t *testing.T) {
	vit, missing := id(snapshot.KeyViT), id(snapshot.KeyMissingAsset)
	slowPath := assets.TemplateSummaryPath(vit, "simple")
	tests := []struct {
		name       string
		opt        envOptions
		paperID    string
		template   string
		reason     string
		httpStatus int
		maxElapsed time.Duration
	}{
		{"404", envOptions{remoteAssets: true}, missing, "deep_read", assets.ReasonNotFound, 404, 5 * time.Second},
		// The asset server holds the summary a minute; 10 s is far above the
		// 150 ms timeout and far below that.
		{"timeout", envOptions{remoteAssets: true, timeout: 150 * time.Millisecond, delay: map[string]time.Duration{slowPath: time.Minute}}, vit, "simple", assets.ReasonTimeout, 0, 10 * time.Second},
		{"missing local file", envOptions{}, missing, "deep_read", assets.ReasonNotFound, 0, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opt)
			eachClient(t, e, func(t *testing.T, h *harness) {
				start := time.Now()
				r := h.call("get_paper_summary", map[string]any{"paper_id": tc.paperID, "template": tc.template})
				if elapsed := time.Since(start); elapsed > tc.maxElapsed {
					t.Fatalf("took %s", elapsed)
				}
				if code := errorCode(t, r); code != CodeAssetFetchFailed {
					t.Fatalf("code %q: %s", code, r.Text)
				}
				s := r.Structured
				if s["paper_id"] != tc.paperID || s["template"] != tc.template || s["reason"] != tc.reason || num(s["http_status"]) != tc.httpStatus {
					t.Fatalf("structured %v", s)
				}
				if len(strs(s["available_summary_templates"])) == 0 {
					t.Fatalf("no available templates: %v", s)
				}
				if e.assets != nil && strings.Contains(r.Text+s["message"].(string), e.assets.URL) {
					t.Fatalf("error leaks the asset URL: %s", r.Text)
				}
				// The other template of the same paper still loads.
				other := "simple"
				if tc.template == "simple" {
					other = "deep_read"
				}
				if ok := h.call("get_paper_summary", map[string]any{"paper_id": tc.paperID, "template": other}); ok.IsError {
					t.Fatalf("template %s: %s", other, ok.Text)
				}
			})
		})
	}
}

// Scenario: Excessive query length.
func TestScenarioExcessiveQueryLength(t *testing.T) {
	e := newEnv(t, envOptions{})
	eachClient(t, e, func(t *testing.T, h *harness) {
		tests := []struct {
			name    string
			query   string
			refused bool
		}{
			{"501 ascii characters", strings.Repeat("a", 501), true},
			{"500 ascii characters", strings.Repeat("a", 500), false},
			{"501 cjk characters", strings.Repeat("视", 501), true},
			{"500 cjk characters (1500 bytes)", strings.Repeat("视", 500), false},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := h.call("search_papers", map[string]any{"query": tc.query})
				if !tc.refused {
					if r.IsError {
						t.Fatalf("refused: %s", r.Text)
					}
					return
				}
				if code := errorCode(t, r); code != CodeValidation || r.Structured["param"] != "query" || r.Structured["reason"] != "too_long" {
					t.Fatalf("structured %v", r.Structured)
				}
				if !strings.Contains(r.Text, "at most 500 characters; got 501") {
					t.Fatalf("text %q", r.Text)
				}
			})
		}
	})
}

// Scenario: Excessive page size (and offset).
func TestScenarioExcessivePageSize(t *testing.T) {
	e := newEnv(t, envOptions{})
	eachClient(t, e, func(t *testing.T, h *harness) {
		tests := []struct {
			tool    string
			args    map[string]any
			param   string
			refused bool
		}{
			{"search_papers", map[string]any{"query": "transformer", "limit": 101}, "limit", true},
			{"search_papers", map[string]any{"query": "transformer", "limit": 100}, "", false},
			{"search_papers", map[string]any{"query": "transformer", "limit": 0}, "limit", true},
			{"search_papers", map[string]any{"query": "transformer", "offset": 10001}, "offset", true},
			{"search_papers", map[string]any{"query": "transformer", "offset": 10000}, "", false},
			{"search_papers", map[string]any{"query": "transformer", "offset": -1}, "offset", true},
			{"search_papers_by_keyword", map[string]any{"keyword": "transformer", "limit": 101}, "limit", true},
			{"search_papers_by_keyword", map[string]any{"keyword": "transformer", "offset": 10001}, "offset", true},
			{"list_top_facets", map[string]any{"category": "author", "limit": 101}, "limit", true},
			{"list_top_facets", map[string]any{"category": "author", "limit": 100}, "", false},
		}
		for _, tc := range tests {
			name, _ := json.Marshal(tc.args)
			t.Run(tc.tool+string(name), func(t *testing.T) {
				r := h.call(tc.tool, tc.args)
				if !tc.refused {
					if r.IsError {
						t.Fatalf("refused: %s", r.Text)
					}
					return
				}
				if code := errorCode(t, r); code != CodeValidation || r.Structured["param"] != tc.param || r.Structured["reason"] != "out_of_range" {
					t.Fatalf("structured %v", r.Structured)
				}
			})
		}
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
