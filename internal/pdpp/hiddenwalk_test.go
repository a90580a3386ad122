package pdpp_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// denseWindowRS serves one record n1 of stream notes whose field body is
// text, as an RS does: field windows counted in code points.
func denseWindowRS(text string) http.Handler {
	runes := []rune(text)
	return faultyRS(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		if !strings.HasSuffix(r.URL.Path, "/records/n1/field-window") || q.Get("field") != "body" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"type":"not_found","code":"not_found","message":"no route"}}`))
			return
		}
		off, _ := strconv.Atoi(q.Get("offset_chars"))
		limit, _ := strconv.Atoi(q.Get("limit_chars"))
		if limit <= 0 {
			limit = 4096
		}
		end := min(len(runes), off+limit)
		win := map[string]any{"text": string(runes[off:end]), "start_chars": off, "end_chars": end, "total_chars": len(runes),
			"limit_chars": limit, "complete": off == 0 && end == len(runes), "has_more": end < len(runes)}
		if end < len(runes) {
			win["next_offset_chars"] = end
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "field_window", "record_id": "n1", "connection_id": "cin_a", "stream": "notes",
			"field": map[string]any{"path": "body", "type": "string"}, "window": win})
	})
}

// markerRE matches a marker of a run of hidden characters.
var markerRE = regexp.MustCompile(`⟦hidden ([^⟧]*)⟧`)

// unshow decodes the markers of s back to the code points they list (the
// text's runs are short enough to be listed whole).
func unshow(t *testing.T, s string) string {
	t.Helper()
	return markerRE.ReplaceAllStringFunc(s, func(m string) string {
		list := markerRE.FindStringSubmatch(m)[1]
		if i := strings.Index(list, ":"); i >= 0 {
			list = list[:i]
		}
		if strings.Contains(list, "in all") {
			t.Fatalf("marker %q does not list its run whole", m)
		}
		var b strings.Builder
		for _, cp := range strings.Fields(list) {
			v, err := strconv.ParseInt(strings.TrimPrefix(cp, "U+"), 16, 32)
			if err != nil {
				t.Fatalf("marker %q: %v", m, err)
			}
			b.WriteRune(rune(v))
		}
		return b.String()
	})
}

// TestCompactWindowWalkShowsEveryCharacter walks next over a field dense
// with hidden characters, each shown as a marker several times its size,
// at the default detail: a window whose shown form passes the reply
// budget is cut, and its next read starts exactly where the shown text
// ends (offsets in code points, as the RS counts them), so the shown
// windows, markers decoded back, are the field, each character once.
func TestCompactWindowWalkShowsEveryCharacter(t *testing.T) {
	hidden := []string{"\u200b", "\u2060", "\U000E0041", "\u202e", "\ufeff"}
	var b strings.Builder
	for i := range 6000 {
		b.WriteString("x")
		b.WriteString(hidden[i%len(hidden)])
	}
	text := b.String()
	h := newHarness(t, denseWindowRS(text), tokClient)
	args := map[string]any{"id": "cin_a/notes:n1", "field_path": "body"}
	var got strings.Builder
	at := 0 // the next character to show, in code points
	for step := 0; ; step++ {
		if step > 200 {
			t.Fatalf("walk did not end after %d steps", step)
		}
		r := h.mustOK(t, "read_record_field", args)
		win, _ := r.Structured["window"].(map[string]any)
		if _, ok := r.Structured["text_at"]; !ok || win == nil {
			t.Fatalf("step %d (offset %d): the window was cut to a truncation report, its next skipping what the text left out:\n%.600s", step, at, r.RawStruct)
		}
		start, end := int(win["start_chars"].(float64)), int(win["end_chars"].(float64))
		if start != at {
			t.Fatalf("step %d: window starts at %d, the previous one ended at %d", step, start, at)
		}
		shown := unshow(t, structuredWindowText(t, r))
		if n := utf8.RuneCountInString(shown); n != end-start {
			t.Fatalf("step %d: window %d-%d shows %d characters", step, start, end, n)
		}
		got.WriteString(shown)
		at = end
		tool, next, ok := continuation(r.Structured["next"])
		if !ok {
			break
		}
		if tool != "read_record_field" {
			t.Fatalf("next names %s", tool)
		}
		args = next
	}
	if got.String() != text {
		t.Errorf("the walk showed %d of the field's %d characters, or not in order", utf8.RuneCountInString(got.String()), utf8.RuneCountInString(text))
	}
}
