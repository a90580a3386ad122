package evidence

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

func TestHiddenReportPaths(t *testing.T) {
	deep := strings.Repeat(`[`, MaxHiddenDepth+3) + `"a\u200b"` + strings.Repeat(`]`, MaxHiddenDepth+3)
	cases := []struct {
		name, in, prefix string
		paths            []string
	}{
		{"none", `{"a":"b","c":[1,"\\u200b as text"]}`, "", nil},
		{"raw, in an array", "{\"a\":{\"b/c~\":[\"x\",\"y\u200b\"]}}", "/data", []string{"/data/a/b~1c~0/1"}},
		{"escaped", `{"a":"\u200b","b":"\ud83d\ude00","c":"\udb40\udc41"}`, "", []string{"/a", "/c"}},
		{"a member name", "{\"k\u2060\":1,\"n\":{\"x\":\"\u202e\"}}", "", []string{"/k\u2060", "/n/x"}},
		{"a top-level string", "\"\U000E0041\"", "/text", []string{"/text"}},
		{"deeper than the frames kept", deep, "", []string{strings.Repeat("/0", MaxHiddenDepth) + "/…"}},
		{"a kept emoji joiner", "[\"\U0001F469\u200d\U0001F4BB\"]", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h HiddenReport
			h.Find([]byte(tc.in), tc.prefix)
			if !slices.Equal(h.Paths, tc.paths) || h.Count != len(tc.paths) || !h.Complete() {
				t.Fatalf("Find(%q) = %+v, want paths %q", tc.in, h, tc.paths)
			}
		})
	}
	t.Run("capped", func(t *testing.T) {
		var h HiddenReport
		h.Find([]byte(`[`+strings.Repeat(`"\u200b",`, 40)+`1]`), "")
		if h.Count != 40 || len(h.Paths) != MaxHiddenPaths || h.Complete() || h.Paths[MaxHiddenPaths-1] != "/15" {
			t.Fatalf("Find = %+v, want 40 counted, the first %d listed", h, MaxHiddenPaths)
		}
	})
	t.Run("a long path is cut", func(t *testing.T) {
		var h HiddenReport
		h.Find([]byte(`{"`+strings.Repeat("é", 300)+`":"\u200b"}`), "")
		if len(h.Paths) != 1 || len(h.Paths[0]) > MaxHiddenPathBytes+len("…") || !strings.HasSuffix(h.Paths[0], "…") {
			t.Fatalf("Find = %q, want one path cut at %d bytes", h.Paths, MaxHiddenPathBytes)
		}
	})
}

// FuzzHiddenReport: over any valid JSON, the report counts a string
// exactly when the document may decode to a hidden character
// (unseen.HasJSON), lists at most MaxHiddenPaths bounded paths, and
// encodes to valid JSON with no hidden character raw.
func FuzzHiddenReport(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"\u200b"}`, "[\"\u2060\",{\"k\u200b\":[1,2,\"x\"]}]", `"x"`, "{\"a\":\"\U0001F469\u200d\U0001F4BB\"}", `[[[["\ufeff"]]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) {
			return
		}
		var h HiddenReport
		h.Find(b, "/data")
		if (h.Count > 0) != unseen.HasJSON(b) {
			t.Fatalf("Find(%q) counts %d strings, HasJSON says %v", s, h.Count, unseen.HasJSON(b))
		}
		if len(h.Paths) > MaxHiddenPaths || len(h.Paths) > h.Count || h.Complete() != (h.Count == len(h.Paths)) {
			t.Fatalf("Find(%q) = %+v: paths out of bounds", s, h)
		}
		for _, p := range h.Paths {
			if len(p) > MaxHiddenPathBytes+len("…") || !strings.HasPrefix(p, "/data") {
				t.Fatalf("Find(%q): path %q", s, p)
			}
		}
		if h.Count == 0 {
			return
		}
		out := h.AppendJSON([]byte(`{"a":1`), true)
		out = append(out, '}')
		if !json.Valid(out) || unseen.HasBytes(out) {
			t.Fatalf("AppendJSON = %q: invalid or a hidden character raw", out)
		}
	})
}
