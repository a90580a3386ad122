package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// escapingTestPaths lists, as "file:line: path", every relative path written
// in a _test.go file under root that leads out of root when resolved from
// the test's package folder (where go test runs it): a string literal
// starting with "..", and the joined run of literal (or package-constant)
// arguments a call starts with, as in filepath.Join("..", "..", "x") or
// filepath.Join(dir, "y") with const dir = "../../x". Folders go test
// ignores (testdata, dot and underscore folders) are left out. Paths built at
// run time from variables are not seen; the files every test needs are
// under testdata/ and found through testkit.Testdata.
func escapingTestPaths(root string) ([]string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	var problems []string
	fset := token.NewFileSet()
	// Package-level string constants, per package folder, so a const path
	// used as a call's first argument is resolved too.
	consts := map[string]map[string]string{}
	type parsed struct {
		dir  string
		file *ast.File
	}
	var files []parsed
	err = filepath.WalkDir(absRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != absRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		files = append(files, parsed{dir, f})
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i]); ok {
							if consts[dir] == nil {
								consts[dir] = map[string]string{}
							}
							consts[dir][n.Name] = s
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	escapes := func(dir, path string) bool {
		if filepath.IsAbs(path) || !(path == ".." || strings.HasPrefix(path, "../")) || strings.ContainsAny(path, "\n\t") {
			return false
		}
		rel, err := filepath.Rel(absRoot, filepath.Join(dir, filepath.FromSlash(path)))
		return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	for _, pf := range files {
		report := func(pos token.Pos, path string) {
			at := fset.Position(pos)
			rel, _ := filepath.Rel(absRoot, at.Filename)
			problems = append(problems, filepath.ToSlash(rel)+":"+strconv.Itoa(at.Line)+": "+path)
		}
		ast.Inspect(pf.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, ok := stringLit(n); ok && escapes(pf.dir, s) {
					report(n.Pos(), s)
				}
			case *ast.CallExpr:
				// The run of literal arguments the call starts with, joined
				// as filepath.Join would join them.
				var parts []string
				for _, a := range n.Args {
					s, ok := stringLit(a)
					if !ok {
						if id, isID := a.(*ast.Ident); isID {
							s, ok = consts[pf.dir][id.Name]
						}
					}
					if !ok {
						break
					}
					parts = append(parts, s)
				}
				if len(parts) > 1 {
					if joined := filepath.ToSlash(filepath.Join(parts...)); escapes(pf.dir, joined) {
						report(n.Pos(), joined)
					}
				}
			}
			return true
		})
	}
	return problems, nil
}

// stringLit is the value of a string literal expression.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// TestNoTestPathLeavesRepository: no test of this repository names a file
// outside it; every fixture a test reads is in the repository.
func TestNoTestPathLeavesRepository(t *testing.T) {
	problems, err := escapingTestPaths(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("a test reads outside the repository (put the file under testdata/): %s", p)
	}
}

// TestEscapingTestPaths: the check finds each way a test has named a file
// beside the checkout, and leaves paths that stay inside alone.
func TestEscapingTestPaths(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"const beside the checkout", "const samplesDir = \"../../../elsewhere/pdpp-samples\"\n", []string{"a/b/x_test.go:3: ../../../elsewhere/pdpp-samples"}},
		{"joined dot-dots", "func f() { _ = filepath.Join(\"..\", \"..\", \"..\", \"elsewhere\", \"s\") }\n", []string{"a/b/x_test.go:3: ../../../elsewhere/s"}},
		{"const joined further", "const d = \"../..\"\nfunc f() { _ = filepath.Join(d, \"..\", \"x\") }\n", []string{"a/b/x_test.go:4: ../../../x"}},
		{"inside the module", "const root = \"../..\"\nfunc f() { _ = filepath.Join(\"..\", \"c\", \"d.json\"); _ = \"../s:r\" }\n", nil},
		{"not a path", "var u = \"http://a/../..\"\nvar id = \"pdpp://record/../s/r\"\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "a", "b")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// Test files in testdata/ are fixtures, not tests: never scanned.
			if err := os.MkdirAll(filepath.Join(root, "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "testdata", "y_test.go"), []byte("package y\n\nconst p = \"../../../../z\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package b\n\n"+tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := escapingTestPaths(root)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
