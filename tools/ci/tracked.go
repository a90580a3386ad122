package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// maxTrackedBytes is the largest file the repository may track; a fixture
// that must be larger is named in largeFixtures.
const maxTrackedBytes = 1 << 20

// largeFixtures is the one allow-list of tracked files over maxTrackedBytes,
// by path from the repository root, each with the reason it must be that
// large. An entry whose file is no longer tracked or no longer over the limit
// fails the check too, so the list cannot go stale.
var largeFixtures = map[string]string{}

// checkTracked fails when a file git tracks in the work tree at dir is a
// compiled binary (ELF, Mach-O or PE) or over maxTrackedBytes and not in
// allow. It reads what git ls-files names from the work tree (in a fresh
// clone, what is committed; a file deleted locally is not checked). Outside a
// git work tree it cannot know what is tracked, so it fails and says so.
func checkTracked(dir string, allow map[string]string) error {
	if _, err := exec.LookPath("git"); err != nil {
		return errors.New("git is not installed: this check lists the tracked files with git ls-files (pass -skip-tracked to leave it out)")
	}
	if out, err := exec.Command("git", "-C", dir, "rev-parse", "--is-inside-work-tree").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		return fmt.Errorf("%s is not a git work tree (a source archive?): this check lists the tracked files with git ls-files, so run it in a clone (or pass -skip-tracked to leave it out)", dir)
	}
	paths, err := gitFiles(dir)
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	var problems []string
	seen := map[string]bool{}
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		st, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !st.Mode().IsRegular() {
			continue // deleted locally, a symbolic link or a submodule
		}
		if err != nil {
			return err
		}
		if kind, err := binaryKind(full); err != nil {
			return err
		} else if kind != "" {
			problems = append(problems, fmt.Sprintf("%s is a compiled binary (%s): git rm --cached it and ignore it in .gitignore", p, kind))
		}
		if st.Size() > maxTrackedBytes {
			seen[p] = true
			if _, ok := allow[p]; !ok {
				problems = append(problems, fmt.Sprintf("%s is %d bytes, over the %d-byte limit: keep it out of git, or name it with its reason in largeFixtures (tools/ci/tracked.go) if it is a fixture that must be this large", p, st.Size(), maxTrackedBytes))
			}
		}
	}
	for p := range allow {
		if !seen[p] {
			problems = append(problems, fmt.Sprintf("largeFixtures names %s, which is not a tracked file over %d bytes: remove the entry", p, maxTrackedBytes))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("tracked files:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// gitFiles lists the paths git ls-files names in the work tree at dir,
// with the given options.
func gitFiles(dir string, options ...string) ([]string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir, "ls-files", "-z"}, options...)...).Output()
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == 0 }), err
}

// binaryKind names the executable format whose magic number opens the file
// at path, or returns "" for anything else. It reads at most the 64-byte
// header and, for a PE candidate, the 4-byte signature its header points at.
func binaryKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := f.ReadAt(head, 0)
	head = head[:n]
	if len(head) < 4 {
		return "", nil
	}
	switch m := binary.BigEndian.Uint32(head); {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF", nil
	case m == 0xfeedface || m == 0xfeedfacf || m == 0xcefaedfe || m == 0xcffaedfe:
		return "Mach-O", nil
	case m == 0xcafebabe:
		// A universal Mach-O and a Java class file share this magic;
		// both are build output.
		return "Mach-O universal or Java class", nil
	}
	// A PE file starts with the MZ stub, whose 32-bit little-endian field
	// at 0x3c gives the offset of the "PE\0\0" signature; text that happens
	// to start with "MZ" has no such signature.
	if len(head) == 64 && head[0] == 'M' && head[1] == 'Z' {
		off := int64(binary.LittleEndian.Uint32(head[0x3c:]))
		sig := make([]byte, 4)
		if n, _ := f.ReadAt(sig, off); n == 4 && string(sig) == "PE\x00\x00" {
			return "PE", nil
		}
	}
	return "", nil
}
