package evidence

import (
	"encoding/json"
	"testing"
)

// TestSearchAppendersMatchMarshal holds each appender of a compact search
// step, and appendJSON's marshaling of its other entries, to the bytes
// mustMarshal writes for the same value: over the hits of the real samples
// and over values that need escaping or are left out.
func TestSearchAppendersMatchMarshal(t *testing.T) {
	var results []SearchResult
	for _, name := range []string{"search-lexical.json", "multi-conn-search.json"} {
		v, err := RenderSearch(sample(t, name), SearchRequest{Q: "zephyrmarker", Limit: 3}, "http://127.0.0.1:7663")
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, v.Results...)
	}
	yes, no := true, false
	odd := `a<b>&c "q" \ é` + "\u2028\t\x01"
	results = append(results,
		SearchResult{},
		SearchResult{ID: odd, Title: odd, URL: "http://x/?a=1&b=<2>", Stream: odd, RecordID: odd,
			ConnectionID: odd, ConnectorID: odd, ConnectorKey: odd, MatchedFields: []string{odd, "", "b"},
			EvidenceField: odd, EvidencePreview: "<mark>" + odd + "</mark>", EvidenceComplete: &no,
			Next: Continuation{Tool: "search", Arguments: map[string]any{
				"q": odd, "streams": []string{"a", odd}, "limit": 10, "big": int64(1) << 40, "full": true,
				"filter": json.RawMessage(" { \"a\" : [1, \"<x>\"] } "), odd: 1.5, "none": nil}}},
		SearchResult{ID: "s:1", MatchedFields: []string{}, EvidenceComplete: &yes, Next: Continuation{Tool: "fetch"}},
	)
	check := func(t *testing.T, label string, got []byte, v any) {
		t.Helper()
		if want := mustMarshal(v); string(got) != string(want) {
			t.Errorf("%s:\nappended  %s\nmarshalled %s", label, got, want)
		}
	}
	for i := range results {
		r := &results[i]
		t.Run(r.ID, func(t *testing.T) {
			check(t, "result", r.appendJSON(nil), r)
			l := LadderRecord{ID: r.ID, EvidenceField: r.EvidenceField, EvidencePreview: r.EvidencePreview,
				EvidenceComplete: r.EvidenceComplete, Next: r.Next, Fetch: FetchCall(r.ID)}
			check(t, "ladder", l.appendJSON(nil), l)
			check(t, "compact ladder", appendCompactLadder(nil, r.ID), compactLadderRecord{ID: r.ID, Fetch: FetchCall(r.ID)})
			check(t, "id entry", appendIDEntry(nil, r.ID), struct {
				ID string `json:"id"`
			}{r.ID})
			for _, previewed := range [][]string{nil, {}, {r.ID, "b"}} {
				check(t, "previewed entry", appendJSON(nil, previewedEntry{r.ID, previewed}), struct {
					ID        string   `json:"id"`
					Previewed []string `json:"previewed,omitempty"`
				}{r.ID, previewed})
			}
			for _, n := range []int{0, 42} {
				check(t, "id-only entry", appendJSON(nil, idOnlyEntry{r.ID, true, n}), struct {
					ID        string `json:"id"`
					Truncated bool   `json:"truncated"`
					IDBytes   int    `json:"id_bytes,omitempty"`
				}{r.ID, true, n})
			}
			check(t, "continuation", r.Next.appendTo(nil), r.Next)
			check(t, "cursor", appendJSON(nil, r.ID), r.ID)
		})
	}
}
