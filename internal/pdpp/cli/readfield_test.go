package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReadFieldKeepsLimitChars: the next and previous commands read-field
// prints keep the window size the user chose with --limit-chars, also after
// a read around a match (which the tool pages on from with its default
// size), and they tile the field: next starts where the window ends,
// previous ends where it starts.
func TestReadFieldKeepsLimitChars(t *testing.T) {
	url := demoRS(t)
	root := t.TempDir()
	writeCred(t, root, url, nil)
	loc := []string{"--provider-url", url, "--cache-root", root}
	type window struct {
		Text   string `json:"text"`
		Window struct {
			StartChars int `json:"start_chars"`
			EndChars   int `json:"end_chars"`
		} `json:"window"`
	}
	// read runs a read-field command with --json and returns its window.
	read := func(t *testing.T, args []string) window {
		t.Helper()
		code, out, errOut := run(t, append(args, "--json")...)
		var w window
		if code != 0 || json.Unmarshal([]byte(out), &w) != nil {
			t.Fatalf("%q: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return w
	}
	cases := []struct {
		name      string
		args      []string
		wantLimit string // the --limit-chars both printed commands carry; "" for none
		size      int    // the size of the windows they read
	}{
		{"around a match, explicit size", []string{"read-field", "cin_demo_loom_main/transcripts:tr-36", "text", "--q", "zephyrmarker", "--limit-chars", "200"}, "200", 200},
		{"from an offset, explicit size", []string{"read-field", "cin_demo_loom_main/transcripts:tr-36", "text", "--offset", "1000", "--limit-chars", "300"}, "300", 300},
		{"around a match, default size", []string{"read-field", "cin_demo_loom_main/transcripts:tr-36", "text", "--q", "zephyrmarker"}, "", 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, append(tc.args, loc...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			this := read(t, append(tc.args, loc...))
			cmds := map[string][]string{}
			for _, line := range strings.Split(out, "\n") {
				for _, p := range []string{"next command: ", "previous command: "} {
					if rest, ok := strings.CutPrefix(line, p); ok {
						cmds[p] = shellSplit(t, strings.TrimSpace(rest))
					}
				}
			}
			if len(cmds) != 2 {
				t.Fatalf("want a next and a previous command:\n%s", out)
			}
			for p, words := range cmds {
				line := strings.Join(words, " ")
				if has := strings.Contains(line, " --limit-chars "); has != (tc.wantLimit != "") || has && !strings.Contains(line, " --limit-chars "+tc.wantLimit+" ") {
					t.Errorf("%s%s: want --limit-chars %q", p, line, tc.wantLimit)
				}
				w := read(t, words[1:])
				if got := w.Window.EndChars - w.Window.StartChars; got != tc.size {
					t.Errorf("%s%s reads %d characters, want %d", p, line, got, tc.size)
				}
				if p == "next command: " && w.Window.StartChars != this.Window.EndChars {
					t.Errorf("next window starts at %d, this one ends at %d", w.Window.StartChars, this.Window.EndChars)
				}
				if p == "previous command: " && w.Window.EndChars != this.Window.StartChars {
					t.Errorf("previous window ends at %d, this one starts at %d", w.Window.EndChars, this.Window.StartChars)
				}
			}
		})
	}
}
