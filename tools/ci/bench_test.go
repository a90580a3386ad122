package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBenchmarkPackages: the benchmark smoke run builds exactly the packages
// with a benchmark, each once, and none that go list would leave out.
func TestBenchmarkPackages(t *testing.T) {
	files := map[string]string{
		"a/a_test.go":             "package a\n\nfunc BenchmarkA(b *testing.B) {}\n",
		"a/more_test.go":          "package a\n\nfunc BenchmarkMore(b *testing.B) {}\n",
		"b/b_test.go":             "package b\n\nfunc TestB(t *testing.T) {}\n",
		"b/c/c_test.go":           "package c\n\nfunc Benchmark(b *testing.B) {}\n",
		"d/d.go":                  "package d\n\nfunc BenchmarkNotATest(b *testing.B) {}\n",
		"e/e_test.go":             "package e\n\n// func BenchmarkCommented(b *testing.B) {}\n",
		"a/testdata/x/x_test.go":  "package x\n\nfunc BenchmarkX(b *testing.B) {}\n",
		"_gen/g/g_test.go":        "package g\n\nfunc BenchmarkG(b *testing.B) {}\n",
		".hidden/h/h_test.go":     "package h\n\nfunc BenchmarkH(b *testing.B) {}\n",
		"f/helpers_bench_test.go": "package f\n\nfunc benchmarkHelper(b *testing.B) {}\n",
	}
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	got, err := benchmarkPackages(".")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"./a", "./b/c"}; !slices.Equal(got, want) {
		t.Errorf("benchmarkPackages = %q, want %q", got, want)
	}
}

// TestRepositoryBenchmarkPackages: the repository's own list holds the
// packages whose benchmarks make bench measures.
func TestRepositoryBenchmarkPackages(t *testing.T) {
	t.Chdir("../..")
	got, err := benchmarkPackages(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"./internal/testsupport/benchmarks", "./internal/papers", "./internal/mcpserver/transport"} {
		if !slices.Contains(got, want) {
			t.Errorf("benchmarkPackages = %q, missing %s", got, want)
		}
	}
}
