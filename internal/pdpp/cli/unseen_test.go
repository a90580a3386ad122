package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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
		// Line breaks and tabs from the RS never break a printed command
		// over lines.
		{"line breaks", "n1\r\nrm -rf x", `$'n1\r\nrm -rf x'`},
		{"tab", "a\tb", `$'a\tb'`},
		{"spelled", "cin_a/notes:n⟦U+200B⟧1", "'cin_a/notes:n⟦U+200B⟧1'"},
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

// TestPrintedCommandKeepsRSLineBreaksQuoted runs a search against an RS
// whose next page cursor holds a line break and a command: the next page
// command is printed on one line, the break written as \r\n inside $'…'.
func TestPrintedCommandKeepsRSLineBreaksQuoted(t *testing.T) {
	const cursor = "c1\r\nrm -rf x"
	demo, err := url.Parse(demoRS(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(demo)
	// The demo RS answers everything but the search, whose page is
	// scripted.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/search") {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		hit := map[string]any{"object": "search_result", "record_key": "n1", "stream": "transcripts", "connection_id": "cin_demo_loom_main",
			"matched_fields": []string{"body"}, "snippet": map[string]any{"field": "body", "text": "a <mark>b</mark>"}}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{hit}, "has_more": true, "next_cursor": cursor})
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	writeCred(t, root, srv.URL, nil)
	code, out, errOut := run(t, "search", "b", "--limit", "1", "--provider-url", srv.URL, "--cache-root", root)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	_, line, ok := strings.Cut(out, "next page command: ")
	if !ok {
		t.Fatalf("no next page command:\n%s", out)
	}
	line, _, _ = strings.Cut(line, "\n")
	if !strings.Contains(line, `--cursor $'c1\r\nrm -rf x'`) {
		t.Errorf("the cursor is not quoted on the command's line: %q\n%s", line, out)
	}
}
