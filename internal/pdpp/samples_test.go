package pdpp_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// samplesDir holds the real reference RS answers (testdata/ at the module root).
var samplesDir = testkit.SamplesDir()

// sample is one captured RS exchange.
type sample struct {
	Name    string
	Method  string
	Path    string
	Query   url.Values
	Status  int
	Headers map[string]string
	Body    []byte
}

// loadSamples reads _index.json and every sample body; a missing one fails
// the test.
func loadSamples(t testing.TB) map[string]sample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, "_index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]struct {
		Request string            `json:"request"`
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatalf("_index.json: %v", err)
	}
	out := map[string]sample{}
	for name, e := range index {
		method, target, ok := strings.Cut(e.Request, " ")
		if !ok {
			t.Fatalf("%s: request line %q", name, e.Request)
		}
		u, err := url.Parse(target)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			t.Fatalf("%s: query: %v", name, err)
		}
		body, err := os.ReadFile(filepath.Join(samplesDir, name+".json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = sample{Name: name, Method: method, Path: u.Path, Query: q, Status: e.Status, Headers: e.Headers, Body: body}
	}
	return out
}

func replayKey(method, path string, q url.Values) string {
	return method + " " + path + "?" + q.Encode()
}

// replayRS answers each request whose method, path and query parameters (in
// any order) match a sample's request line with that sample's status,
// headers and body. A GET /v1/schema narrowed by stream or connection_id
// that has no exact sample is answered from the compact schema sample, which
// lists the same streams. Anything else is a miss: 404 and recorded.
type replayRS struct {
	byKey    map[string]sample
	schema   *sample
	mu       sync.Mutex
	misses   []string
	answered []string // sample names served, in order
}

func newReplayRS(t testing.TB, all map[string]sample, names []string, compactSchema string) *replayRS {
	t.Helper()
	r := &replayRS{byKey: map[string]sample{}}
	for _, n := range names {
		s, ok := all[n]
		if !ok {
			t.Fatalf("no sample %s", n)
		}
		k := replayKey(s.Method, s.Path, s.Query)
		if prev, dup := r.byKey[k]; dup {
			t.Fatalf("samples %s and %s share the request %s", prev.Name, n, k)
		}
		r.byKey[k] = s
	}
	if compactSchema != "" {
		s := all[compactSchema]
		r.schema = &s
	}
	return r
}

func (r *replayRS) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s, ok := r.byKey[replayKey(req.Method, req.URL.Path, req.URL.Query())]
	if !ok && req.URL.Path == "/v1/schema" && r.schema != nil {
		s, ok = *r.schema, true
	}
	r.mu.Lock()
	if ok {
		r.answered = append(r.answered, s.Name)
	} else {
		r.misses = append(r.misses, req.Method+" "+req.URL.RequestURI())
	}
	r.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"type":"replay_error","code":"no_sample","message":"no sample for %s"}}`, req.URL.RequestURI())
		return
	}
	for k, v := range s.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(s.Status)
	_, _ = w.Write(s.Body)
}

func (r *replayRS) takeMisses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.misses
	r.misses = nil
	return m
}

// sampleSets groups the samples by the token they were captured with.
func sampleSets(all map[string]sample) (single, multi []string) {
	for name := range all {
		switch {
		case strings.HasPrefix(name, "owner-"), strings.HasPrefix(name, "error-401-"):
		case strings.HasPrefix(name, "multi-conn-"):
			multi = append(multi, name)
		default:
			single = append(single, name)
		}
	}
	sort.Strings(single)
	sort.Strings(multi)
	return single, multi
}

func sampleJSON(t testing.TB, s sample) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.Body, &m); err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	return m
}

const (
	sampleConn = "cin_3325c9636dab3a5344743485"
	samplePeer = "cin_peer0second0000000000000"
)

// TestSamplesReplay runs the adapter against the real reference RS answers.
func TestSamplesReplay(t *testing.T) {
	all := loadSamples(t)
	single, multi := sampleSets(all)
	one := newReplayRS(t, all, single, "schema-view-compact")
	two := newReplayRS(t, all, multi, "multi-conn-schema-compact")
	hOne := newHarness(t, one, "sample-client-token")
	hTwo := newHarness(t, two, "sample-multi-token")
	tr5 := sampleConn + "/transcripts:tr-5"
	type replayCase struct {
		name   string
		multi  bool
		tool   string
		args   map[string]any
		sample string // the sample the data call must be answered by
		check  func(t *testing.T, r callResult, s sample)
	}
	cases := []replayCase{
		{"search lexical: evidence first", false, "search", map[string]any{"q": "zephyrmarker", "limit": 3}, "search-lexical", checkSampleSearchEvidence},
		{"search lexical page 1", false, "search", map[string]any{"q": "zephyrmarker", "limit": 2}, "search-lexical-page1", func(t *testing.T, r callResult, s sample) {
			if r.Structured["next_cursor"] != sampleJSON(t, s)["next_cursor"] || r.Structured["has_more"] != true {
				t.Errorf("next_cursor/has_more not carried: %v %v", r.Structured["next_cursor"], r.Structured["has_more"])
			}
			next, ok := callAfter(r.Text, "next page: ")
			if !ok || next.Args["cursor"] != sampleJSON(t, s)["next_cursor"] || next.Args["q"] != "zephyrmarker" {
				t.Errorf("next page call missing or wrong:\n%s", r.Text)
			}
		}},
		{"search semantic stub: no evidence", false, "search", map[string]any{"q": "weekly sync", "mode": "semantic", "limit": 2}, "search-semantic-stub", checkSampleSearchNoEvidence},
		{"field window default", false, "read_record_field", map[string]any{"id": tr5, "field_path": "text"}, "field-window-default", checkSampleWindow},
		{"field window offset", false, "read_record_field", map[string]any{"id": tr5, "field_path": "text", "offset_chars": 22000, "limit_chars": 1000}, "field-window-offset", checkSampleWindow},
		{"field window q match", false, "read_record_field", map[string]any{"id": tr5, "field_path": "text", "q": "needle5", "before_chars": 80, "after_chars": 120}, "field-window-q-match", checkSampleWindow},
		{"field window without connection", false, "read_record_field", map[string]any{"id": "transcripts:tr-5", "field_path": "text", "limit_chars": 200}, "field-window-no-connection-id", checkSampleWindow},
		{"field window short field complete", false, "read_record_field", map[string]any{"id": sampleConn + "/videos:vid-5", "field_path": "title"}, "field-window-short-field-complete", checkSampleWindow},
		{"fetch record", false, "fetch", map[string]any{"id": "transcripts:tr-5"}, "record-transcripts-tr-5", checkSampleFetch},
		{"fetch record with connection", false, "fetch", map[string]any{"id": tr5}, "record-transcripts-tr-5-with-connection", checkSampleFetch},
		{"query records page", false, "query_records", map[string]any{"stream": "transcripts", "limit": 2}, "records-transcripts-limit2", checkSampleList},
		{"query records page, full detail", false, "query_records", map[string]any{"stream": "transcripts", "limit": 2, "detail": "full"}, "records-transcripts-limit2", checkSampleList},
		{"query records projection", false, "query_records", map[string]any{"stream": "transcripts", "limit": 3, "fields": []string{"id", "video_id", "language"}}, "records-transcripts-fields-projection", checkSampleList},
		{"aggregate count", false, "aggregate", map[string]any{"stream": "transcripts", "metric": "count"}, "aggregate-count", checkSampleVerbatimData},
		{"aggregate by language", false, "aggregate", map[string]any{"stream": "transcripts", "metric": "count", "group_by": "language"}, "aggregate-group-by-language", checkSampleVerbatimData},
		{"aggregate by month", false, "aggregate", map[string]any{"stream": "videos", "metric": "count", "group_by_time": "created_at", "granularity": "month"}, "aggregate-group-by-time-month", checkSampleVerbatimData},
		{"schema compact", false, "schema", map[string]any{}, "schema-view-compact", checkSampleVerbatimData},
		{"schema for one stream", false, "schema", map[string]any{"stream": "transcripts", "detail": "full"}, "schema-stream-transcripts", checkSampleVerbatimData},
		{"error invalid cursor", false, "query_records", map[string]any{"stream": "transcripts", "cursor": "garbage"}, "error-invalid-cursor", checkSampleError},
		{"error unknown record", false, "fetch", map[string]any{"id": "transcripts:does-not-exist"}, "error-unknown-record", checkSampleError},
		{"error unknown stream", false, "query_records", map[string]any{"stream": "nope"}, "error-unknown-stream", checkSampleError},
		{"error field not text", false, "read_record_field", map[string]any{"id": sampleConn + "/videos:vid-5", "field_path": "duration_seconds"}, "error-field-window-non-string-field", checkSampleError},
		{"error unknown connection", false, "read_record_field", map[string]any{"id": "transcripts:tr-5", "connection_id": "cin_doesnotexist", "field_path": "text"}, "error-field-window-unknown-connection", checkSampleError},
		{"error filter unknown field", false, "query_records", map[string]any{"stream": "transcripts", "filter": map[string]any{"bogus": "x"}}, "error-invalid-filter-unknown-field", checkSampleError},
		{"error filter undeclared range", false, "query_records", map[string]any{"stream": "transcripts", "filter": map[string]any{"language": map[string]any{"gte": "a"}}}, "error-invalid-filter-undeclared-range", checkSampleError},
		{"error exact filter refused for client tokens", false, "query_records", map[string]any{"stream": "transcripts", "limit": 2, "fields": []string{"id", "language"}, "filter": map[string]any{"language": "it"}}, "records-transcripts-exact-filter", checkSampleError},
		{"error range filter refused for client tokens", false, "query_records", map[string]any{"stream": "videos", "limit": 2, "filter": map[string]any{"created_at": map[string]any{"gte": "2026-02-01T00:00:00Z", "lt": "2026-02-10T00:00:00Z"}}}, "records-videos-range-filter", checkSampleError},
		{"error search filter without one stream", false, "search", map[string]any{"q": "needle5", "filter": map[string]any{"language": "en"}}, "error-search-filter-without-single-stream", checkSampleError},
		{"error search filter single stream", false, "search", map[string]any{"q": "needle7", "streams": []string{"transcripts"}, "filter": map[string]any{"language": "en"}, "limit": 3}, "search-lexical-single-stream-filter", checkSampleError},
		{"multi: ambiguous record", true, "fetch", map[string]any{"id": "transcripts:tr-5", "fields": []string{"id"}}, "multi-conn-error-ambiguous-connection-record", checkSampleAmbiguous},
		{"multi: ambiguous field window", true, "read_record_field", map[string]any{"id": "transcripts:tr-5", "field_path": "text", "limit_chars": 100}, "multi-conn-error-ambiguous-connection-field-window", checkSampleAmbiguous},
		{"multi: record with connection", true, "fetch", map[string]any{"id": "transcripts:tr-5", "connection_id": samplePeer}, "multi-conn-record-with-connection-id", checkSampleFetch},
		{"multi: search", true, "search", map[string]any{"q": "needle5", "limit": 5}, "multi-conn-search", checkSampleSearchEvidence},
		{"multi: records list", true, "query_records", map[string]any{"stream": "transcripts", "limit": 3, "fields": []string{"id", "language"}}, "multi-conn-records-list", checkSampleList},
		{"multi: aggregate", true, "aggregate", map[string]any{"stream": "transcripts", "metric": "count"}, "multi-conn-aggregate-count", checkSampleVerbatimData},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rs := hOne, one
			if tc.multi {
				h, rs = hTwo, two
			}
			rs.takeMisses()
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if m := rs.takeMisses(); len(m) > 0 {
				t.Fatalf("the adapter sent requests no sample answers: %v", m)
			}
			last := h.log.exchanges()
			if len(last) == 0 {
				t.Fatal("no request reached the replay RS")
			}
			s := all[tc.sample]
			got := last[len(last)-1]
			if got.Path != s.Path || replayKey("GET", got.Path, mustQuery(got.Query)) != replayKey(s.Method, s.Path, s.Query) {
				t.Fatalf("last request %s is not the sample's %s", got.Line, tc.sample)
			}
			tc.check(t, r, s)
		})
	}
	t.Run("expand on a stream whose real schema advertises none", func(t *testing.T) {
		one.takeMisses()
		hOne.log.reset()
		r := hOne.call(t, "fetch", map[string]any{"id": "transcripts:tr-5", "expand": []string{"video"}, "fields": []string{"id", "video_id"}})
		if !r.Res.IsError || r.errorCode() != "invalid_expand" {
			t.Fatalf("want invalid_expand (the sample schema lists no expand_capabilities for transcripts), got:\n%s", r.Text)
		}
		if rec := hOne.log.matching(isRecordsPath); len(rec) > 0 {
			t.Errorf("records endpoint called: %v", rec)
		}
	})
	t.Run("expand fails open to the RS verdict when the schema is down", func(t *testing.T) {
		stop := hOne.log.injectFault(func(r *http.Request) bool { return r.URL.Path == "/v1/schema" && r.URL.Query().Get("stream") != "" },
			http.StatusServiceUnavailable, `{"error":{"type":"api_error","code":"unavailable","message":"try later"}}`)
		defer stop()
		r := hOne.call(t, "fetch", map[string]any{"id": "transcripts:tr-5", "expand": []string{"video"}, "fields": []string{"id", "video_id"}})
		if m := one.takeMisses(); len(m) > 0 {
			t.Fatalf("unanswered requests: %v", m)
		}
		checkSampleError(t, r, all["record-transcripts-tr-5-expand-video"])
	})
	t.Run("401 bad token", func(t *testing.T) {
		bad := all["error-401-bad-token"]
		h := newHarness(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for k, v := range bad.Headers {
				w.Header().Set(k, v)
			}
			w.WriteHeader(bad.Status)
			_, _ = w.Write(bad.Body)
		}), "revoked-token")
		for _, tool := range []struct {
			name string
			args map[string]any
		}{{"schema", map[string]any{}}, {"search", map[string]any{"q": "x"}}, {"fetch", map[string]any{"id": tr5}}, {"read_record_field", map[string]any{"id": tr5, "field_path": "text"}}} {
			h.log.reset()
			r := h.call(t, tool.name, tool.args)
			checkSampleError(t, r, bad)
			// The first call stops at the RS's first 401; the rejection is
			// then remembered (tokencheck.RejectedTTL), so later calls with
			// the same token answer the same envelope without asking again.
			want := 0
			if tool.name == "schema" {
				want = 1
			}
			if n := len(h.log.requests()); n != want {
				t.Errorf("%s: %d RS requests, want %d: the adapter must stop at the first 401 and remember it", tool.name, n, want)
			}
		}
	})
}

// TestSamplesRecordURINormalized serves the real lexical search sample with
// a record_uri added to every hit (both URI forms the adapter accepts) and
// checks that model-visible output uses self-contained ids instead.
func TestSamplesRecordURINormalized(t *testing.T) {
	all := loadSamples(t)
	base := all["search-lexical"]
	forms := []struct {
		name string
		uri  func(conn, stream, id string) string
	}{
		{"encoded record reference", func(conn, stream, id string) string {
			b, _ := json.Marshal(map[string]any{"v": 1, "kind": "record", "connection_id": conn, "stream": stream, "record_id": id})
			return "pdpp://record/" + base64.RawURLEncoding.EncodeToString(b)
		}},
		{"three segments", func(conn, stream, id string) string { return "pdpp://record/" + conn + "/" + stream + "/" + id }},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			var page map[string]any
			if err := json.Unmarshal(base.Body, &page); err != nil {
				t.Fatal(err)
			}
			for _, d := range page["data"].([]any) {
				hit := d.(map[string]any)
				hit["record_uri"] = form.uri(hit["connection_id"].(string), hit["stream"].(string), hit["record_key"].(string))
			}
			body := mustRaw(page)
			h := newHarness(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/v1/schema" {
					_, _ = w.Write(all["schema-view-compact"].Body)
					return
				}
				_, _ = w.Write(body)
			}), "sample-client-token")
			r := h.mustOK(t, "search", map[string]any{"q": "zephyrmarker", "limit": 3})
			if strings.Contains(r.RawContent, "pdpp://record/") || strings.Contains(r.RawStruct, "pdpp://record/") {
				t.Errorf("raw record URI reaches model-visible output")
			}
			for i, id := range searchHitIDs(t, base.Body) {
				res := r.Structured["results"].([]any)[i].(map[string]any)
				if res["id"] != id {
					t.Errorf("results[%d].id = %v, want %s", i, res["id"], id)
				}
				if _, args, ok := continuation(res["next"]); !ok || args["id"] != id {
					t.Errorf("results[%d].next = %v, want a read with id %s", i, res["next"], id)
				}
				if !strings.Contains(r.Text, `read_record_field {"id":"`+id+`"`) {
					t.Errorf("text lacks the read call for %s", id)
				}
			}
		})
	}
}

func mustQuery(raw string) url.Values {
	q, _ := url.ParseQuery(raw)
	return q
}

func checkSampleVerbatimData(t *testing.T, r callResult, s sample) {
	t.Helper()
	if r.Res.IsError {
		t.Fatalf("error:\n%s", r.Text)
	}
	if !jsonEqual(t, mustRaw(r.Structured["data"]), s.Body) {
		t.Errorf("structured data is not the %s body verbatim", s.Name)
	}
}

func checkSampleError(t *testing.T, r callResult, s sample) {
	t.Helper()
	if !r.Res.IsError {
		t.Fatalf("want the %s error, got:\n%s", s.Name, r.Text)
	}
	want := rsErrorObject(t, s.Body)
	if !jsonEqual(t, mustRaw(r.Structured["error"]), want) {
		t.Errorf("structuredContent.error is not the %s envelope verbatim:\ngot  %s\nwant %s", s.Name, mustRaw(r.Structured["error"]), want)
	}
	var e struct{ Code, Message string }
	_ = json.Unmarshal(want, &e)
	if !strings.Contains(r.Text, e.Code) || !strings.Contains(r.Text, strings.Fields(e.Message)[0]) {
		t.Errorf("text does not carry the code and message:\n%s", r.Text)
	}
}

func checkSampleAmbiguous(t *testing.T, r callResult, s sample) {
	t.Helper()
	checkSampleError(t, r, s)
	for _, c := range []string{sampleConn, samplePeer, "loom (second account)"} {
		if !strings.Contains(r.Text, c) {
			t.Errorf("text lacks %q:\n%s", c, r.Text)
		}
	}
	retry, ok := callAfter(r.Text, "e.g. ")
	if !ok || retry.Tool != r.Tool || retry.Args["connection_id"] != sampleConn {
		t.Fatalf("no retry call naming a connection:\n%s", r.Text)
	}
	for k, v := range r.Args {
		if mustJSON(retry.Args[k]) != mustJSON(v) {
			t.Errorf("retry call drops or changes %s: %s", k, retry.Raw)
		}
	}
}

func checkSampleSearchEvidence(t *testing.T, r callResult, s sample) {
	t.Helper()
	if r.Res.IsError {
		t.Fatalf("error:\n%s", r.Text)
	}
	ids := searchHitIDs(t, s.Body)
	results, _ := r.Structured["results"].([]any)
	if len(results) != len(ids) || len(ids) == 0 {
		t.Fatalf("results %d, sample hits %v", len(results), ids)
	}
	cards := searchCards(r.Text)
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Errorf("two hits share the id %s", id)
		}
		seen[id] = true
		res := results[i].(map[string]any)
		if res["id"] != id || !strings.Contains(id, "/") {
			t.Errorf("results[%d].id = %v, want self-contained %s", i, res["id"], id)
		}
		card := cards[id]
		lines := strings.Split(card, "\n")
		if len(lines) < 3 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "evidence text") {
			t.Errorf("%s: evidence is not the first thing after the id:\n%s", id, card)
			continue
		}
		if before, after := visibleAround(lines[1]); before < 20 || after < 20 {
			t.Errorf("%s: evidence lacks context around the mark: %s", id, lines[1])
		}
		read, ok := callAfter(card, "read: ")
		if !ok || read.Tool != "read_record_field" || read.Args["id"] != id || read.Args["field_path"] != "text" {
			t.Errorf("%s: no read_record_field hint with the id and field:\n%s", id, card)
		}
		if res["evidence_preview"] == nil {
			t.Errorf("%s: structured result lacks evidence_preview", id)
		}
	}
	if i, j := strings.Index(r.Text, "evidence text"), strings.Index(r.Text, "search \""); j < i {
		t.Errorf("the search summary precedes the evidence")
	}
}

func checkSampleSearchNoEvidence(t *testing.T, r callResult, s sample) {
	t.Helper()
	if r.Res.IsError {
		t.Fatalf("error:\n%s", r.Text)
	}
	// The RS's own snippet may be shown only on its labelled line.
	text := withoutSnippetLines(r.Text)
	if strings.Contains(text, "evidence") || strings.Contains(text, "<mark>") {
		t.Errorf("semantic hits without excerpts show evidence:\n%s", r.Text)
	}
	var page struct {
		Data []struct {
			Snippet struct{ Text string } `json:"snippet"`
		} `json:"data"`
	}
	_ = json.Unmarshal(s.Body, &page)
	for _, d := range page.Data {
		if snip := strings.TrimSpace(d.Snippet.Text); len(snip) > 30 && strings.Contains(text, snip[:30]) {
			t.Errorf("an unproven snippet is shown as evidence: %.30s", snip)
		}
	}
	cards := searchCards(r.Text)
	for i, id := range searchHitIDs(t, s.Body) {
		calls := visibleCalls(cards[id])
		if len(calls) == 0 || calls[0].Args["id"] != id {
			t.Errorf("%s: no continuation in its card:\n%s", id, cards[id])
		}
		var hits struct {
			Data []struct {
				Snippet struct{ Field, Text string } `json:"snippet"`
			} `json:"data"`
		}
		_ = json.Unmarshal(s.Body, &hits)
		if sn := hits.Data[i].Snippet; sn.Text != "" && !strings.Contains(cards[id], "RS snippet of "+sn.Field+" (not a proven window): "+sn.Text) {
			t.Errorf("%s: card does not show the RS snippet of %s, labelled as not proven:\n%s", id, sn.Field, cards[id])
		}
	}
}

func checkSampleWindow(t *testing.T, r callResult, s sample) {
	t.Helper()
	if r.Res.IsError {
		t.Fatalf("error:\n%s", r.Text)
	}
	var fw struct {
		Window struct {
			Text                           string
			StartChars                     int  `json:"start_chars"`
			EndChars                       int  `json:"end_chars"`
			TotalChars                     int  `json:"total_chars"`
			Complete                       bool `json:"complete"`
			HasMore                        bool `json:"has_more"`
			NextOffsetChars                *int `json:"next_offset_chars"`
			PreviousOffsetChars            *int `json:"previous_offset_chars"`
			MatchStartChars, MatchEndChars *int
		} `json:"window"`
	}
	if err := json.Unmarshal(s.Body, &fw); err != nil {
		t.Fatal(err)
	}
	w := fw.Window
	if structuredWindowText(t, r) != w.Text {
		t.Errorf("window text differs from the sample")
	}
	if !strings.Contains(r.Text, w.Text) {
		t.Errorf("content[] does not carry the window text")
	}
	if want := fmt.Sprintf("chars %d-%d of %d", w.StartChars, w.EndChars, w.TotalChars); !strings.Contains(r.Text, want) {
		t.Errorf("text lacks %q:\n%.200s", want, r.Text)
	}
	ws := r.Structured["window"].(map[string]any)
	if ws["complete"] != w.Complete || ws["has_more"] != w.HasMore {
		t.Errorf("complete/has_more = %v/%v, sample %v/%v", ws["complete"], ws["has_more"], w.Complete, w.HasMore)
	}
	_, nargs, hasNext := continuation(r.Structured["next"])
	if hasNext != (w.HasMore && w.NextOffsetChars != nil) {
		t.Errorf("next continuation present = %v, sample has_more %v", hasNext, w.HasMore)
	}
	if hasNext && fmt.Sprint(nargs["offset_chars"]) != fmt.Sprint(*w.NextOffsetChars) {
		t.Errorf("next offset = %v, sample %d", nargs["offset_chars"], *w.NextOffsetChars)
	}
	if hasNext {
		if _, ok := callAfter(r.Text, "next: "); !ok {
			t.Errorf("text lacks the next call")
		}
	}
	if w.StartChars > 0 {
		// The previous window must reach back without a gap: it starts before
		// this one and its end (offset + limit, default size when unset) is at
		// or after this window's start.
		_, pargs, ok := continuation(r.Structured["previous"])
		if !ok {
			t.Fatalf("window at %d has no previous continuation", w.StartChars)
		}
		off, _ := pargs["offset_chars"].(float64)
		size := float64(evidence.DefaultWindowChars)
		if l, ok := pargs["limit_chars"].(float64); ok {
			size = l
		}
		if int(off) >= w.StartChars || int(off+size) < w.StartChars {
			t.Errorf("previous window %v+%v leaves a gap before %d", off, size, w.StartChars)
		}
	}
	if w.MatchStartChars != nil && fmt.Sprint(ws["match_start_chars"]) != fmt.Sprint(*w.MatchStartChars) {
		t.Errorf("match_start_chars = %v, sample %d", ws["match_start_chars"], *w.MatchStartChars)
	}
	if w.Complete && !strings.Contains(r.Text, "complete") {
		t.Errorf("complete window does not say so:\n%s", r.Text)
	}
}

func checkSampleFetch(t *testing.T, r callResult, s sample) {
	t.Helper()
	if r.Res.IsError {
		t.Fatalf("error:\n%s", r.Text)
	}
	rec := sampleJSON(t, s)
	conn, _ := rec["connection_id"].(string)
	want := conn + "/" + rec["stream"].(string) + ":" + rec["id"].(string)
	if r.Structured["id"] != want {
		t.Errorf("id = %v, want %s", r.Structured["id"], want)
	}
	data := rec["data"].(map[string]any)
	text, _ := data["text"].(string)
	if len(text) <= 200 {
		// A short record is shown whole, inline.
		if !strings.Contains(r.Text, text) || !strings.Contains(r.Text, "(whole record shown)") {
			t.Errorf("short record not shown whole inline:\n%s", r.Text)
		}
		return
	}
	if strings.Contains(r.Text, text) || len(r.Text) > 4*1024 {
		t.Errorf("the %d-char text is inlined in content[] (%d bytes)", len(text), len(r.Text))
	}
	if strings.Contains(r.Text, "(whole record shown)") {
		t.Errorf("a cut record claims to be whole")
	}
	if !strings.Contains(r.Text, fmt.Sprintf("%d chars in all", len([]rune(text)))) {
		t.Errorf("cut text does not state its size")
	}
	i := strings.Index(r.Text, "read on: ")
	if i < 0 {
		t.Fatalf("cut text has no read-on continuation:\n%s", r.Text)
	}
	read, ok := callAfter(r.Text[i:], "read on: ")
	if !ok || read.Tool != "read_record_field" || read.Args["id"] != want || read.Args["field_path"] != "text" {
		t.Errorf("no read_record_field continuation for the cut text:\n%s", r.Text)
	}
}

func checkSampleList(t *testing.T, r callResult, s sample) {
	t.Helper()
	if r.Res.IsError {
		t.Fatalf("error:\n%s", r.Text)
	}
	// detail "full" carries the RS page verbatim; compact carries it too
	// unless it says it cut something and names the full call.
	verbatim := jsonEqual(t, mustRaw(r.Structured["data"]), s.Body)
	switch {
	case r.Structured["detail"] == "full" && !verbatim:
		t.Errorf("structured data is not the %s body verbatim", s.Name)
	case r.Structured["detail"] != "full" && !verbatim && (r.Structured["truncated"] != true || r.Structured["full"] == nil):
		t.Errorf("compact data differs from the %s body without a truncation report: %s", s.Name, r.RawStruct)
	}
	ids := recordIDs(t, s.Body)
	recs, _ := r.Structured["records"].([]any)
	if len(recs) != len(ids) {
		t.Fatalf("records %d, sample %d", len(recs), len(ids))
	}
	for i, id := range ids {
		if recs[i].(map[string]any)["id"] != id || !strings.Contains(r.Text, "id="+id) {
			t.Errorf("record %d: %v, want %s in structured and text", i, recs[i], id)
		}
	}
	page := sampleJSON(t, s)
	if c, _ := page["next_cursor"].(string); c != "" {
		next, ok := callAfter(r.Text, "next page: ")
		if !ok || next.Args["cursor"] != c {
			t.Errorf("next page call lacks the sample cursor:\n%s", r.Text)
		}
	}
}
