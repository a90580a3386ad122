package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckGeneratedShowsStaleness edits the catalog of a copy of this
// repository without running go generate: the generated-code check fails,
// prints what go generate would change as a unified diff, and writes
// nothing in the tree it checks.
func TestCheckGeneratedShowsStaleness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go generate in two copies of the tree")
	}
	repo := filepath.Join("..", "..")
	files, err := treeFiles(repo)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range files {
		if err := copyTreeFile(filepath.Join(repo, f), filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	catalog := filepath.Join(root, "spec", "tools.yaml")
	data, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatal(err)
	}
	const old, new = "description: Page size.", "description: Records per page."
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("the catalog does not hold %q", old)
	}
	if err := os.WriteFile(catalog, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readGenerated(t, root)
	var diff bytes.Buffer
	err = checkGeneratedIn(root, &diff)
	if err == nil || !strings.Contains(err.Error(), "generated code is stale") {
		t.Fatalf("check error = %v, want stale", err)
	}
	for _, want := range []string{
		"--- a/gen/mcptools/args.go\n+++ b/gen/mcptools/args.go\n",
		"-\t// Page size.\n+\t// Records per page.\n",
		"--- a/gen/mcptools/FOOTPRINT.md\n+++ b/gen/mcptools/FOOTPRINT.md\n",
	} {
		if !strings.Contains(diff.String(), want) {
			t.Errorf("diff does not hold %q:\n%s", want, diff.String())
		}
	}
	after := readGenerated(t, root)
	if len(after) != len(before) {
		t.Errorf("the checked tree holds %d generated files, %d before", len(after), len(before))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("the check changed %s in the tree it checked", p)
		}
	}
}

// readGenerated reads every generated file under root.
func readGenerated(t *testing.T, root string) map[string]string {
	t.Helper()
	files, err := treeFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		for _, g := range generatedPaths {
			if f == g || strings.HasPrefix(f, g+"/") {
				b, err := os.ReadFile(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				out[f] = string(b)
			}
		}
	}
	return out
}
