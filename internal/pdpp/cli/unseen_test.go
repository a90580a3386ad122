package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestPrintedHiddenCharacters holds the terminal output to the rule of the
// tools: a printed command carries an id with a character a person cannot
// see as a visible escape the shell turns back into the same id, and a
// printed text shows such characters as markers.
func TestPrintedHiddenCharacters(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "cin_a/notes:n1", "cin_a/notes:n1"},
		{"space", "a b", "'a b'"},
		{"zero width", "cin_a/notes:n\u200b1", `$'cin_a/notes:n\u200b1'`},
		{"tag and quote", "it's\U000E0069", `$'it\'s\U000e0069'`},
	}
	bash, _ := exec.LookPath("bash")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := shellQuote(tc.in)
			if got != tc.want {
				t.Fatalf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
			}
			if bash == "" {
				return
			}
			out, err := exec.Command(bash, "-c", "printf %s "+got).Output()
			if err != nil || string(out) != tc.in {
				t.Errorf("bash reads %s as %q (%v), want %q", got, out, err, tc.in)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a\u202eb")}}
		if got := textOf(res); !strings.Contains(got, "⟦hidden U+202E⟧") {
			t.Errorf("textOf printed %q", got)
		}
	})
}
