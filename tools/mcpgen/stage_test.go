package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAllOrNothing writes a generated package and a typed client
// (real oapi-codegen) together, then makes oapi-codegen fail and checks
// nothing changed: the swap is all or nothing, a hand-written file beside
// the client survives, a file the generator no longer writes goes, and no
// temporary folder is left.
func TestWriteAllOrNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oapi-codegen")
	}
	// Inside the module, so go tool oapi-codegen finds go.mod.
	dir, err := os.MkdirTemp("testdata", "_gen_stage_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out, client := filepath.Join(dir, "tools"), filepath.Join(dir, "rsclient")
	for path, text := range map[string]string{
		filepath.Join(out, "stale.go"):  "package tools\n",
		filepath.Join(client, "doc.go"): "// Package rsclient is written by hand.\npackage rsclient\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "oapi.yaml")
	config := "package: rsclient\noutput: " + filepath.ToSlash(filepath.Join(client, "rsclient.gen.go")) + "\ngenerate:\n  models: true\n  client: true\n"
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"doc.go": []byte("package tools\n"), "tools.go": []byte("package tools\n")}
	if err := writeAll(out, files, []string{cfg}, "testdata/rscalls/openapi.yaml", oapiCommand); err != nil {
		t.Fatalf("writeAll: %v", err)
	}
	names := func(d string) string {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		return strings.Join(n, " ")
	}
	if got := names(out); got != "doc.go tools.go" {
		t.Errorf("generated package holds %s, want doc.go tools.go", got)
	}
	if got := names(client); got != "doc.go rsclient.gen.go" {
		t.Errorf("client folder holds %s, want doc.go rsclient.gen.go", got)
	}
	if got := names(dir); got != "oapi.yaml rsclient tools" {
		t.Errorf("%s holds %s: a temporary folder was left", dir, got)
	}
	generated, err := os.ReadFile(filepath.Join(client, "rsclient.gen.go"))
	if err != nil {
		t.Fatal(err)
	}

	// oapi-codegen fails: neither folder changes.
	files["tools.go"] = []byte("package tools\n\n// changed\n")
	bad := append(append([]string{}, oapiCommand...), "-no-such-flag")
	if err := writeAll(out, files, []string{cfg}, "testdata/rscalls/openapi.yaml", bad); err == nil {
		t.Fatal("writeAll succeeded with a failing oapi-codegen")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "tools.go")); string(b) != "package tools\n" {
		t.Errorf("tools.go changed by a failed run: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(client, "rsclient.gen.go")); string(b) != string(generated) {
		t.Error("rsclient.gen.go changed by a failed run")
	}
	if got := names(dir); got != "oapi.yaml rsclient tools" {
		t.Errorf("%s holds %s after a failed run: a temporary folder was left", dir, got)
	}
}

// TestSwapInUndoes makes the second of two swaps fail (its staged folder is
// missing) and checks the first is undone: both targets keep their files.
func TestSwapInUndoes(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "one", "f"), "old one")
	write(filepath.Join(root, "two", "f"), "old two")
	write(filepath.Join(root, "stage", "one", "f"), "new one")
	err := swapIn([]swap{
		{staged: filepath.Join(root, "stage", "one"), target: filepath.Join(root, "one")},
		{staged: filepath.Join(root, "stage", "missing"), target: filepath.Join(root, "two")},
	}, filepath.Join(root, "stage", "old"))
	if err == nil {
		t.Fatal("swapIn succeeded without the second staged folder")
	}
	for dir, want := range map[string]string{"one": "old one", "two": "old two"} {
		if b, err := os.ReadFile(filepath.Join(root, dir, "f")); err != nil || string(b) != want {
			t.Errorf("%s/f = %q, %v; want %q", dir, b, err, want)
		}
	}
}
