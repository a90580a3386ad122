package pdpp_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// handle is one visible handle and the continuation that serves it.
type handle struct {
	from string         // where it was seen
	tool string         // tool to call, or "" for a resource read
	args map[string]any // tool arguments
	uri  string         // resource URI
}

func (hd handle) key() string {
	if hd.tool == "" {
		return "resource " + hd.uri
	}
	return hd.tool + " " + mustJSON(hd.args)
}

var (
	firstFetchRE = regexp.MustCompile(`first_fetch_id=(\S+)`)
	visibleIDRE  = regexp.MustCompile(`(?m)(?:^|\s)id=(\S+)`)
)

// visibleHandles collects every handle a model can see in one result: calls
// and ids in content[] text, continuations, ids and cursors in
// structuredContent, and blob URIs in either.
func visibleHandles(t *testing.T, r callResult) []handle {
	t.Helper()
	var out []handle
	for _, c := range visibleCalls(r.Text) {
		out = append(out, handle{from: "text call " + c.Tool, tool: c.Tool, args: c.Args})
	}
	for _, m := range firstFetchRE.FindAllStringSubmatch(r.Text, -1) {
		out = append(out, handle{from: "text first_fetch_id", tool: "fetch", args: map[string]any{"id": m[1]}})
	}
	for _, m := range visibleIDRE.FindAllStringSubmatch(r.Text, -1) {
		if _, err := handles.ParseID(m[1]); err != nil {
			t.Errorf("text shows id=%s, which the read tools refuse: %v", m[1], err)
			continue
		}
		out = append(out, handle{from: "text id=", tool: "fetch", args: map[string]any{"id": m[1]}})
	}
	for _, u := range blobURIs(r.Text) {
		out = append(out, handle{from: "text blob URI", uri: u})
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if tool, args, ok := continuation(x); ok {
				out = append(out, handle{from: "structured " + path, tool: tool, args: args})
			}
			for k, child := range x {
				if path == "" && k == "data" {
					continue // the RS envelope, verbatim; its ids are the RS's own
				}
				if s, ok := child.(string); ok {
					switch {
					case k == "id" && path != "" && !strings.HasSuffix(path, ".arguments"):
						out = append(out, handle{from: "structured " + path + ".id", tool: "fetch", args: map[string]any{"id": s}})
					case k == "next_cursor" && path == "":
						out = append(out, cursorHandle(r, s))
					}
				}
				walk(path+"."+k, child)
			}
		case []any:
			for _, child := range x {
				walk(path+"[]", child)
			}
		case string:
			for _, u := range blobURIs(x) {
				out = append(out, handle{from: "structured " + path, uri: u})
			}
		}
	}
	walk("", r.Structured)
	if id, ok := r.Structured["id"].(string); ok && r.Tool != "fetch" {
		out = append(out, handle{from: "structured id", tool: "fetch", args: map[string]any{"id": id}})
	}
	return out
}

// cursorHandle is the continuation of a structured next_cursor: the same call
// with the cursor (for read_record_field, the cursor and its field).
func cursorHandle(r callResult, cursor string) handle {
	args := map[string]any{}
	switch r.Tool {
	case "read_record_field":
		args["field_path"] = r.Structured["field_path"]
	default:
		for k, v := range r.Args {
			args[k] = v
		}
	}
	args["cursor"] = cursor
	return handle{from: "structured next_cursor", tool: r.Tool, args: args}
}

// checkModelVisible asserts the rules every model-visible output keeps.
func checkModelVisible(t *testing.T, r callResult, blobBodies []string) {
	t.Helper()
	for _, part := range []struct{ name, s string }{{"content[]", r.RawContent}, {"structuredContent", r.RawStruct}} {
		if strings.Contains(part.s, handles.FieldWindowURIPrefix) {
			t.Errorf("%s %s: %s exposes a pdpp://field-window/ URI", r.Tool, mustJSON(r.Args), part.name)
		}
		if strings.Contains(part.s, handles.RecordURIPrefix) {
			t.Errorf("%s %s: %s exposes a raw pdpp://record/ URI", r.Tool, mustJSON(r.Args), part.name)
		}
		if strings.Contains(part.s, ";base64,") {
			t.Errorf("%s: %s inlines a data URI", r.Tool, part.name)
		}
		for _, body := range blobBodies {
			if strings.Contains(part.s, body) {
				t.Errorf("%s %s: %s inlines blob bytes", r.Tool, mustJSON(r.Args), part.name)
			}
		}
	}
	if strings.Contains(r.RawContent, `"resource_link"`) {
		t.Errorf("%s: content[] holds a resource_link", r.Tool)
	}
}

// TestNoDeadEnds scripts a session and calls the continuation of every
// handle visible in it.
func TestNoDeadEnds(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	// Blob bodies as base64, read from the RS, to prove none is inlined.
	var blobBodies []string
	note := h.mustOK(t, "fetch", map[string]any{"id": connNotes + "/notes:note-2"})
	for _, u := range blobURIs(note.Text) {
		status, b := h.rsGet(t, tokClient, "/v1/blobs/"+strings.TrimPrefix(u, "pdpp://blob/"))
		if status != http.StatusOK {
			t.Fatalf("RS blob %s: %d", u, status)
		}
		blobBodies = append(blobBodies, base64.StdEncoding.EncodeToString(b)[:64])
	}
	if len(blobBodies) == 0 {
		t.Fatalf("note-2 shows no blob:\n%s", note.Text)
	}
	first := h.mustOK(t, "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2})
	cursor, _ := first.Structured["next_cursor"].(string)
	session := []struct {
		tool string
		args map[string]any
	}{
		{"search", map[string]any{"q": "zephyrmarker", "limit": 4}},
		{"search", map[string]any{"q": "needle5", "streams": []string{"transcripts"}}},
		{"search", map[string]any{"q": "weekly sync", "mode": "semantic", "limit": 3}},
		{"search", map[string]any{"q": "zephyrmarker", "mode": "hybrid", "limit": 3}},
		{"query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2}},
		{"query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 2, "cursor": cursor}},
		{"query_records", map[string]any{"stream": "notes", "limit": 3}},
		{"fetch", map[string]any{"id": connNotes + "/notes:note-2"}},
		{"fetch", map[string]any{"id": connMain + "/transcripts:tr-5"}},
		{"fetch", map[string]any{"id": connMain + "/videos:vid-3"}},
		{"read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "q": "needle5"}},
		{"read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "offset_chars": 4096}},
		{"aggregate", map[string]any{"stream": "notes", "metric": "count", "group_by": "folder"}},
		{"schema", map[string]any{}},
	}
	done := map[string]bool{}
	for i, step := range session {
		t.Run(fmt.Sprintf("%02d %s", i, step.tool), func(t *testing.T) {
			r := h.mustOK(t, step.tool, step.args)
			checkModelVisible(t, r, blobBodies)
			found := visibleHandles(t, r)
			if step.tool != "aggregate" && step.tool != "schema" && len(found) == 0 {
				t.Fatalf("no visible handle in:\n%s", r.Text)
			}
			sort.SliceStable(found, func(i, j int) bool { return found[i].key() < found[j].key() })
			for _, hd := range found {
				if done[hd.key()] {
					continue
				}
				done[hd.key()] = true
				if hd.tool == "" {
					contents, err := h.readResource(t, hd.uri)
					if err != nil || len(contents) == 0 {
						t.Errorf("%s: resources/read %s failed: %v", hd.from, hd.uri, err)
					}
					continue
				}
				next := h.call(t, hd.tool, hd.args)
				if next.Res.IsError {
					t.Errorf("dead end: %s -> %s failed:\n%s", hd.from, hd.key(), next.Text)
					continue
				}
				checkModelVisible(t, next, blobBodies)
			}
		})
	}
	kinds := map[string]int{}
	for k := range done {
		kinds[strings.SplitN(k, " ", 2)[0]]++
	}
	t.Logf("continuations followed: %v", kinds)
	for _, tool := range []string{"fetch", "read_record_field", "search", "query_records", "resource"} {
		if kinds[tool] == 0 {
			t.Errorf("the session showed no %s continuation; the scan would prove nothing about it", tool)
		}
	}
}

// TestBoundedOutput checks that content[] text stays bounded for wide reads
// and that cut text always says how to read on.
func TestBoundedOutput(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	const limit = evidence.MaxTextBytes + 200 // the cap plus its one-line notice
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		check func(t *testing.T, r callResult)
	}{
		{"query_records 100 transcripts", "query_records", map[string]any{"stream": "transcripts", "connection_id": connMain, "limit": 100}, func(t *testing.T, r callResult) {
			if n := len(r.Structured["records"].([]any)); n < 40 {
				t.Errorf("records = %d, want the whole page", n)
			}
			if !strings.Contains(r.Text, "of 40 on this page shown with previews") || !strings.Contains(r.Text, "\nnext: query_records {") {
				t.Errorf("text does not say more records exist on the page and how to read on:\n%.300s", r.Text)
			}
		}},
		{"query_records 100 across connections", "query_records", map[string]any{"stream": "transcripts", "limit": 100}, nil},
		{"search 100 hits", "search", map[string]any{"q": "zephyrmarker", "limit": 100}, func(t *testing.T, r callResult) {
			// Compact: the hits that fit the budget, and the text says the
			// rest are one next call away (and the whole page one full call,
			// of the size it states).
			if r.Structured["truncated"] != true || r.Structured["full"] == nil || r.Structured["next"] == nil {
				t.Errorf("a cut page does not say so: truncated=%v full=%v next=%v", r.Structured["truncated"], r.Structured["full"], r.Structured["next"])
			}
			if !strings.Contains(r.Text, "on this page shown with previews") || !strings.Contains(r.Text, "\nnext: search {") ||
				!regexp.MustCompile(`whole page at once \(\d+ bytes\): search \{[^\n]*"detail":"full"`).MatchString(r.Text) {
				t.Errorf("text does not say more hits exist and how to read them:\n%.300s", r.Text)
			}
		}},
		{"fetch a 20k-char record", "fetch", map[string]any{"id": connMain + "/transcripts:tr-5"}, func(t *testing.T, r callResult) {
			if strings.Contains(r.Text, "(whole record shown)") {
				t.Errorf("a cut record claims to be whole")
			}
			if !strings.Contains(r.Text, "chars in all") || !strings.Contains(r.Text, `read_record_field {"id":"`+connMain+`/transcripts:tr-5","field_path":"text","offset_chars":`) {
				t.Errorf("cut text field does not state its size and the read continuation:\n%s", r.Text)
			}
			if len(r.Text) > 2*evidence.FetchTextChars {
				t.Errorf("fetch text is %d bytes", len(r.Text))
			}
		}},
		{"widest field window", "read_record_field", map[string]any{"id": connMain + "/transcripts:tr-5", "field_path": "text", "limit_chars": 16384}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.mustOK(t, tc.tool, tc.args)
			if len(r.Text) > limit {
				t.Errorf("content[] text is %d bytes, over %d", len(r.Text), limit)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// searchCards splits search text into per-hit cards keyed by result id.
func searchCards(text string) map[string]string {
	cards := map[string]string{}
	var id string
	var b strings.Builder
	flush := func() {
		if id != "" {
			cards[id] = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.Split(text, "\n") {
		if m := regexp.MustCompile(`^\[\d+\] id=(\S+)`).FindStringSubmatch(line); m != nil {
			flush()
			id = m[1]
		} else if !strings.HasPrefix(line, " ") {
			flush()
			id = ""
			continue
		}
		b.WriteString(line + "\n")
	}
	flush()
	return cards
}

// visibleAround returns the letters and digits before the first <mark> and
// after the first </mark> of s.
func visibleAround(s string) (before, after int) {
	count := func(x string) int {
		n := 0
		for _, r := range x {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				n++
			}
		}
		return n
	}
	i := strings.Index(s, "<mark>")
	j := strings.Index(s, "</mark>")
	if i < 0 || j < i {
		return 0, 0
	}
	return count(s[:i]), count(s[j+len("</mark>"):])
}

// TestSearchEvidenceVisibility checks what a content-only client sees for
// hits with and without a proven match window.
func TestSearchEvidenceVisibility(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	t.Run("proven window: bounded context on both sides, before wrappers", func(t *testing.T) {
		r := h.mustOK(t, "search", map[string]any{"q": "needle5", "streams": []string{"transcripts"}})
		cards := searchCards(r.Text)
		if len(cards) == 0 {
			t.Fatalf("no cards:\n%s", r.Text)
		}
		for id, card := range cards {
			lines := strings.Split(card, "\n")
			ev, read, wrapper := -1, -1, -1
			for i, l := range lines {
				switch {
				case strings.Contains(l, "evidence text"):
					ev = i
				case strings.Contains(l, "read: read_record_field"):
					read = i
				case strings.Contains(l, "stream="):
					wrapper = i
				}
			}
			if ev < 0 || read < 0 {
				t.Errorf("%s: card lacks the evidence line or the read hint:\n%s", id, card)
				continue
			}
			if wrapper >= 0 && wrapper < ev {
				t.Errorf("%s: wrapper line precedes the evidence", id)
			}
			before, after := visibleAround(lines[ev])
			if before < 20 || after < 20 {
				t.Errorf("%s: evidence has %d/%d visible chars around the mark:\n%s", id, before, after, lines[ev])
			}
			if !strings.Contains(lines[ev], "<mark>needle5</mark>") {
				t.Errorf("%s: evidence does not mark the match", id)
			}
			if n := evidence.CountChars(strings.NewReplacer("<mark>", "", "</mark>", "").Replace(lines[ev])); n > evidence.PreviewChars+80 {
				t.Errorf("%s: evidence line is %d chars, not bounded", id, n)
			}
			if !strings.Contains(lines[read], `"id":"`+id+`"`) || !strings.Contains(lines[read], `"field_path":"text"`) {
				t.Errorf("%s: read hint does not carry the id and field:\n%s", id, lines[read])
			}
		}
		if i, j := strings.Index(r.Text, "evidence text"), strings.Index(r.Text, `search "needle5"`); i < 0 || j < i {
			t.Errorf("evidence does not come before the search summary")
		}
	})
	noWindow := []struct {
		name string
		args map[string]any
		ids  []string // hits that must have no proven window
	}{
		{"title-only note matches", map[string]any{"q": "zephyrmarker", "streams": []string{"notes"}}, []string{connNotes + "/notes:note-2", connNotes + "/notes:note-6"}},
		{"semantic hits", map[string]any{"q": "weekly sync", "mode": "semantic", "limit": 3}, nil},
	}
	for _, tc := range noWindow {
		t.Run("no proven window: "+tc.name, func(t *testing.T) {
			r := h.mustOK(t, "search", tc.args)
			snippets := rsSnippets(t, h)
			cards := searchCards(r.Text)
			ids := tc.ids
			if ids == nil {
				for id := range cards {
					ids = append(ids, id)
				}
				if strings.Contains(withoutSnippetLines(r.Text), "<mark>") || strings.Contains(r.Text, "evidence ") {
					t.Errorf("semantic hits show evidence:\n%s", r.Text)
				}
			}
			if len(ids) == 0 {
				t.Fatalf("no hits:\n%s", r.Text)
			}
			for _, id := range ids {
				card, ok := cards[id]
				if !ok {
					t.Errorf("no card for %s:\n%s", id, r.Text)
					continue
				}
				// The RS's own snippet is shown, bounded and labelled as not
				// a proven window; nothing else reads as evidence.
				if sn, ok := snippets[id]; ok && sn.Text != "" {
					line := "RS snippet of " + sn.Field + " (not a proven window): "
					i := strings.Index(card, line)
					if i < 0 {
						t.Errorf("%s: card does not show the RS snippet of %s:\n%s", id, sn.Field, card)
					} else {
						shown, _, _ := strings.Cut(card[i+len(line):], "\n")
						if !strings.Contains(sn.Text, strings.Trim(shown, evidence.Ellipsis)) || evidence.CountChars(shown) > 250 {
							t.Errorf("%s: snippet line %q is not a bounded part of the RS snippet %q", id, shown, sn.Text)
						}
					}
				}
				if rest := withoutSnippetLines(card); strings.Contains(rest, "evidence") || strings.Contains(rest, "<mark>") {
					t.Errorf("%s: card without a proven window shows evidence:\n%s", id, card)
				}
				card = withoutSnippetLines(card)
				calls := visibleCalls(card)
				if len(calls) == 0 || (calls[0].Tool != "fetch" && calls[0].Tool != "read_record_field") || calls[0].Args["id"] != id {
					t.Errorf("%s: card has no fetch/read continuation:\n%s", id, card)
				}
				ref, _ := handles.ParseID(id)
				for _, v := range h.textFields(t, ref) {
					if len(v) > 40 && strings.Contains(card, v[:40]) {
						t.Errorf("%s: card shows field text that was not a proven match: %.40s", id, v)
					}
				}
			}
			for _, res := range r.Structured["results"].([]any) {
				m := res.(map[string]any)
				if (tc.ids == nil || contains(tc.ids, m["id"])) && m["evidence_preview"] != nil {
					t.Errorf("%v: structured result carries evidence without a proven window", m["id"])
				}
			}
		})
	}
}

// rsSnippets reads the snippet of every hit of the last RS search answer,
// by result id.
func rsSnippets(t *testing.T, h *harness) map[string]rsclient.SearchSnippet {
	t.Helper()
	ex, ok := h.log.last(func(p string) bool { return strings.HasPrefix(p, "/v1/search") })
	if !ok {
		t.Fatalf("no RS search request: %v", h.log.requests())
	}
	var page rsclient.SearchResultList
	if err := json.Unmarshal(ex.Body, &page); err != nil {
		t.Fatal(err)
	}
	out := map[string]rsclient.SearchSnippet{}
	for _, hit := range page.Data {
		if hit.Snippet != nil {
			out[handles.RecordRef{ConnectionID: hit.ConnectionId, Stream: hit.Stream, RecordID: hit.RecordKey}.ID()] = *hit.Snippet
		}
	}
	return out
}

// withoutSnippetLines drops the labelled RS snippet lines from a text.
func withoutSnippetLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "RS snippet of ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func contains(list []string, v any) bool {
	s, _ := v.(string)
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
