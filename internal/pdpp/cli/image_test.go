package cli

import (
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
)

// repoRoot is the module root, relative to this package.
const repoRoot = "../../.."

// dockerfile is the image recipe, parsed just enough to rebuild its binaries.
type dockerfile struct {
	env        []string // ENV lines of the build stage, KEY=VALUE
	finalEnv   []string // ENV lines of the last stage, KEY=VALUE
	buildArgs  []string // the words of the `go build` RUN after "go"
	finalFrom  string
	finalUser  string
	exposed    []string
	entrypoint string
}

// readDockerfile parses the Dockerfile at the module root: instructions
// (with \ continuations joined), the build stage's ENV and `go build` line,
// and the last stage's FROM, USER, EXPOSE and ENTRYPOINT.
func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && cur == "") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur += s + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	stage := 0
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			stage++
			d.finalFrom, d.finalUser, d.exposed, d.finalEnv = strings.Fields(rest)[0], "", nil, nil
		case "ENV":
			if stage == 1 {
				d.env = append(d.env, strings.Fields(rest)...)
			}
			d.finalEnv = append(d.finalEnv, strings.Fields(rest)...)
		case "RUN":
			if words := shellWords(t, rest); len(words) > 2 && words[0] == "go" && words[1] == "build" {
				d.buildArgs = words[1:]
			}
		case "USER":
			d.finalUser = rest
		case "EXPOSE":
			d.exposed = append(d.exposed, strings.Fields(rest)...)
		case "ENTRYPOINT":
			d.entrypoint = rest
		}
	}
	if d.buildArgs == nil {
		t.Fatal("the Dockerfile has no `RUN go build` line")
	}
	return d
}

// shellWords splits a RUN line the way /bin/sh would for the simple quoting
// the Dockerfile uses (double quotes, no escapes inside words).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var b strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", s)
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}

// buildLikeImage builds the Dockerfile's binaries with its exact flags and
// environment into dir, with VERSION set to version; with only set, just that
// package (e.g. ./cmd/pdpp-mcp-server).
func buildLikeImage(t *testing.T, d dockerfile, dir, version, only string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	args := slices.Clone(d.buildArgs)
	if only != "" {
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "./cmd/") && a != only })
	}
	for i, a := range args {
		a = strings.ReplaceAll(a, "${VERSION}", version)
		if args[max(i-1, 0)] == "-o" {
			a = dir + string(filepath.Separator)
		}
		args[i] = a
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), d.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestDockerfileBuildsStaticStampedBinaries(t *testing.T) {
	d := readDockerfile(t)
	t.Run("recipe", func(t *testing.T) {
		checks := []struct {
			name string
			ok   bool
		}{
			{"CGO_ENABLED=0 in the build stage", slices.Contains(d.env, "CGO_ENABLED=0")},
			{"-trimpath", slices.Contains(d.buildArgs, "-trimpath")},
			{"version stamped in both servers", slices.ContainsFunc(d.buildArgs, func(a string) bool {
				return strings.Contains(a, "internal/pdpp/cli.Version=${VERSION}") && strings.Contains(a, "internal/papers/cli.Version=${VERSION}")
			})},
			{"both servers built", slices.Contains(d.buildArgs, "./cmd/pdpp-mcp-server") && slices.Contains(d.buildArgs, "./cmd/paper-mcp-server")},
			{"distroless or scratch base", strings.HasPrefix(d.finalFrom, "gcr.io/distroless/static") || d.finalFrom == "scratch"},
			{"numeric non-root user", d.finalUser != "" && !strings.HasPrefix(d.finalUser, "0") && strings.Trim(d.finalUser, "0123456789:") == ""},
			{"ports exposed", slices.Contains(d.exposed, "8787") && slices.Contains(d.exposed, "8788")},
			{"exec-form entrypoint (no shell)", strings.HasPrefix(d.entrypoint, "[")},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("Dockerfile: %s", c.name)
			}
		}
	})
	t.Run("memory fits the Kubernetes base's limit", func(t *testing.T) {
		env := map[string]string{}
		for _, kv := range d.finalEnv {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		_, objs := readKustomize(t)
		limit := objs["Deployment"].Spec.Template.Spec.Containers[0].Resources.Limits["memory"]
		// The image's command with its environment, as `docker run` starts it.
		var h httpFlags
		f := cmdkit.NewFlagSet(Env{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}, "pdpp-mcp-server", "http", "")
		if err := h.register(f); err != nil {
			t.Fatal(err)
		}
		if err := f.ParseNoArgs(nil); err != nil {
			t.Fatal(err)
		}
		checkMemoryFits(t, "Dockerfile", limit, env["GOMEMLIMIT"], &h.common, int64(h.MaxConcurrentRequests), h.MaxBodyBytes, int64(h.MaxConns))
	})
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux; ELF checks need a linux build")
	}
	dir := t.TempDir()
	const version = "v9.8.7-imagetest"
	buildLikeImage(t, d, dir, version, "")
	for _, name := range []string{"pdpp-mcp-server", "paper-mcp-server"} {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("the binary has an ELF interpreter (PT_INTERP): it is not static")
				}
			}
			if f.Section(".interp") != nil {
				t.Error("the binary has an .interp section: it is not static")
			}
			if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
				t.Errorf("the binary needs shared libraries %v", libs)
			}
			out, err := exec.Command(bin, "version").Output()
			if err != nil {
				t.Fatalf("%s version: %v", name, err)
			}
			if !bytes.Contains(out, []byte(version)) {
				t.Errorf("%s version printed %q, want %q", name, out, version)
			}
		})
	}
}
