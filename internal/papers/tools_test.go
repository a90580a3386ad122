package papers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	paperstransport "github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
)

func TestAssetParseFailed(t *testing.T) {
	broken := id(snapshot.KeyBrokenSummary)
	for _, opt := range []envOptions{{}, {remoteAssets: true}} {
		e := newEnv(t, opt)
		eachClient(t, e, func(t *testing.T, h *harness) {
			r := h.call("get_paper_summary", map[string]any{"paper_id": broken, "template": snapshot.TemplateCritical})
			if code := errorCode(t, r); code != CodeAssetParseFailed {
				t.Fatalf("code %q", code)
			}
			s := r.Structured
			if s["paper_id"] != broken || s["template"] != snapshot.TemplateCritical || strings.Join(strs(s["available_summary_templates"]), ",") != "critical_review,simple" {
				t.Fatalf("structured %v", s)
			}
			if !strings.Contains(r.Text, "Another template may load: simple.") {
				t.Fatalf("text %q", r.Text)
			}
			if _, err := h.read("paper://" + broken + "/summary/critical_review"); err == nil || !strings.Contains(err.Error(), CodeAssetParseFailed) {
				t.Fatalf("resource: %v", err)
			}
		})
	}
}

func TestPaperIDErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	unknown := strings.Repeat("0", 32)
	eachClient(t, e, func(t *testing.T, h *harness) {
		for _, tool := range []string{"get_paper_metadata", "get_paper_summary", "get_paper_source"} {
			tests := []struct {
				name, paperID, code, reason string
			}{
				{"unknown", unknown, CodeNotFound, ""},
				{"traversal", "../../etc/passwd", CodeValidation, "invalid_format"},
				{"space", "a b", CodeValidation, "invalid_format"},
				{"empty", "", CodeValidation, "missing_argument"},
				{"too long", strings.Repeat("a", 65), CodeValidation, "too_long"},
			}
			for _, tc := range tests {
				t.Run(tool+"/"+tc.name, func(t *testing.T) {
					r := h.call(tool, map[string]any{"paper_id": tc.paperID})
					if code := errorCode(t, r); code != tc.code {
						t.Fatalf("code %q, want %q: %s", code, tc.code, r.Text)
					}
					if tc.code == CodeNotFound && r.Structured["paper_id"] != unknown {
						t.Fatalf("structured %v", r.Structured)
					}
					if tc.reason != "" && (r.Structured["reason"] != tc.reason || r.Structured["param"] != "paper_id") {
						t.Fatalf("structured %v", r.Structured)
					}
				})
			}
		}
	})
}

func TestArgumentErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	h := e.connect(t, "inprocess")
	tests := []struct {
		name   string
		tool   string
		args   map[string]any
		reason string
		param  string
	}{
		{"unknown argument", "search_papers", map[string]any{"query": "x", "page_size": 5}, "unknown_argument", "page_size"},
		{"string limit", "search_papers", map[string]any{"query": "x", "limit": "10"}, "invalid_type", "limit"},
		{"missing query", "search_papers", map[string]any{}, "missing_argument", "query"},
		{"blank query", "search_papers", map[string]any{"query": "   "}, "missing_argument", "query"},
		{"blank keyword", "search_papers_by_keyword", map[string]any{"keyword": "   "}, "missing_argument", "keyword"},
		{"NUL keyword", "search_papers_by_keyword", map[string]any{"keyword": "\x00"}, "invalid_format", "keyword"},
		{"tab keyword", "search_papers_by_keyword", map[string]any{"keyword": " \t "}, "invalid_format", "keyword"},
		{"NUL in query", "search_papers", map[string]any{"query": "vision\x00"}, "invalid_format", "query"},
		{"template traversal", "get_paper_summary", map[string]any{"paper_id": id(snapshot.KeyViT), "template": ".."}, "invalid_format", "template"},
		{"template with slash", "get_paper_summary", map[string]any{"paper_id": id(snapshot.KeyViT), "template": "a/b"}, "invalid_format", "template"},
		{"bad category", "list_top_facets", map[string]any{"category": "year"}, "invalid_enum", "category"},
		{"max_chars zero", "get_paper_source", map[string]any{"paper_id": id(snapshot.KeyViT), "max_chars": 0}, "out_of_range", "max_chars"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call(tc.tool, tc.args)
			if code := errorCode(t, r); code != CodeValidation || r.Structured["reason"] != tc.reason || r.Structured["param"] != tc.param {
				t.Fatalf("structured %v", r.Structured)
			}
		})
	}
}

func TestSearchPaging(t *testing.T) {
	e := newEnv(t, envOptions{})
	h := e.connect(t, "inprocess")
	all := h.call("search_papers_by_keyword", map[string]any{"keyword": "learning", "limit": 100})
	total := num(all.Structured["total"])
	if total < 5 || all.Structured["next_offset"] != nil {
		t.Fatalf("total %d next %v", total, all.Structured["next_offset"])
	}
	var seen []string
	offset := 0
	for pages := 0; ; pages++ {
		r := h.call("search_papers_by_keyword", map[string]any{"keyword": "learning", "limit": 2, "offset": offset})
		for _, x := range r.Structured["results"].([]any) {
			seen = append(seen, x.(map[string]any)["paper_id"].(string))
		}
		next, ok := r.Structured["next_offset"].(float64)
		if !ok {
			if !strings.Contains(r.Text, "showing") || strings.Contains(r.Text, "Next page") {
				t.Fatalf("last page text %q", r.Text)
			}
			break
		}
		if !strings.Contains(r.Text, "offset="+itoa(int(next))) {
			t.Fatalf("text does not say the next offset: %q", r.Text)
		}
		offset = int(next)
		if pages > total {
			t.Fatal("paging does not end")
		}
	}
	var want []string
	for _, x := range all.Structured["results"].([]any) {
		want = append(want, x.(map[string]any)["paper_id"].(string))
	}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("pages %v\nwhole %v", seen, want)
	}
	none := h.call("search_papers", map[string]any{"query": "qwertyuiop"})
	if none.IsError || num(none.Structured["total"]) != 0 || !strings.HasPrefix(none.Text, "No papers") {
		t.Fatalf("no hits: %v %q", none.Structured, none.Text)
	}
}

func TestPageResultOffsetCap(t *testing.T) {
	hits := func(n int) []storeHit { return make([]storeHit, n) }
	tests := []struct {
		name          string
		total, offset int
		hits          int
		next          *int
	}{
		{"first page", 50, 0, 10, ptr(10)},
		{"last page", 50, 40, 10, nil},
		{"next would pass the cap", 20000, 9995, 10, nil},
		{"next at the cap", 20000, 9990, 10, ptr(10000)},
		{"empty page past the end", 5, 10, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := pageResult(storePage(hits(tc.hits), tc.total), 10, tc.offset)
			if (res.NextOffset == nil) != (tc.next == nil) || (tc.next != nil && *res.NextOffset != *tc.next) {
				t.Fatalf("next %v, want %v", res.NextOffset, tc.next)
			}
		})
	}
}

func ptr(n int) *int { return &n }

func TestResourceTemplates(t *testing.T) {
	e := newEnv(t, envOptions{})
	eachClient(t, e, func(t *testing.T, h *harness) {
		res, err := h.c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"paper://{paper_id}/metadata":           "application/json",
			"paper://{paper_id}/summary":            "application/json",
			"paper://{paper_id}/summary/{template}": "application/json",
			"paper://{paper_id}/source":             "text/markdown",
			"paper://{paper_id}/translation/{lang}": "text/markdown",
		}
		if len(res.ResourceTemplates) != len(want) {
			t.Fatalf("%d templates", len(res.ResourceTemplates))
		}
		for _, rt := range res.ResourceTemplates {
			raw := rt.URITemplate.Raw()
			if want[raw] == "" || rt.MIMEType != want[raw] || rt.Description == "" || rt.Title == "" {
				t.Errorf("template %s: MIME %q title %q", raw, rt.MIMEType, rt.Title)
			}
		}
		meta := h.readText("paper://" + id(snapshot.KeyViT) + "/metadata")
		var m map[string]any
		if err := json.Unmarshal([]byte(meta.Text), &m); err != nil || m["preferred_summary_template"] != snapshot.TemplateDeepRead || meta.MIMEType != "application/json" {
			t.Fatalf("metadata resource: %v %s", err, meta.Text)
		}
		for _, bad := range []string{
			"paper://a%2Fb/summary",
			"paper://" + strings.Repeat("0", 32) + "/metadata",
			"paper://" + id(snapshot.KeyViT) + "/translation/%2E%2E",
		} {
			if _, err := h.read(bad); err == nil {
				t.Errorf("%s was read", bad)
			}
		}
	})
}

func TestLegacySnapshotThroughMCP(t *testing.T) {
	e := newEnv(t, envOptions{legacy: true})
	h := e.connect(t, "http")
	r := h.call("get_paper_metadata", map[string]any{"paper_id": id(snapshot.KeyViT)})
	if r.IsError || r.Structured["doi"] != nil || r.Structured["has_bibtex"] != false {
		t.Fatalf("legacy metadata %v", r.Structured)
	}
	if _, ok := r.Structured["doi"]; ok {
		t.Fatal("doi must be absent (not null): its output schema has a type")
	}
	if s := h.call("search_papers", map[string]any{"query": "diffusion"}); s.IsError || num(s.Structured["total"]) == 0 {
		t.Fatalf("legacy search %v", s.Structured)
	}
}

// TestToolsListGolden checks that the served tools/list is exactly the
// generated golden file: the surface comes from spec/papers.tools.yaml
// through mcpgen and nothing in Go changes it.
func TestToolsListGolden(t *testing.T) {
	e := newEnv(t, envOptions{})
	h := e.connect(t, "inprocess")
	resp, err := h.c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(77)), Method: "tools/list", Params: map[string]any{},
	})
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/list: %v %v", err, resp.Error)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, resp.Result, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	want, err := os.ReadFile("../../gen/papertools/tools_list.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Fatal("served tools/list differs from gen/papertools/tools_list.golden.json; run go generate ./...")
	}
}

// TestOfficialSDKClient runs a short journey with the official go-sdk
// client over the hosted transport.
func TestOfficialSDKClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	handler, err := paperstransport.NewHTTPHandler(e.srv, paperstransport.HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(handler)
	defer hs.Close()
	ctx := t.Context()
	cl := sdk.NewClient(&sdk.Implementation{Name: "sdk-papers", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(papertools.Tools()) {
		t.Fatalf("tools/list: %v (%d tools, the catalog %d)", err, len(tools.Tools), len(papertools.Tools()))
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_papers", Arguments: map[string]any{"query": "diffusion", "limit": 2}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Results []struct {
			PaperID string `json:"paper_id"`
		} `json:"results"`
		NextOffset *int `json:"next_offset"`
	}
	if err := json.Unmarshal(b, &sc); err != nil || len(sc.Results) != 2 || sc.NextOffset == nil || *sc.NextOffset != 2 {
		t.Fatalf("structured %s", b)
	}
	sum, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_paper_summary", Arguments: map[string]any{"paper_id": sc.Results[0].PaperID}})
	if err != nil || sum.IsError {
		t.Fatalf("summary: %v %+v", err, sum)
	}
	if text := sum.Content[0].(*sdk.TextContent).Text; !json.Valid([]byte(text)) {
		t.Fatalf("summary text is not JSON: %s", text)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "paper://" + sc.Results[0].PaperID + "/metadata"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/json" {
		t.Fatalf("resource: %v %+v", err, rr)
	}
}
