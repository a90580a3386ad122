package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// moduleRoot is the folder holding the module's go.mod, found by walking up
// from the working directory (go test runs each test binary in its
// package's folder, inside the module). Empty when no go.mod is found; the
// paths built on it are then relative and the reads that use them fail.
// The walk is bounded by the depth of the working directory.
var moduleRoot = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
})

// Testdata returns the path of a file or folder under the module's
// top-level testdata/ folder: the captured reference-RS responses
// (pdpp-samples/) and the upstream project's published OpenAPI document
// (upstream/), which tests of several packages read. Every file a test
// reads lives in the repository; a missing fixture is a plain failure of
// the test that reads it.
func Testdata(parts ...string) string {
	return filepath.Join(append([]string{moduleRoot(), "testdata"}, parts...)...)
}

// SamplesDir is the folder of captured reference-RS responses, with their
// index (_index.json) and README.
func SamplesDir() string { return Testdata("pdpp-samples") }

// RunInTempDir is a TestMain body for a package whose tests share files
// built once per test binary: it makes a temporary folder (its name
// starting with prefix), stores its path in *dir, runs the tests, removes
// the folder and exits with the tests' code.
func RunInTempDir(m *testing.M, prefix string, dir *string) {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*dir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}
