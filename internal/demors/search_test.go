package demors_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// hitKey identifies a search hit as connection/stream:record.
func hitKey(h any) string {
	return str(at(h, "connection_id")) + "/" + str(at(h, "stream")) + ":" + str(at(h, "record_key"))
}

// allHits follows next links to the end.
func allHits(t *testing.T, r *rs, path, grant string) []any {
	t.Helper()
	var out []any
	for pages := 0; path != ""; pages++ {
		if pages > 60 {
			t.Fatal("search cursor never ended")
		}
		body := r.get(t, path, grant).mustStatus(t, 200).body
		out = append(out, list(body["data"])...)
		path = str(at(body, "links", "next"))
		if (path == "") == (body["has_more"] == true) {
			t.Fatalf("has_more %v disagrees with links.next %q", body["has_more"], path)
		}
	}
	return out
}

func TestSearchLexical(t *testing.T) {
	r := newRS(t)
	t.Run("zephyrmarker across every granted stream", func(t *testing.T) {
		hits := allHits(t, r, "/v1/search?q=zephyrmarker&limit=7", demors.GrantClient)
		keys := map[string]bool{}
		perStream := map[string]int{}
		prev := -1e18
		for _, h := range hits {
			if keys[hitKey(h)] {
				t.Errorf("duplicate hit %s", hitKey(h))
			}
			keys[hitKey(h)] = true
			perStream[str(at(h, "stream"))+"@"+str(at(h, "connection_id"))]++
			if at(h, "object") != "search_result" || str(at(h, "record_url")) != "/v1/streams/"+str(at(h, "stream"))+"/records/"+str(at(h, "record_key")) {
				t.Errorf("hit identity = %v", h)
			}
			score := num(at(h, "score", "value"))
			if at(h, "score", "kind") != "bm25" || at(h, "score", "order") != "lower_is_better" || score < prev {
				t.Errorf("score %v after %v", at(h, "score"), prev)
			}
			prev = score
		}
		want := map[string]int{"transcripts@cin_demo_loom_main": 40, "transcripts@cin_demo_loom_peer": 8, "notes@cin_demo_notes": 3}
		for k, n := range want {
			if perStream[k] != n {
				t.Errorf("%s hits = %d, want %d (all: %v)", k, perStream[k], n, perStream)
			}
		}
		if len(hits) != 51 {
			t.Errorf("%d hits, want 51", len(hits))
		}
	})
	t.Run("evidence only for body matches", func(t *testing.T) {
		body := r.get(t, "/v1/search?q=zephyrmarker&streams=notes", demors.GrantClient).mustStatus(t, 200).body
		byID := map[string]any{}
		for _, h := range list(body["data"]) {
			byID[str(at(h, "record_key"))] = h
		}
		for _, id := range []string{"note-2", "note-6"} {
			h := byID[id]
			if !slices.Equal(toStrings(at(h, "matched_fields")), []string{"title"}) || str(at(h, "snippet", "field")) != "title" {
				t.Errorf("%s: matched %v snippet %v", id, at(h, "matched_fields"), at(h, "snippet"))
			}
			if !strings.Contains(str(at(h, "snippet", "text")), "<mark>zephyrmarker</mark>") {
				t.Errorf("%s snippet lacks a mark: %v", id, at(h, "snippet"))
			}
			if _, has := object(h)["evidence_excerpts"]; has {
				t.Errorf("%s: a title-only match carries evidence_excerpts", id)
			}
		}
		ex := at(byID["note-4"], "evidence_excerpts", 0)
		if str(at(ex, "field_path")) != "body" || str(at(ex, "provenance")) != "lexical_match" || at(ex, "truncated") != false {
			t.Errorf("note-4 excerpt = %v", ex)
		}
		read := at(ex, "read")
		if str(at(read, "route")) != "/v1/streams/notes/records/note-4/field-window" || str(at(read, "field")) != "body" ||
			str(at(read, "connection_id")) != "cin_demo_notes" || str(at(read, "method")) != "GET" {
			t.Errorf("read = %v", read)
		}
		follow := r.get(t, str(at(read, "route"))+"?field=body&connection_id=cin_demo_notes&q=zephyrmarker", demors.GrantClient).mustStatus(t, 200).body
		if at(follow, "window", "match_start_chars") == nil {
			t.Errorf("the excerpt's read continuation does not find the match: %v", follow["window"])
		}
	})
	t.Run("needle in two connections", func(t *testing.T) {
		body := r.get(t, "/v1/search?q=needle5&limit=5", demors.GrantClient).mustStatus(t, 200).body
		var keys []string
		for _, h := range list(body["data"]) {
			keys = append(keys, hitKey(h))
			ex := at(h, "evidence_excerpts", 0)
			preview := str(at(ex, "preview_text"))
			if !strings.Contains(preview, "<mark>needle5</mark>") || !strings.HasPrefix(preview, "…") || !strings.HasSuffix(preview, "…") || at(ex, "truncated") != true {
				t.Errorf("preview = %q", preview)
			}
			if len([]rune(preview)) < 200 {
				t.Errorf("preview has too little context: %q", preview)
			}
			if str(at(ex, "read", "connection_id")) != str(at(h, "connection_id")) {
				t.Errorf("read.connection_id %v != hit connection %v", at(ex, "read", "connection_id"), at(h, "connection_id"))
			}
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"cin_demo_loom_main/transcripts:tr-5", "cin_demo_loom_peer/transcripts:tr-5"}) {
			t.Errorf("hits = %v", keys)
		}
		if at(body, "meta", "count") != 2.0 || at(body, "meta", "recall", "complete") != true {
			t.Errorf("meta = %v", body["meta"])
		}
	})
	t.Run("narrow grant", func(t *testing.T) {
		hits := allHits(t, r, "/v1/search?q=zephyrmarker&limit=100", demors.GrantNarrow)
		if len(hits) != 40 {
			t.Errorf("%d hits, want 40", len(hits))
		}
		for _, h := range hits {
			if at(h, "connection_id") != "cin_demo_loom_main" || at(h, "stream") != "transcripts" {
				t.Errorf("narrow grant hit outside scope: %s", hitKey(h))
			}
		}
		if n := len(list(r.get(t, "/v1/search?q=quokka", demors.GrantNarrow).mustStatus(t, 200).body["data"])); n != 0 {
			t.Errorf("narrow grant found %d notes", n)
		}
	})
	t.Run("single-stream filter", func(t *testing.T) {
		hits := allHits(t, r, "/v1/search?q=zephyrmarker&streams=transcripts&filter[language]=it&limit=50", demors.GrantNarrow)
		if len(hits) == 0 || len(hits) == 40 {
			t.Fatalf("filter kept %d hits", len(hits))
		}
		for _, h := range hits {
			lang := str(at(r.get(t, "/v1/streams/transcripts/records/"+str(at(h, "record_key"))+"?fields=language", demors.GrantNarrow).body, "data", "language"))
			if lang != "it" {
				t.Errorf("%s has language %q", hitKey(h), lang)
			}
		}
	})
	t.Run("streams[] and comma lists", func(t *testing.T) {
		for _, path := range []string{"/v1/search?q=zephyrmarker&streams[]=notes&streams[]=videos", "/v1/search?q=zephyrmarker&streams=notes,videos"} {
			hits := allHits(t, r, path, demors.GrantClient)
			if len(hits) != 3 {
				t.Errorf("%s: %d hits, want the 3 notes", path, len(hits))
			}
		}
	})
	t.Run("connection scope", func(t *testing.T) {
		hits := allHits(t, r, "/v1/search?q=zephyrmarker&connection_id=cin_demo_loom_peer", demors.GrantClient)
		if len(hits) != 8 {
			t.Errorf("%d hits, want 8", len(hits))
		}
	})
	t.Run("limit clamp", func(t *testing.T) {
		body := r.get(t, "/v1/search?q=zephyrmarker&limit=500", demors.GrantClient).mustStatus(t, 200).body
		if !slices.Equal(warningCodes(body), []string{"limit_clamped"}) || len(list(body["data"])) != 51 {
			t.Errorf("warnings %v, %d hits", warningCodes(body), len(list(body["data"])))
		}
	})
}

func toStrings(v any) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, str(x))
	}
	return out
}

func TestSearchErrors(t *testing.T) {
	r := newRS(t)
	page := r.get(t, "/v1/search?q=zephyrmarker&limit=2", demors.GrantClient).mustStatus(t, 200).body
	cursor := str(page["next_cursor"])
	cases := []struct {
		name, path, grant string
		status            int
		code, param       string
	}{
		{"missing q", "/v1/search", demors.GrantClient, 400, "invalid_request", "q"},
		{"q without words", "/v1/search?q=%21%21", demors.GrantClient, 400, "invalid_request", "q"},
		{"filter without one stream", "/v1/search?q=needle5&filter[language]=en", demors.GrantClient, 400, "invalid_request", "streams"},
		{"filter on unknown field", "/v1/search?q=needle5&streams=transcripts&filter[bogus]=x", demors.GrantClient, 400, "invalid_request", "filter"},
		{"stream outside grant", "/v1/search?q=needle5&streams=videos", demors.GrantNarrow, 401, "context.stream_not_allowed", ""},
		{"connection outside grant", "/v1/search?q=needle5&connection_id=cin_demo_notes", demors.GrantNarrow, 401, "context.instance_mismatch", ""},
		{"garbage cursor", "/v1/search?q=zephyrmarker&cursor=garbage", demors.GrantClient, 400, "invalid_cursor", ""},
		{"cursor of another query", q("/v1/search", "q", "needle5", "cursor", cursor), demors.GrantClient, 400, "invalid_cursor", ""},
		{"lexical cursor on semantic search", q("/v1/search/semantic", "q", "zephyrmarker", "cursor", cursor), demors.GrantClient, 400, "invalid_cursor", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.get(t, tc.path, tc.grant).mustStatus(t, tc.status)
			if resp.errCode() != tc.code {
				t.Errorf("code = %q, want %q: %s", resp.errCode(), tc.code, resp.raw)
			}
			if p, _ := resp.errField("param").(string); p != tc.param {
				t.Errorf("param = %q, want %q", p, tc.param)
			}
		})
	}
	t.Run("cursor continues the same query", func(t *testing.T) {
		next := r.get(t, q("/v1/search", "q", "zephyrmarker", "limit", "2", "cursor", cursor), demors.GrantClient).mustStatus(t, 200).body
		first := list(page["data"])
		for _, h := range list(next["data"]) {
			for _, f := range first {
				if hitKey(f) == hitKey(h) {
					t.Errorf("page 2 repeats %s", hitKey(h))
				}
			}
		}
	})
}

func TestSearchSemanticAndHybrid(t *testing.T) {
	r := newRS(t)
	t.Run("semantic", func(t *testing.T) {
		hits := allHits(t, r, "/v1/search/semantic?q=weekly%20sync&limit=6", demors.GrantClient)
		if len(hits) < 10 {
			t.Fatalf("%d semantic hits", len(hits))
		}
		prev := -1.0
		for _, h := range hits {
			d := num(at(h, "score", "value"))
			if at(h, "retrieval_mode") != "semantic" || at(h, "score", "kind") != "semantic_distance" || d < prev || d < 0 || d > 1 {
				t.Errorf("hit %s: mode %v score %v after %v", hitKey(h), at(h, "retrieval_mode"), at(h, "score"), prev)
			}
			prev = d
			if _, has := object(h)["evidence_excerpts"]; has {
				t.Errorf("semantic hit %s carries evidence_excerpts", hitKey(h))
			}
			if str(at(h, "snippet", "text")) == "" || strings.Contains(str(at(h, "snippet", "text")), "<mark>") {
				t.Errorf("semantic snippet = %v", at(h, "snippet"))
			}
		}
		top := hits[0]
		if !strings.HasPrefix(str(at(top, "snippet", "text")), "Weekly sync") || at(top, "score", "value") != 0.0 {
			t.Errorf("best semantic hit = %v", top)
		}
		body := r.get(t, "/v1/search/semantic?q=weekly%20sync&limit=2", demors.GrantClient).mustStatus(t, 200).body
		if !strings.HasPrefix(str(body["next_cursor"]), "sem1.") {
			t.Errorf("semantic cursor = %v", body["next_cursor"])
		}
	})
	t.Run("semantic respects the field grant", func(t *testing.T) {
		for _, h := range allHits(t, r, "/v1/search/semantic?q=weekly%20sync&limit=50", demors.GrantNarrow) {
			if at(h, "stream") != "transcripts" || !slices.Equal(toStrings(at(h, "matched_fields")), []string{"text"}) {
				t.Errorf("narrow semantic hit %s matched %v", hitKey(h), at(h, "matched_fields"))
			}
		}
	})
	t.Run("hybrid", func(t *testing.T) {
		body := r.get(t, "/v1/search/hybrid?q=zephyrmarker%20checklist&limit=5", demors.GrantClient).mustStatus(t, 200).body
		hits := list(body["data"])
		if len(hits) == 0 || at(hits[0], "record_key") != "note-2" {
			t.Fatalf("hybrid top hit = %v", at(hits, 0, "record_key"))
		}
		for _, h := range hits {
			sources := toStrings(at(h, "retrieval_sources"))
			if at(h, "retrieval_mode") != "hybrid" || len(sources) == 0 {
				t.Errorf("hybrid hit = %v", h)
			}
			_, hasLex := object(at(h, "scores"))["lexical"]
			if hasLex != slices.Contains(sources, "lexical") {
				t.Errorf("scores %v disagree with sources %v", at(h, "scores"), sources)
			}
			if _, has := object(h)["evidence_excerpts"]; has && !slices.Contains(sources, "lexical") {
				t.Errorf("semantic-only hybrid hit %s carries evidence", hitKey(h))
			}
		}
	})
}
