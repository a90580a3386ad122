package pdpp_test

import (
	"strings"
	"testing"
)

// TestSearchNoHitsSuggestsAnotherMode checks, through MCP against the demo
// RS, that a search without hits suggests a mode other than the one used.
func TestSearchNoHitsSuggestsAnotherMode(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	tests := []struct {
		mode, want string
	}{
		{"", `mode "semantic"`},
		{"lexical", `mode "semantic"`},
		{"semantic", `mode "lexical"`},
		{"hybrid", `mode "lexical"`},
	}
	for _, tc := range tests {
		t.Run("mode "+tc.mode, func(t *testing.T) {
			args := map[string]any{"q": "qqqnosuchwordqqq"}
			if tc.mode != "" {
				args["mode"] = tc.mode
			}
			r := h.mustOK(t, "search", args)
			if !strings.Contains(r.Text, "no hits; ") {
				t.Fatalf("want no hits in mode %q:\n%.300s", tc.mode, r.Text)
			}
			if !strings.Contains(r.Text, tc.want) {
				t.Errorf("no-hits text does not suggest %s:\n%s", tc.want, r.Text)
			}
		})
	}
}
