package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// moduleRoot is the folder of the module's go.mod, found walking up from
// the working directory (a test's package folder), bounded by its depth;
// empty when none is found, so the paths built on it fail to read.
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
// testdata/ folder: the captured reference-RS responses (pdpp-samples/)
// and the upstream project's OpenAPI document (upstream/). Every fixture
// lives in the repository; a missing one fails the test that reads it.
func Testdata(parts ...string) string {
	return filepath.Join(append([]string{moduleRoot(), "testdata"}, parts...)...)
}

// SamplesDir is the folder of captured reference-RS responses, with their
// index (_index.json) and README.
func SamplesDir() string { return Testdata("pdpp-samples") }

// RunInTempDir is a TestMain body for tests sharing files built once: it
// runs them with *dir a new temporary folder (named prefix...), removes it
// and exits with their code.
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
