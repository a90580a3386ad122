// Command ci runs the project's whole check suite, the same way on a laptop and
// in CI: no tracked file is a compiled binary or over 1 MiB (outside one
// allow-list), the README and docs/benchmarks.md are within 300 lines and the
// docs' relative links resolve, generated code is current (go generate runs in
// a temporary copy of the tree; a stale tree is shown as a unified diff, never
// rewritten), go.mod and go.sum are tidy, gofmt and go vet are clean, the
// discovery footprint is within budget, and `go test -race ./...` passes
// (every fuzz target's seed corpus runs there as a unit test), with a smoke
// run of every benchmark (one iteration each, in the packages that have
// benchmarks) and short smoke runs of the process meter tools/benchrss (a few
// calls per path, a small batch flood checked against its bounds, and the
// full-detail memory check on a small page) against one build of the server.
// Each step prints its wall time and the CPU time (user+sys) of the commands
// it ran. It needs the Go toolchain and, for the tracked-files check, git.
//
//	go run ./tools/ci            everything
//	go run ./tools/ci -skip-race plain go test (faster, for quick local loops)
//	go run ./tools/ci -skip-bench without the benchmark and benchrss smoke runs
//	go run ./tools/ci -only-fuzz -fuzztime 60s   fuzz every target (make fuzz)
//
// The tracked-files check needs a git work tree (it asks git ls-files); in a
// source archive without .git it fails and says so, and -skip-tracked leaves
// it out there.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	skipRace := flag.Bool("skip-race", false, "run go test without -race")
	fuzzTime := flag.String("fuzztime", "20000x", "with -only-fuzz, per fuzz target: a count of inputs (20000x) or a duration (60s)")
	onlyGenerated := flag.Bool("only-generated", false, "only check that generated code is current")
	onlyFuzz := flag.Bool("only-fuzz", false, "only fuzz the targets, each for -fuzztime (the default run executes only their seed corpora, as unit tests)")
	skipBench := flag.Bool("skip-bench", false, "leave out the benchmark and benchrss smoke runs")
	skipTracked := flag.Bool("skip-tracked", false, "leave out the tracked-files check (for a source tree that is not a git work tree)")
	flag.Parse()
	if *onlyFuzz || *onlyGenerated {
		only := checkGenerated
		if *onlyFuzz {
			only = func() error { return fuzzSmoke(*fuzzTime) }
		}
		if err := only(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			os.Exit(1)
		}
		return
	}
	start := time.Now()
	steps := []struct {
		name string
		skip bool // reported as passed without running
		run  func() error
	}{
		{"tracked files: no compiled binary, nothing over 1 MiB", *skipTracked, func() error { return checkTracked(".", largeFixtures) }},
		{"docs: line budgets and relative links", false, func() error { return checkDocs(".") }},
		{"generated code is current and within its footprint budgets", false, checkGenerated},
		{"go mod tidy -diff", false, func() error { return run("go", "mod", "tidy", "-diff") }},
		{"gofmt", false, checkGofmt},
		{"go vet", false, func() error { return runImageFlags("go", "vet", "-trimpath", "./...") }},
		{"go test", false, func() error {
			// -vet=off: the go vet step has run every analyzer go test
			// would (a subset of vet's defaults) on the same packages and
			// tests; go test's pass would type-check the tree and its
			// dependencies again (about 27 CPU-seconds under -race).
			args := []string{"test", "-count=1", "-timeout=12m", "-vet=off"}
			if !*skipRace {
				args = append(args, "-race")
			}
			return runEnv(testGC(), "go", append(args, "./...")...)
		}},
		{"benchmark smoke", *skipBench, benchSmoke},
	}
	for _, s := range steps {
		t0, cpu0 := time.Now(), childCPU
		fmt.Fprintf(os.Stderr, "==> %s\n", s.name)
		var err error
		if !s.skip {
			err = s.run()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", s.name, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "ok   %s (%s, CPU %s)\n", s.name, time.Since(t0).Round(time.Millisecond), (childCPU - cpu0).Round(time.Millisecond))
	}
	fmt.Fprintf(os.Stderr, "all checks passed in %s (CPU %s in the commands run)\n", time.Since(start).Round(time.Second), childCPU.Round(time.Second))
	if msg := browserNotRun(exec.LookPath); msg != "" {
		fmt.Fprint(os.Stderr, msg)
	}
}

// browserNotRun says, in a block no one can miss, that the evidence view's
// browser test was skipped because no Chromium is installed (go test prints
// a skip only with -v); "" when one is found under a name that test looks
// for (internal/pdpp/view), in its order. Under CI=true that test fails
// instead, so the run never gets here without it.
func browserNotRun(lookPath func(string) (string, error)) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if _, err := lookPath(name); err == nil {
			return ""
		}
	}
	line := strings.Repeat("!", 72) + "\n"
	return line + "NOT RUN: the evidence view's browser test (TestViewInChromium):\n" +
		"Chromium is not installed. Install it (apt-get install chromium) and run again.\n" + line
}

// childCPU sums the user and system CPU time of every command run has
// waited for, with their own waited-for children (the compiler, the test
// binaries), so each step can report what it cost.
var childCPU time.Duration

func run(name string, args ...string) error { return runEnv(nil, name, args...) }

// testGOGC is the collector's target for the test step: under the race
// detector a collection costs several times its usual CPU, and the tests'
// heaps are small beside the machine's memory, so collecting four times
// less often takes about a sixth off the tests' CPU time. Tests that measure
// a heap set their own percentage (debug.SetGCPercent); the benchrss smoke
// runs, which measure the server's RSS, run with the default.
const testGOGC = "400"

// testGC is the environment the test step adds: GOGC=testGOGC unless the
// caller set GOGC.
func testGC() []string {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return []string{"GOGC=" + testGOGC}
}

// runImageFlags runs a go command with the Dockerfile's build settings
// (CGO_ENABLED=0; the caller passes -trimpath): vet and the benchrss smoke
// runs then compile the dependencies exactly as the image test of
// internal/pdpp/cli builds the binaries, so the whole tree is compiled
// once for the three instead of once more for the image. No file of the
// module needs cgo, so vet sees every file either way.
func runImageFlags(name string, args ...string) error {
	return runEnv([]string{"CGO_ENABLED=0"}, name, args...)
}

func runEnv(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	countCPU(cmd)
	return err
}

// countCPU adds the CPU time of a command that has finished to childCPU.
func countCPU(cmd *exec.Cmd) {
	if ps := cmd.ProcessState; ps != nil {
		childCPU += ps.UserTime() + ps.SystemTime()
	}
}

// generatedPaths are what go generate writes: gen/ and the hidden-character
// table of package unseen.
var generatedPaths = []string{"gen", "internal/mcpserver/unseen/table.go"}

// checkGenerated runs go generate in a temporary copy of the working tree
// and fails when what it writes differs from the working tree's generated
// files, printing the difference as a unified diff (git diff --no-index);
// nothing in the working tree is written. checkGeneratedIn does so for the
// tree at root, the diff to w.
func checkGenerated() error { return checkGeneratedIn(".", os.Stdout) }

func checkGeneratedIn(root string, w io.Writer) error {
	tmp, err := os.MkdirTemp("", "pdpp-mcp-generated-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// a/ holds the working tree's generated files, b/ a copy of the whole
	// tree that go generate rewrites; their diff reads as git's a/ b/.
	files, err := treeFiles(root)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := copyTreeFile(filepath.Join(root, f), filepath.Join(tmp, "b", f)); err != nil {
			return err
		}
		for _, g := range generatedPaths {
			if f == g || strings.HasPrefix(f, g+"/") {
				if err := copyTreeFile(filepath.Join(root, f), filepath.Join(tmp, "a", f)); err != nil {
					return err
				}
			}
		}
	}
	gen := exec.Command("go", "generate", "./...")
	gen.Dir = filepath.Join(tmp, "b")
	gen.Stdout, gen.Stderr = os.Stdout, os.Stderr
	err = gen.Run()
	countCPU(gen)
	if err != nil {
		return fmt.Errorf("go generate (in a copy of the tree): %w", err)
	}
	var stale bytes.Buffer
	for _, g := range generatedPaths {
		for _, side := range []string{"a", "b"} {
			if _, err := os.Stat(filepath.Join(tmp, side, g)); errors.Is(err, fs.ErrNotExist) {
				// git diff --no-index needs both sides: an empty folder
				// stands for a path one side lacks.
				if err := os.MkdirAll(filepath.Join(tmp, side, g), 0o755); err != nil {
					return err
				}
			}
		}
		diff := exec.Command("git", "diff", "--no-index", "--no-prefix", "--no-color", "--", filepath.Join("a", g), filepath.Join("b", g))
		diff.Dir = tmp
		out, err := diff.Output()
		countCPU(diff)
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			stale.Write(out)
		default:
			return fmt.Errorf("git diff --no-index (is git installed?): %w", err)
		}
	}
	if stale.Len() > 0 {
		if _, err := w.Write(stale.Bytes()); err != nil {
			return err
		}
		return fmt.Errorf("generated code is stale: the diff above (a/ is the working tree, b/ what go generate writes) is what go generate ./... would change; run it and commit gen/ (edit spec/ or templates/, never gen/)")
	}
	return nil
}

// treeFiles lists the working tree's files by path from dir: what git
// tracks and what it would track (untracked, not ignored), so an edit not
// yet committed counts; without git, every file outside .git.
func treeFiles(dir string) ([]string, error) {
	if _, err := exec.LookPath("git"); err == nil {
		if paths, err := gitFiles(dir, "--cached", "--others", "--exclude-standard"); err == nil {
			return slices.DeleteFunc(paths, func(f string) bool {
				st, err := os.Lstat(filepath.Join(dir, f))
				return err != nil || !st.Mode().IsRegular()
			}), nil
		}
	}
	var files []string
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	return files, err
}

// copyTreeFile copies one file, keeping its permission bits.
func copyTreeFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	st, err := os.Stat(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, st.Mode().Perm())
}

func checkGofmt() error {
	cmd := exec.Command("gofmt", "-l", ".")
	out, err := cmd.Output()
	countCPU(cmd)
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		return fmt.Errorf("not gofmt'd:\n%s", s)
	}
	return nil
}

// benchSmoke runs every benchmark once, so none rots between the runs that
// measure with them (make bench): a benchmark that errors fails the check;
// its figures mean nothing here. Only the packages that have benchmarks are
// built, without -race (under the race detector the 10,000-paper snapshot
// of BenchmarkSearchPapers alone costs over a CPU-minute) and with the
// image's settings, whose compile of the tree go vet has already paid for.
func benchSmoke() error {
	pkgs, err := benchmarkPackages(".")
	if err != nil {
		return err
	}
	if len(pkgs) == 0 {
		return errors.New("no package has a benchmark: the benchmark smoke run would check nothing")
	}
	// -vet=off as in the test step: go vet has checked these packages
	// (about 21 CPU-seconds otherwise).
	args := append([]string{"test", "-trimpath", "-count=1", "-vet=off", "-run=^$", "-bench=.", "-benchtime=1x"}, pkgs...)
	// Only that every benchmark runs is checked here, so the collector's
	// target of the test step serves (see testGOGC).
	if err := runEnv(append([]string{"CGO_ENABLED=0"}, testGC()...), "go", args...); err != nil {
		return fmt.Errorf("benchmarks: %w", err)
	}
	return benchrssSmoke()
}

// benchDecl and fuzzDecl match the declaration of a benchmark and of a fuzz
// target in a _test.go file.
var (
	benchDecl = regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`)
	fuzzDecl  = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
)

// testFunc is one function of a package's tests: the package as a
// ./relative pattern, and the function's name.
type testFunc struct{ pkg, name string }

// testFuncs lists, in walk order, the functions decl matches in the _test.go
// files under root (testdata and dot or underscore folders left out, as go
// list does).
func testFuncs(root string, decl *regexp.Regexp) ([]testFunc, error) {
	var out []testFunc
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			out = append(out, testFunc{"./" + filepath.ToSlash(filepath.Dir(p)), string(m[1])})
		}
		return nil
	})
	return out, err
}

// benchmarkPackages lists, in walk order, the packages under root with a
// benchmark.
func benchmarkPackages(root string) ([]string, error) {
	funcs, err := testFuncs(root, benchDecl)
	pkgs := make([]string, len(funcs))
	for i, f := range funcs {
		pkgs[i] = f.pkg
	}
	return slices.Compact(pkgs), err
}

// benchrssSmoke runs the process meter briefly, so it does not rot between
// the runs that measure with it (make bench, bench-bounds, bench-memory): a
// path that errors, or a flood or memory check over its bounds, fails the
// check; the figures mean nothing. The server and benchrss are built once,
// as the image builds the server (runImageFlags), into a temporary folder
// the runs share (benchrss would otherwise build the server on each run).
func benchrssSmoke() error {
	dir, err := os.MkdirTemp("", "pdpp-mcp-ci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	server, meter := filepath.Join(dir, "pdpp-mcp-server"), filepath.Join(dir, "benchrss")
	if err := runImageFlags("go", "build", "-trimpath", "-o", server, "./cmd/pdpp-mcp-server"); err != nil {
		return fmt.Errorf("build the server: %w", err)
	}
	if err := runImageFlags("go", "build", "-trimpath", "-o", meter, "./tools/benchrss"); err != nil {
		return fmt.Errorf("build benchrss: %w", err)
	}
	for _, r := range []struct {
		name string
		args []string
	}{
		{"benchrss", []string{"-calls", "5", "-pairs", "5", "-clients", "2", "-per-client", "1", "-rounds", "1"}},
		{"benchrss -flood", []string{"-flood", "-flood-clients", "2", "-flood-items", "200"}},
		// A small page, with a ceiling it passes and the default it fits:
		// the full-detail memory check's refusal and success paths, in
		// seconds.
		{"benchrss -fullcap", []string{"-fullcap", "-fullcap-records", "10", "-fullcap-chars", "7800", "-fullcap-ceilings", "65536,0", "-fullcap-settle", "1s"}},
		// A record of 100 KB of tag characters, two full fetches at once,
		// refused once escaped at a ceiling of 64 KiB and served at the
		// default: the escaped full-detail check's paths.
		{"benchrss -hiddenfull", []string{"-hiddenfull", "-hiddenfull-bytes", "100000", "-hiddenfull-calls", "2", "-hiddenfull-ceilings", "65536,0"}},
		// A 300 KB array of empty objects, two calls at once: the
		// decoded-size check's paths (make bench-hostile measures the
		// 7.8 MB one), about two CPU-seconds.
		{"benchrss -hostile", []string{"-hostile", "-hostile-elements", "100000", "-hostile-calls", "2"}},
	} {
		if err := run(meter, append([]string{"-bin", server}, r.args...)...); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}

// fuzzSmoke fuzzes every fuzz target of the tree (go test runs each one's
// seed corpus on every check), each for budget.
func fuzzSmoke(budget string) error {
	if budget == "" || budget == "0" || budget == "0x" {
		return nil
	}
	targets, err := testFuncs(".", fuzzDecl)
	if err == nil && len(targets) == 0 {
		err = errors.New("no fuzz target found: run from the repository root")
	}
	if err != nil {
		return err
	}
	for _, f := range targets {
		if err := run("go", "test", "-run=^$", "-fuzz=^"+f.name+"$", "-fuzztime="+budget, f.pkg); err != nil {
			return fmt.Errorf("%s %s: %w", f.pkg, f.name, err)
		}
	}
	return nil
}
