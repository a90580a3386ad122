package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryDocs runs the docs check on this repository: the README and
// docs/benchmarks.md within 300 lines, every relative link resolving.
func TestRepositoryDocs(t *testing.T) {
	if err := checkDocs(filepath.Join("..", "..")); err != nil {
		t.Fatal(err)
	}
}

func TestCheckDocs(t *testing.T) {
	lines := func(n int) string { return strings.Repeat("line\n", n) }
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error; none: the check passes
	}{
		{"within budget", map[string]string{
			"README.md":          "# x\n\nSee [the figures](docs/benchmarks.md#todays-figures) and [below](#usage).\n\n## Usage\n" + lines(290),
			"docs/benchmarks.md": "# Benchmarks\n\n## Today's figures\n" + lines(297),
		}, nil},
		{"README over 300 lines", map[string]string{
			"README.md":          lines(301),
			"docs/benchmarks.md": "# b\n",
		}, []string{"README.md is 301 lines, over its budget of 300"}},
		{"benchmarks over 300 lines, last line unterminated", map[string]string{
			"README.md":          "# x\n",
			"docs/benchmarks.md": lines(300) + "one more",
		}, []string{"docs/benchmarks.md is 301 lines, over its budget of 300"}},
		{"missing page", map[string]string{
			"README.md":          "[ref](docs/reference.md)\n",
			"docs/benchmarks.md": "# b\n",
		}, []string{`README.md: link "docs/reference.md" names a file that does not exist`}},
		{"missing heading", map[string]string{
			"README.md":          "# x\n",
			"docs/benchmarks.md": "# b\n\n[up](../README.md#limits)\n",
		}, []string{`docs/benchmarks.md: link "../README.md#limits" names a heading its page does not have`}},
		{"headings with code, punctuation and repeats", map[string]string{
			"README.md": "# x\n\n[a](docs/deploy.md#6-replicas-drain-and-sizing) [b](docs/deploy.md#genmcptools-generated-api) " +
				"[c](docs/deploy.md#notes-1) [d](docs/deploy.md#the-floor-what-no-adapter-can-go-below-issue-10-item-3)\n",
			"docs/benchmarks.md": "# b\n",
			"docs/deploy.md": "## 6. Replicas, drain and sizing\n## `gen/mcptools` (generated) API\n## Notes\n## Notes\n" +
				"## The floor: what no adapter can go below (issue 10, item 3)\n",
		}, nil},
		{"links and headings in code are not followed", map[string]string{
			"README.md":          "# x\n\n```md\n[gone](nowhere.md)\n## Fenced\n```\n\n`[gone](nowhere.md)` [ok](#x)\n[fenced](#fenced)\n",
			"docs/benchmarks.md": "# b\n",
		}, []string{`README.md: link "#fenced" names a heading`}},
		{"absolute links are not followed", map[string]string{
			"README.md":          "[spec](https://example.com/x.md) [mail](mailto:a@example.com)\n",
			"docs/benchmarks.md": "# b\n",
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, body := range tc.files {
				full := filepath.Join(root, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := checkDocs(root)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("check failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("check passed; want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
