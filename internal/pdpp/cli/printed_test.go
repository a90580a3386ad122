package cli

import (
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// printedCommands returns every command line the output offers after
// "next command: ", "previous command: " or "next page command: ".
func printedCommands(out string) []string {
	var cmds []string
	for _, line := range strings.Split(out, "\n") {
		for _, p := range []string{"next command: ", "previous command: ", "next page command: "} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				cmds = append(cmds, strings.TrimSpace(rest))
			}
		}
	}
	return cmds
}

// TestPrintedCommandsRun follows every command the terminal commands print,
// exactly as printed, a few steps deep: each must run and succeed.
func TestPrintedCommandsRun(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, nil)
	starts := [][]string{
		{"search", "zephyrmarker", "--limit", "1", "--provider-url", url, "--cache-root", root},
		{"search", "weekly sync", "--mode", "semantic", "--limit", "2", "--provider-url", url, "--cache-root", root},
		// A page larger than one reply: the printed command resumes it.
		{"search", "launch", "--limit", "100", "--provider-url", url, "--cache-root", root},
		{"read-field", "cin_demo_loom_main/transcripts:tr-5", "text", "--limit-chars", "3000", "--provider-url", url, "--cache-root", root},
	}
	for _, start := range starts {
		t.Run(strings.Join(start[:2], " "), func(t *testing.T) {
			queue := [][]string{start}
			seen := map[string]bool{}
			sawPage := false
			// Bound: at most 8 commands per start.
			for n := 0; len(queue) > 0 && n < 8; n++ {
				args := queue[0]
				queue = queue[1:]
				code, out, errOut := run(t, args...)
				if code != 0 {
					t.Fatalf("%q: exit %d\n%s\n%s", args, code, out, errOut)
				}
				for _, line := range printedCommands(out) {
					if seen[line] {
						continue
					}
					seen[line] = true
					words := shellSplit(t, line)
					if len(words) < 2 || words[0] != "pdpp-mcp-server" {
						t.Fatalf("printed command %q does not start with the program name", line)
					}
					if words[1] == "search" {
						sawPage = true
						if !strings.Contains(line, "--cursor ") {
							t.Errorf("next page command lacks --cursor: %s", line)
						}
						if start[1] == "launch" && n == 0 && !strings.Contains(line, handles.PageCursorPrefix) {
							t.Errorf("the first reply of a page larger than one reply does not resume it: %s", line)
						}
					}
					queue = append(queue, words[1:])
				}
			}
			if start[0] == "search" && (start[1] == "zephyrmarker" || start[1] == "launch") && !sawPage {
				t.Errorf("a one-hit page of a many-hit search printed no next page command")
			}
			if len(seen) == 0 {
				t.Errorf("no next command printed")
			}
		})
	}
}

// TestHelpShowsOnlyUsedFlags: every command's help lists only the flags it
// uses, with plain placeholders and no misleading defaults.
func TestHelpShowsOnlyUsedFlags(t *testing.T) {
	cases := []struct {
		cmd     string
		want    []string
		wantNot []string
	}{
		{"stdio", []string{"-provider-url URL", "-cache-root directory", "-server-name name", "-toolsets list", "-rs-timeout", "-full-max-bytes", "-max-inflight-bytes"}, []string{"-auto-consent", "-oauth-source"}},
		{"http", []string{"-provider-url URL", "-server-name name", "-toolsets list", "-listen", "-oauth-source connector", "-full-max-bytes", "-max-inflight-bytes"}, []string{"-cache-root", "or 60s", "-auto-consent", "-access-token-ttl"}},
		{"demo", []string{"-server-name name", "-toolsets list", "-listen", "-rs-listen address", "-once", "-oauth-source connector", "-auto-consent", "-access-token-ttl duration", "-full-max-bytes"}, []string{"-provider-url", "-cache-root", "-authorization-servers", "or 60s"}},
		{"demo-rs", []string{"-listen address", "-cache-root directory", "-grant grant", "-auto-consent", "-access-token-ttl duration"}, []string{"-provider-url", "-server-name", "-toolsets", "-oauth-source"}},
		{"search", []string{"-provider-url URL", "-cache-root directory", "-cursor cursor", "-stream stream", "-mode mode"}, []string{"-server-name", "-toolsets", "-full-max-bytes"}},
		{"read-field", []string{"-provider-url URL", "-cache-root directory", "-offset character", "-cursor cursor", "-limit-chars characters"}, []string{"-server-name", "-toolsets", "(default -1)", "-full-max-bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			code, _, help := run(t, tc.cmd, "--help")
			if code != 0 {
				t.Fatalf("--help exit %d", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(help, "  "+w) {
					t.Errorf("help lacks %q:\n%s", w, help)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(help, w) {
					t.Errorf("help shows %q, which %s does not use:\n%s", w, tc.cmd, help)
				}
			}
			if strings.Contains(help, "-request-timeout") && !strings.Contains(help, "(0: --rs-timeout + 5s)") {
				t.Errorf("help does not say what --request-timeout 0 means here:\n%s", help)
			}
			for _, line := range strings.Split(help, "\n") {
				if strings.HasPrefix(line, "  -") && len(strings.Fields(line)) > 2 {
					t.Errorf("flag line with an odd placeholder: %q", line)
				}
			}
		})
	}
}

// TestUnknownCommandOneLine: an unknown command gets its error on one line,
// with a hint, and not the whole usage.
func TestUnknownCommandOneLine(t *testing.T) {
	code, out, errOut := run(t, "frobnicate")
	if code != 64 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], `unknown command "frobnicate"`) || !strings.Contains(lines[0], "--help") {
		t.Fatalf("stderr is not one error line with a hint:\n%s", errOut)
	}
}

// TestStaleTokenSaysReconnect: a credential the RS no longer accepts
// (context.active_false) tells the user to run pdpp connect again.
func TestStaleTokenSaysReconnect(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, func(f *credentials.File) { f.Credential.AccessToken = "tok-revoked" })
	code, out, _ := run(t, "search", "zephyrmarker", "--provider-url", url, "--cache-root", root)
	if code == 0 || !strings.Contains(out, "context.active_false") || !strings.Contains(out, `run "pdpp connect <provider-url>" again`) {
		t.Fatalf("exit %d; output does not say to reconnect:\n%s", code, out)
	}
}
