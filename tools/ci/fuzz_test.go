package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFuzzTargetIsListed keeps fuzzTargets complete: a fuzz target that
// is not listed would never be fuzzed, only its seeds run (make fuzz).
func TestEveryFuzzTargetIsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, f := range fuzzTargets {
		listed[f.pkg+" "+f.name] = true
	}
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	found := 0
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pkg := "./" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(p, "../../")))
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			found++
			if !listed[pkg+" "+m[1]] {
				t.Errorf("%s in %s is not in fuzzTargets (tools/ci/main.go)", m[1], pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != len(fuzzTargets) {
		t.Errorf("found %d fuzz targets in the tree, fuzzTargets lists %d: remove the stale entries", found, len(fuzzTargets))
	}
}
