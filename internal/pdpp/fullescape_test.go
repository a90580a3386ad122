package pdpp_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// TestFullEscapedSizeIsKnownBeforeTheCopy fetches at detail "full" a
// record whose text is tag characters, which full data writes as \u
// escapes, three times longer: the escaped size is counted before any copy
// is built, so a reply that passes the ceiling only once escaped is
// refused without one (the call allocates a few bytes per RS body byte,
// not the escaped copy's twelve per tag character), and the copy of a
// reply that fits the ceiling but not the bytes in flight is refused
// server_busy rather than built outside the budget.
func TestFullEscapedSizeIsKnownBeforeTheCopy(t *testing.T) {
	const tags = 200_000 // 800 KB raw, 2.4 MB escaped
	members := `"title":"note","text":"` + strings.Repeat(tagged("a"), tags) + `"`
	fetch := map[string]any{"id": "cin_a/notes:n1", "detail": "full"}
	t.Run("refused before the copy", func(t *testing.T) {
		// A record of tag characters and one of ASCII of the same length,
		// both just over the ceiling (so both are read whole and refused
		// once measured): refusing the first, as soon as its escaped size
		// is counted, costs no more than refusing the second, where
		// building its escaped copy cost four bytes per byte more.
		const ceiling = 1 << 20
		const size = 1_060_000 // bytes of text: over the ceiling, within its read margin
		costs := map[string]uint64{}
		for _, fill := range []string{"ascii", "tags"} {
			text := strings.Repeat("a", size)
			if fill == "tags" {
				text = strings.Repeat(tagged("a"), size/4)
			}
			handler, _ := hostileRS(`"title":"note","text":"` + text + `"`)
			h := newHarnessWith(t, handler, tokClient, withLimits(inflight.New(rs.DefaultMaxInFlightBytes), 0, ceiling))
			r := h.call(t, "fetch", fetch)
			boundedRead(t, h, r, ceiling)

			alloc, raw := callAllocs(h, map[string]any{"name": "fetch", "arguments": fetch})
			if !strings.Contains(string(raw), pdpp.CodeFullTooLarge) {
				t.Fatalf("%s: want %s: %.300s", fill, pdpp.CodeFullTooLarge, raw)
			}
			costs[fill] = alloc
		}
		t.Logf("refusing a full fetch of a %d-byte text allocated %d bytes (ASCII) and %d (tag characters)", size, costs["ascii"], costs["tags"])
		if costs["tags"] > costs["ascii"]+size/2 {
			t.Errorf("refusing the record of tag characters allocated %d bytes, %d more than the ASCII one: its escaped copy was built", costs["tags"], costs["tags"]-costs["ascii"])
		}
	})
	t.Run("the copy is reserved before it is built", func(t *testing.T) {
		// The bound holds the record (read in 64 KiB steps) but not its
		// escaped copy beside it.
		handler, _ := hostileRS(members)
		lim := inflight.New(1536 << 10)
		h := newHarnessWith(t, handler, tokClient, withLimits(lim, 0, 4<<20))
		r := h.call(t, "fetch", fetch)
		if !r.Res.IsError || r.errorCode() != rs.CodeServerBusy {
			t.Fatalf("want %s (the escaped copy does not fit the bytes in flight), got isError=%v code=%q", rs.CodeServerBusy, r.Res.IsError, r.errorCode())
		}
		if lim.Held() != 0 {
			t.Errorf("limiter holds %d after the call", lim.Held())
		}
		// With room for it, the same call is served, exact.
		h = newHarnessWith(t, handler, tokClient, withLimits(inflight.New(4<<20), 0, 4<<20))
		r = h.mustOK(t, "fetch", fetch)
		data, _ := r.Structured["data"].(map[string]any)
		fields, _ := data["data"].(map[string]any)
		if text, _ := fields["text"].(string); text != strings.Repeat(tagged("a"), tags) {
			t.Errorf("full text decodes to %d bytes, want the RS's %d", len(text), 4*tags)
		}
		if raw := h.rawRequest("tools/call", map[string]any{"name": "fetch", "arguments": fetch}); unseen.Has(string(raw)) {
			t.Errorf("the reply holds a hidden character raw")
		}
	})
}

// TestFullRefusesInvalidUTF8 serves a record whose text holds bytes that
// are not UTF-8: detail "full", which returns RS data exactly, refuses it
// (full_not_utf8, naming the offset and the bounded read), and the
// compact call it names shows each bad byte as U+FFFD.
func TestFullRefusesInvalidUTF8(t *testing.T) {
	handler, _ := hostileRS("\"title\":\"note\",\"text\":\"caf\xe9 \xff\xfe end\"")
	h := newHarness(t, handler, tokClient)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"fetch", map[string]any{"id": "cin_a/notes:n1", "detail": "full"}},
		{"query_records", map[string]any{"stream": "notes", "detail": "full"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			r := h.call(t, c.tool, c.args)
			if !r.Res.IsError || r.errorCode() != pdpp.CodeFullNotUTF8 {
				t.Fatalf("want %s, got isError=%v code=%q:\n%.300s", pdpp.CodeFullNotUTF8, r.Res.IsError, r.errorCode(), r.Text)
			}
			if !utf8.ValidString(r.RawStruct) || !utf8.ValidString(r.RawContent) {
				t.Errorf("the refusal is not UTF-8")
			}
			if !strings.Contains(r.Text, "not UTF-8") || !strings.Contains(r.Text, "U+FFFD") {
				t.Errorf("the refusal does not say why or what the bounded read does:\n%s", r.Text)
			}
			tool, args, ok := continuation(r.errorObject()["bounded_read"])
			if !ok || tool != c.tool || args["detail"] != nil {
				t.Fatalf("no bounded read of the same tool: %v", r.errorObject()["bounded_read"])
			}
			ok2 := h.mustOK(t, tool, args)
			if !strings.Contains(ok2.Text+ok2.RawStruct, "\ufffd") {
				t.Errorf("the bounded read does not show the bad bytes as U+FFFD:\n%s", ok2.Text)
			}
		})
	}
}

// TestFullSaysWhereHiddenCharactersAre reads the hidden-character RS at
// detail "full": data stays exact (\u escapes), and structuredContent.hidden
// counts the strings that hold such characters and lists their JSON
// Pointers (at most 16, complete says whether all), which content[] names
// briefly; a reply without any has no report.
func TestFullSaysWhereHiddenCharactersAre(t *testing.T) {
	h := newHarness(t, hiddenRS(), tokClient)
	resultID := "cin_a/notes:" + hiddenID
	cases := []struct {
		tool  string
		args  map[string]any
		paths []string
	}{
		{"fetch", map[string]any{"id": resultID, "detail": "full"}, []string{"/data/id", "/data/data/title", "/data/data/body"}},
		{"query_records", map[string]any{"stream": "notes", "detail": "full"}, []string{"/data/data/0/id", "/data/data/0/data/body", "/data/next_cursor"}},
		{"read_record_field", map[string]any{"id": resultID, "field_path": "body", "detail": "full"}, []string{"/text"}},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			r := h.mustOK(t, tc.tool, tc.args)
			rep, ok := r.Structured["hidden"].(map[string]any)
			if !ok {
				t.Fatalf("no structuredContent.hidden: %.400s", r.RawStruct)
			}
			var paths []string
			for _, p := range rep["paths"].([]any) {
				paths = append(paths, p.(string))
			}
			for _, want := range tc.paths {
				if !slices.Contains(paths, want) {
					t.Errorf("hidden.paths %q lacks %q", paths, want)
				}
			}
			if n, _ := rep["count"].(float64); int(n) != len(paths) || rep["complete"] != true {
				t.Errorf("hidden = %v: count and complete disagree with the paths", rep)
			}
			if !strings.Contains(r.Text, "hidden characters in the full data") || !strings.Contains(r.Text, tc.paths[0]) {
				t.Errorf("content[] does not name the report:\n%s", r.Text)
			}
			if raw := h.rawRequest("tools/call", map[string]any{"name": tc.tool, "arguments": tc.args}); unseen.Has(string(raw)) {
				t.Errorf("a hidden character reached the reply raw")
			}
		})
	}
	t.Run("many strings: counted, paths capped", func(t *testing.T) {
		var m []string
		for i := range 40 {
			m = append(m, fmt.Sprintf(`"f%02d":"x\u200by"`, i))
		}
		handler, _ := hostileRS(strings.Join(m, ","))
		h := newHarness(t, handler, tokClient)
		r := h.mustOK(t, "fetch", map[string]any{"id": "cin_a/notes:n1", "detail": "full"})
		rep, _ := r.Structured["hidden"].(map[string]any)
		paths, _ := rep["paths"].([]any)
		if rep["count"] != float64(40) || len(paths) != 16 || rep["complete"] != false || paths[0] != "/data/data/f00" {
			t.Errorf("hidden = %v, want count 40, 16 paths from /data/data/f00, complete false", rep)
		}
	})
	t.Run("none: no report", func(t *testing.T) {
		handler, _ := hostileRS(`"title":"plain"`)
		h := newHarness(t, handler, tokClient)
		r := h.mustOK(t, "fetch", map[string]any{"id": "cin_a/notes:n1", "detail": "full"})
		if _, ok := r.Structured["hidden"]; ok || strings.Contains(r.Text, "hidden characters in the full data") {
			t.Errorf("a reply without hidden characters reports some: %.300s", r.RawStruct)
		}
	})
}
