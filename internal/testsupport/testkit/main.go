package testkit

import (
	"fmt"
	"os"
	"testing"
)

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
