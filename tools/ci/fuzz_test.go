package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFuzzTargetIsListed keeps the fuzz targets -only-fuzz finds
// complete: a fuzz target it missed would never be fuzzed, only its seeds
// run (make fuzz).
func TestEveryFuzzTargetIsListed(t *testing.T) {
	t.Chdir("../..")
	fuzzTargets, err := testFuncs(".", fuzzDecl)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, f := range fuzzTargets {
		listed[f.pkg+" "+f.name] = true
	}
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	found := 0
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
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
		pkg := "./" + filepath.ToSlash(filepath.Dir(p))
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			found++
			if !listed[pkg+" "+m[1]] {
				t.Errorf("%s in %s is not found by testFuncs (tools/ci/main.go)", m[1], pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != len(fuzzTargets) {
		t.Errorf("found %d fuzz targets in the tree, testFuncs finds %d", found, len(fuzzTargets))
	}
}
