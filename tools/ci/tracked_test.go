package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// peImage is the start of a PE file: the MZ stub, whose field at 0x3c points
// at the "PE\0\0" signature.
func peImage() []byte {
	b := make([]byte, 0x80)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	return b
}

// gitRepo makes a git repository in a temporary folder holding files (path
// to content), and adds to its index the ones named in tracked.
func gitRepo(t *testing.T, files map[string][]byte, tracked ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, append([]string{"add", "--"}, tracked...)} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func TestCheckTracked(t *testing.T) {
	text := []byte("package x\n")
	cases := []struct {
		name    string
		files   map[string][]byte
		tracked []string
		allow   map[string]string
		want    []string // substrings of the error; none: the check passes
	}{
		{"sources only", map[string][]byte{"a.go": text, "docs/x.md": []byte("# x\n")}, []string{"a.go", "docs/x.md"}, nil, nil},
		{"ELF", map[string][]byte{"a.go": text, "mcpgen": append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...)}, []string{"a.go", "mcpgen"}, nil,
			[]string{"mcpgen is a compiled binary (ELF)"}},
		{"Mach-O, 64-bit little-endian", map[string][]byte{"tool": append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 100)...)}, []string{"tool"}, nil,
			[]string{"tool is a compiled binary (Mach-O)"}},
		{"universal Mach-O", map[string][]byte{"tool": append([]byte{0xca, 0xfe, 0xba, 0xbe}, make([]byte, 100)...)}, []string{"tool"}, nil,
			[]string{"tool is a compiled binary (Mach-O universal"}},
		{"PE", map[string][]byte{"bin/tool.exe": peImage()}, []string{"bin/tool.exe"}, nil,
			[]string{"bin/tool.exe is a compiled binary (PE)"}},
		{"text that starts with MZ", map[string][]byte{"notes.txt": append([]byte("MZ is not an image here."), bytes.Repeat([]byte(" "), 100)...)}, []string{"notes.txt"}, nil, nil},
		{"untracked binary", map[string][]byte{"a.go": text, "pdpp-mcp-server": append([]byte("\x7fELF"), make([]byte, 100)...)}, []string{"a.go"}, nil, nil},
		{"exactly 1 MiB", map[string][]byte{"big.json": bytes.Repeat([]byte("a"), maxTrackedBytes)}, []string{"big.json"}, nil, nil},
		{"over 1 MiB", map[string][]byte{"big.json": bytes.Repeat([]byte("a"), maxTrackedBytes+1)}, []string{"big.json"}, nil,
			[]string{"big.json is 1048577 bytes, over the 1048576-byte limit", "largeFixtures"}},
		{"over 1 MiB, allow-listed", map[string][]byte{"testdata/big.json": bytes.Repeat([]byte("a"), maxTrackedBytes+1)}, []string{"testdata/big.json"},
			map[string]string{"testdata/big.json": "a fixture that must be large"}, nil},
		{"allow-listed binary", map[string][]byte{"testdata/big": append([]byte("\x7fELF"), make([]byte, maxTrackedBytes)...)}, []string{"testdata/big"},
			map[string]string{"testdata/big": "size only"}, []string{"testdata/big is a compiled binary (ELF)"}},
		{"stale allow-list entry", map[string][]byte{"a.go": text}, []string{"a.go"},
			map[string]string{"testdata/gone.json": "removed since"}, []string{"largeFixtures names testdata/gone.json, which is not a tracked file over"}},
		{"allow-listed file under the limit", map[string][]byte{"small.json": text}, []string{"small.json"},
			map[string]string{"small.json": "grew smaller"}, []string{"largeFixtures names small.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t, tc.files, tc.tracked...)
			err := checkTracked(dir, tc.allow)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("check failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("check passed; want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestCheckTrackedOutsideGit: in a tree that is no git work tree the check
// cannot list tracked files, and fails saying so instead of passing.
func TestCheckTrackedOutsideGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir)) // no repository above the temporary folder counts
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkTracked(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "is not a git work tree") || !strings.Contains(err.Error(), "-skip-tracked") {
		t.Fatalf("got %v; want a failure that names the missing work tree and -skip-tracked", err)
	}
}
