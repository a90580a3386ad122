package evidence

import (
	"encoding/json"
	"fmt"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// samplesDir holds real RS responses (testdata/ at the module root).
var samplesDir = testkit.SamplesDir()

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samplesDir, name))
	if err != nil {
		t.Fatalf("RS sample %s: %v", name, err)
	}
	return b
}

func TestSearchEvidenceFromRealSample(t *testing.T) {
	body := sample(t, "search-lexical.json")
	v, err := RenderSearch(body, SearchRequest{Q: "zephyrmarker", Limit: 3}, "http://127.0.0.1:7663")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Results) != 3 {
		t.Fatalf("results %d", len(v.Results))
	}
	first := v.Results[0]
	if first.ID != "cin_3325c9636dab3a5344743485/transcripts:tr-10" {
		t.Fatalf("id %q", first.ID)
	}
	lines := strings.Split(v.FullText(), "\n")
	if lines[0] != "first_fetch_id="+first.ID {
		t.Fatalf("first line %q", lines[0])
	}
	// Evidence comes before the generic summary line and carries the read call.
	evIdx := strings.Index(v.FullText(), "evidence text")
	sumIdx := strings.Index(v.FullText(), `search "zephyrmarker"`)
	if evIdx < 0 || sumIdx < 0 || evIdx > sumIdx {
		t.Fatalf("evidence must precede the summary:\n%s", v.FullText())
	}
	wantRead := `read_record_field {"id":"cin_3325c9636dab3a5344743485/transcripts:tr-10","field_path":"text","q":"zephyrmarker"}`
	if !strings.Contains(v.FullText(), wantRead) {
		t.Fatalf("missing read call %s in\n%s", wantRead, v.FullText())
	}
	if !strings.Contains(first.EvidencePreview, "<mark>zephyrmarker</mark>") {
		t.Fatalf("preview lost the mark: %q", first.EvidencePreview)
	}
	// Surrounding text on both sides of the match.
	i := strings.Index(first.EvidencePreview, "<mark>")
	j := strings.Index(first.EvidencePreview, "</mark>")
	if CountChars(first.EvidencePreview[:i]) < 15 || CountChars(first.EvidencePreview[j+7:]) < 15 {
		t.Fatalf("preview lacks context: %q", first.EvidencePreview)
	}
	if first.EvidenceComplete == nil || *first.EvidenceComplete {
		t.Fatal("a truncated RS excerpt must not be reported complete")
	}
	if v.NextPage == nil || v.NextPage.Arguments["cursor"] != v.NextCursor {
		t.Fatal("next page continuation missing")
	}
	if strings.Contains(v.FullText(), "pdpp://") {
		t.Fatal("visible text must not carry pdpp:// URIs")
	}
	s, _ := json.Marshal(v.Structured())
	if strings.Contains(string(s), "pdpp://") {
		t.Fatal("structured output must not carry pdpp:// URIs")
	}
	if v.Ladder[0].EvidencePreview != first.EvidencePreview {
		t.Fatal("content ladder must carry the same preview")
	}
}

func TestSearchWithoutProvenWindow(t *testing.T) {
	body := sample(t, "search-semantic-stub.json")
	v, err := RenderSearch(body, SearchRequest{Q: "weekly sync", Mode: "semantic"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Results {
		if r.EvidencePreview != "" || r.EvidenceField != "" {
			t.Fatalf("semantic hit without excerpt got evidence: %+v", r)
		}
		if r.Next.Tool != ToolFetch || r.Next.Arguments["id"] != r.ID {
			t.Fatalf("hit without window needs a fetch continuation: %+v", r.Next)
		}
	}
	if strings.Contains(v.FullText(), "evidence ") {
		t.Fatalf("no evidence may be invented:\n%s", v.FullText())
	}
	if !strings.Contains(v.FullText(), "no proven text window") || !strings.Contains(v.FullText(), `fetch {"id":"`) {
		t.Fatalf("identity and fetch continuation must be visible:\n%s", v.FullText())
	}
	// The RS's own snippet may be shown, but only on a line that says it
	// is not a proven window; it is never promoted to evidence.
	for _, line := range strings.Split(v.FullText(), "\n") {
		if strings.Contains(line, "Transcript 42") && !strings.Contains(line, "(not a proven window)") {
			t.Fatalf("snippet text shown without its label: %q", line)
		}
	}
}

func TestWindowFromRealSample(t *testing.T) {
	body := sample(t, "field-window-q-match.json")
	v, err := RenderWindowFrom(body, handles.RecordRef{ConnectionID: "cin_x", Stream: "transcripts", RecordID: "tr-5"}, 0, 0, func(off, lim int) string {
		return fmt.Sprintf("c-%d-%d", off, lim)
	})
	if err != nil {
		t.Fatal(err)
	}
	if v.Window.TotalChars != 22500 || v.Window.StartChars != 11174 || v.Window.Complete {
		t.Fatalf("window state %+v", v.Window)
	}
	if v.Next == nil || v.Next.Arguments["offset_chars"] != 11381 {
		t.Fatalf("next %+v", v.Next)
	}
	// After a q window, paging uses the default size both ways; the previous
	// window ends exactly where this one starts.
	if v.Previous == nil || v.Previous.Arguments["offset_chars"] != 11174-DefaultWindowChars || v.Previous.Arguments["limit_chars"] != nil {
		t.Fatalf("previous %+v", v.Previous)
	}
	for _, want := range []string{"chars 11174-11381 of 22500 (partial", "match at 11254-11261", "next: read_record_field", "previous: read_record_field", "needle5 zephyrmarker"} {
		if !strings.Contains(v.Rendered, want) {
			t.Fatalf("missing %q in\n%s", want, v.Rendered)
		}
	}
}

func TestShortFieldComplete(t *testing.T) {
	body := sample(t, "field-window-short-field-complete.json")
	v, err := RenderWindowFrom(body, handles.RecordRef{Stream: "videos", RecordID: "vid-5"}, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Window.Complete || v.Next != nil || v.Previous != nil {
		t.Fatalf("short field must be complete without continuations: %+v", v)
	}
	if !strings.Contains(v.Rendered, "complete: whole field shown") {
		t.Fatal(v.Rendered)
	}
}

func TestDocumentFromRealSample(t *testing.T) {
	body := sample(t, "record-transcripts-tr-5.json")
	doc, err := RenderDocumentWithin(body, handles.RecordRef{Stream: "transcripts", RecordID: "tr-5"}, "http://rs", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ID != "cin_3325c9636dab3a5344743485/transcripts:tr-5" {
		t.Fatalf("id %q", doc.ID)
	}
	if len(doc.Rendered) > 4000 {
		t.Fatalf("content text not bounded: %d bytes", len(doc.Rendered))
	}
	// The text shows the field's first FetchTextChars/4 characters; reading
	// on starts right after them.
	want := fmt.Sprintf(`read on: read_record_field {"id":"cin_3325c9636dab3a5344743485/transcripts:tr-5","field_path":"text","offset_chars":%d}`, FetchTextChars/4)
	if !strings.Contains(doc.Rendered, want) {
		t.Fatalf("long field needs a read continuation from where its preview stops (%s):\n%s", want, doc.Rendered)
	}
	if doc.Title != "transcripts tr-5" {
		t.Fatalf("title must stay neutral without declared roles: %q", doc.Title)
	}
}

// TestStructuredFieldReadsOnWhereItStops: a text field cut in fetch's
// structured text is described in metadata.fields with the part kept and
// a read_record_field call from the character after it.
func TestStructuredFieldReadsOnWhereItStops(t *testing.T) {
	text := strings.Repeat("wörd ", 20000)
	body := []byte(`{"object":"record","id":"r1","stream":"notes","connection_id":"c","data":{"body":"` + text + `"}}`)
	doc, err := RenderDocumentWithin(body, handles.RecordRef{Stream: "notes", RecordID: "r1"}, "", nil, 32768)
	if err != nil {
		t.Fatal(err)
	}
	fields, _ := doc.Metadata["fields"].(map[string]any)
	fv, ok := fields["body"].(FieldView)
	if !ok || fv.Next == nil || fv.Complete {
		t.Fatalf("cut field has no descriptor: %#v", fields["body"])
	}
	value, _ := fv.Value.(string)
	if n := CountChars(value); n == 0 || fv.Next.Arguments["offset_chars"] != n || !strings.HasPrefix(text, value) {
		t.Errorf("descriptor keeps %d chars but reads on at %v", n, fv.Next.Arguments["offset_chars"])
	}
}

func TestAmbiguousErrorText(t *testing.T) {
	body := sample(t, "multi-conn-error-ambiguous-connection-record.json")
	var env struct{ Error json.RawMessage }
	_ = json.Unmarshal(body, &env)
	txt := ErrorText(env.Error, "fetch", map[string]any{"id": "transcripts:tr-5"})
	for _, want := range []string{"error ambiguous_connection", "connection_id=cin_peer0second0000000000000 (loom (second account))", `retry with one of them, e.g. fetch {"id":"transcripts:tr-5","connection_id":"cin_3325c9636dab3a5344743485"}`} {
		if !strings.Contains(txt, want) {
			t.Fatalf("missing %q in\n%s", want, txt)
		}
	}
}

func TestAggregateText(t *testing.T) {
	cases := []struct{ file, want string }{
		{"aggregate-count.json", "count = 60"},
		{"aggregate-group-by-language.json", "  en: 40"},
		{"aggregate-group-by-time-month.json", "over created_at per month"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			txt, err := RenderAggregate(sample(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(txt, tc.want) {
				t.Fatalf("missing %q in\n%s", tc.want, txt)
			}
		})
	}
}

// TestBoundedForAnySize feeds synthetic RS bodies far larger than any budget
// and checks content[] text stays bounded.
func TestBoundedForAnySize(t *testing.T) {
	snippet := strings.Repeat("lorem ipsum ", 1700) + "<mark>needle</mark>" + strings.Repeat(" dolor sit", 2000)
	var hits []map[string]any
	for i := 0; i < 100; i++ {
		hits = append(hits, map[string]any{
			"object": "search_result", "record_key": fmt.Sprintf("r-%d", i), "stream": "s", "connection_id": "cin_a",
			"snippet":           map[string]any{"field": "body", "text": snippet},
			"evidence_excerpts": []any{map[string]any{"field_path": "body", "preview_text": snippet, "truncated": true}},
		})
	}
	body, _ := json.Marshal(map[string]any{"object": "list", "data": hits, "has_more": true, "next_cursor": "c1"})
	v, err := RenderSearch(body, SearchRequest{Q: "needle"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.FullText()) > MaxTextBytes+200 {
		t.Fatalf("search text %d bytes", len(v.FullText()))
	}
	for _, r := range v.Results {
		if CountChars(r.EvidencePreview) > PreviewChars+len("<mark></mark>")+2 {
			t.Fatalf("preview %d chars", CountChars(r.EvidencePreview))
		}
	}

	huge := strings.Repeat("word ", 1<<18) // ~1.3 MB
	rec, _ := json.Marshal(map[string]any{"id": "r1", "stream": "s", "connection_id": "cin_a", "object": "record",
		"data": map[string]any{"id": "r1", "body": huge, "blob": strings.Repeat("QUJD", 300000), "meta": map[string]any{"k": strings.Repeat("v", 5000)}}})
	doc, err := RenderDocumentWithin(rec, handles.RecordRef{Stream: "s", RecordID: "r1"}, "", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Rendered) > 6000 {
		t.Fatalf("fetch text %d bytes", len(doc.Rendered))
	}
	if CountChars(doc.Text) > 3*StructuredTextChars {
		t.Fatalf("structured text %d chars", CountChars(doc.Text))
	}
	if strings.Contains(doc.Rendered, "QUJDQUJD") || strings.Contains(doc.Text, "QUJDQUJD") {
		t.Fatal("base64-like body must never be inlined")
	}
	list, _ := json.Marshal(map[string]any{"object": "list", "data": []any{json.RawMessage(rec), json.RawMessage(rec)}})
	lv, err := RenderList(list, "s", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lv.Rendered) > 4000 {
		t.Fatalf("list text %d bytes", len(lv.Rendered))
	}
}

func TestDescribeField(t *testing.T) {
	cases := []struct {
		name, raw, kind string
		complete        bool
		lineHas         string
	}{
		{"short text", `"hello"`, "text", true, "hello"},
		{"long text", `"` + strings.Repeat("a b ", 200) + `"`, "text", false, "read on: read_record_field"},
		{"number", `42`, "number", true, "42"},
		{"bool", `true`, "boolean", true, "true"},
		{"null", `null`, "null", true, "null"},
		{"small json", `{"a":1}`, "json", true, `{"a":1}`},
		{"large json", `{"a":"` + strings.Repeat("x", 900) + `"}`, "json", false, `fetch {"id":"c/s:r","detail":"full","fields":["f"]}`},
		{"blob", `{"blob_id":"blob_1","media_type":"image/png","size_bytes":2048}`, "blob", true, "resources/read pdpp://blob/blob_1 (RS GET /v1/blobs/blob_1)"},
		{"base64", `"` + strings.Repeat("QUJD", 100) + `"`, "binary", false, "not shown"},
		{"data uri", `"data:image/png;base64,iVBORw0KGgo="`, "binary", false, "not shown"},
		{"prose not binary", `"` + strings.Repeat("abc def ", 40) + `"`, "text", false, "read on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fv := describeField("c/s:r", "f", json.RawMessage(tc.raw), 100, nil)
			if fv.Kind != tc.kind || fv.Complete != tc.complete {
				t.Fatalf("kind=%s complete=%v", fv.Kind, fv.Complete)
			}
			if !strings.Contains(fv.Line, tc.lineHas) {
				t.Fatalf("line %q lacks %q", fv.Line, tc.lineHas)
			}
		})
	}
}

func TestCenterOnMark(t *testing.T) {
	cases := []struct {
		in     string
		n      int
		want   string
		wasCut bool
	}{
		{"abc <mark>x</mark> def", 100, "abc <mark>x</mark> def", false},
		{"0123456789<mark>m</mark>abcdefghij", 5, "…89<mark>m</mark>ab…", true},
		{"<mark>m</mark>abcdefghij", 5, "<mark>m</mark>abcd…", true},
		{"no marks at all here", 5, "no ma…", true},
		{"line\nbreaks\tfolded <mark>m</mark>", 100, "line breaks folded <mark>m</mark>", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, cut := CenterOnMark(tc.in, tc.n)
			if got != tc.want || cut != tc.wasCut {
				t.Fatalf("got %q,%v want %q,%v", got, cut, tc.want, tc.wasCut)
			}
		})
	}
}

// FuzzVisibleChars holds visibleChars to what it stands for: the code
// points left once every match marker is taken out of a line as oneLine
// leaves it.
func FuzzVisibleChars(f *testing.F) {
	for _, s := range []string{"", "<mark>x</mark>", "a<mark><mark>b</mark></mark>c", "<ma<mark>rk>", "é<mark>ü</mark>\xff", "</mark<mark>>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = oneLine(s)
		want := CountChars(strings.NewReplacer(markOpen, "", markClose, "").Replace(s))
		if got := visibleChars(s); got != want {
			t.Fatalf("visibleChars(%q) = %d, want %d", s, got, want)
		}
	})
}

func TestRolesAreDeclaredOnly(t *testing.T) {
	schema := []byte(`{"connectors":[{"streams":[
		{"name":"notes","field_capabilities":{"title":"t=string,role=primary-title,eq","body":"t=string,lex","heading":{"role":"secondary"}}},
		{"name":"other","field_capabilities":{"title":"t=string,eq"}}]}]}`)
	roles := AllRoles(schema)["notes"]
	if roles["title"] != "primary-title" || roles["heading"] != "secondary" || roles["body"] != "" {
		t.Fatalf("roles %v", roles)
	}
	if got := AllRoles(schema)["other"]; len(got) != 0 {
		t.Fatalf("a field named title without a declared role must not get one: %v", got)
	}
	rec := []byte(`{"id":"n1","stream":"notes","connection_id":"c","data":{"body":"b","title":"Shopping list"}}`)
	doc, err := RenderDocumentWithin(rec, handles.RecordRef{Stream: "notes", RecordID: "n1"}, "", roles, 0)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Shopping list" || !strings.HasPrefix(doc.Text, "title: ") {
		t.Fatalf("declared title role not used: %q\n%s", doc.Title, doc.Text)
	}
	doc, _ = RenderDocumentWithin(rec, handles.RecordRef{Stream: "notes", RecordID: "n1"}, "", nil, 0)
	if doc.Title != "notes n1" || !strings.HasPrefix(doc.Text, "body: ") {
		t.Fatalf("without roles presentation must stay neutral: %q\n%s", doc.Title, doc.Text)
	}
}

func TestWindowPaging(t *testing.T) {
	mk := func(start, end, total int, limit int) []byte {
		next := end
		b, _ := json.Marshal(map[string]any{"object": "field_window", "field": map[string]any{"path": "text"},
			"window": map[string]any{"text": "x", "start_chars": start, "end_chars": end, "total_chars": total,
				"limit_chars": limit, "complete": start == 0 && end == total, "has_more": end < total,
				"next_offset_chars": &next, "previous_offset_chars": max(0, start-limit)}})
		return b
	}
	cases := []struct {
		name                  string
		body                  []byte
		limit                 int
		nextOff, prevOff      any
		prevLimit, nextLimitA any
	}{
		{"first window", mk(0, 100, 1000, 100), 100, 100, nil, nil, 100},
		{"middle", mk(300, 400, 1000, 100), 100, 400, 200, 100, 100},
		{"near start", mk(50, 150, 1000, 100), 100, 150, 0, 50, 100},
		{"last", mk(900, 1000, 1000, 100), 100, nil, 800, 100, nil},
		{"default size", mk(4096, 8192, 9000, 4096), 0, 8192, 0, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := RenderWindowFrom(tc.body, handles.RecordRef{Stream: "s", RecordID: "r"}, 0, tc.limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			var nextOff, prevOff, prevLimit, nextLimit any
			if v.Next != nil {
				nextOff, nextLimit = v.Next.Arguments["offset_chars"], v.Next.Arguments["limit_chars"]
			}
			if v.Previous != nil {
				prevOff, prevLimit = v.Previous.Arguments["offset_chars"], v.Previous.Arguments["limit_chars"]
			}
			if nextOff != tc.nextOff || prevOff != tc.prevOff || prevLimit != tc.prevLimit || nextLimit != tc.nextLimitA {
				t.Fatalf("next %v/%v previous %v/%v", nextOff, nextLimit, prevOff, prevLimit)
			}
		})
	}
}

// TestOneLineFastPath checks that the byte scan that lets oneLine return
// its input unchanged agrees with the folding loop on every kind of input.
func TestOneLineFastPath(t *testing.T) {
	for _, s := range []string{
		"", "a", "a b", " a", "a ", "a  b", "a\nb", "a\tb", "più città", "a\x00b", "a\x7fb",
		"\xff", "a \u0085 b", "a\u00a0b", "…", "x\u2028y", "a b c d e",
	} {
		if got, want := oneLine(s), foldLine(s); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestCutBytes checks the byte cut every capped text goes through: on valid
// UTF-8 it keeps the longest valid prefix of at most n bytes, and an invalid
// byte before the cut does not make it drop the text up to that byte.
func TestCutBytes(t *testing.T) {
	// longestValid is the cut by definition: the longest prefix of at most
	// n bytes that is valid UTF-8 (for s valid UTF-8).
	longestValid := func(s string, n int) string {
		n = min(max(n, 0), len(s))
		for !utf8.ValidString(s[:n]) {
			n--
		}
		return s[:n]
	}
	valid := []string{"", "plain ascii text", "héllo wörld", "日本語のテキスト", "a😀b😀c", strings.Repeat("é😀x", 40)}
	for _, s := range valid {
		for n := -1; n <= len(s)+1; n++ {
			t.Run(fmt.Sprintf("%q/%d", s, n), func(t *testing.T) {
				if got, want := cutBytes(s, n), longestValid(s, n); got != want {
					t.Fatalf("cutBytes = %q, want %q", got, want)
				}
			})
		}
	}
	invalid := []struct {
		name, s string
		n       int
		want    string
	}{
		{"invalid byte early, cut in ascii", "a\xffbcdefgh", 6, "a\xffbcde"},
		{"invalid byte early, cut splits a character", "a\xffbcé", 5, "a\xffbc"},
		{"invalid byte at the cut", "abc\xffdef", 4, "abc\xff"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			if got := cutBytes(tc.s, tc.n); got != tc.want {
				t.Fatalf("cutBytes(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

// TestCapTextEndsItsNote: the note of a cut text is a line of its own, so
// what a caller appends after it starts a new line, and it offers no
// paging (not every tool pages).
func TestCapTextEndsItsNote(t *testing.T) {
	got := CapText(strings.Repeat("x", 5000), 1000) + "next line"
	if len(got) > 1000+len("next line") || !strings.Contains(got, "]\nnext line") || strings.Contains(got, "page") {
		t.Errorf("cut text %q", got[len(got)-200:])
	}
}

// FuzzIsOneLine holds isOneLine to what it stands for: oneLine's rebuild
// leaves s as it is.
func FuzzIsOneLine(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", "a  b", " a", "a ", "a\tb", "a\x7fb", "é ü", "\xff", "12345678 1234567\x1f", "abcdefgh\x7fabcdefgh"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isOneLine(s), foldLine(s) == s; got != want {
			t.Fatalf("isOneLine(%q) = %v, but foldLine gives %q", s, got, foldLine(s))
		}
	})
}
