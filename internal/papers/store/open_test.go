package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestReadOnlyDatabase proves that nothing done through the store's
// connections can change the snapshot: every writing statement fails, even
// after query_only is switched off on a connection (mode=ro still refuses),
// and the file's bytes stay the same.
func TestReadOnlyDatabase(t *testing.T) {
	dir := t.TempDir()
	snap, err := snapshot.BuildFixture(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	before := fileSum(t, snap.DBPath)
	s, err := Open(snap.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Immutable {
		t.Fatal("a writable directory should not need immutable=1")
	}
	ctx := context.Background()
	writes := []string{
		"INSERT INTO paper_summary (paper_id, template_tag) VALUES ('x', 'y')",
		"UPDATE paper SET title = 'changed'",
		"DELETE FROM paper",
		"DROP TABLE author",
		"CREATE TABLE intruder (x)",
		"INSERT INTO paper_fts (paper_id, title) VALUES ('x', 'y')",
		"PRAGMA user_version = 7",
		"VACUUM",
	}
	for _, q := range writes {
		t.Run("query_only/"+q, func(t *testing.T) {
			if _, err := s.db.ExecContext(ctx, q); err == nil {
				t.Fatalf("%s succeeded on a read-only store", q)
			}
		})
	}
	// Switching query_only off on one connection still cannot write: the
	// file itself is open read-only.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
		t.Fatalf("PRAGMA query_only = 0: %v", err)
	}
	for _, q := range writes[:5] {
		t.Run("mode_ro/"+q, func(t *testing.T) {
			_, err := conn.ExecContext(ctx, q)
			if err == nil || !strings.Contains(err.Error(), "readonly") {
				t.Fatalf("%s: err = %v, want a readonly error", q, err)
			}
		})
	}
	var title string
	if err := s.db.QueryRowContext(ctx, "SELECT title FROM paper WHERE paper_id = ?", snapshot.PaperID(snapshot.KeyViT)).Scan(&title); err != nil || title == "changed" {
		t.Fatalf("title after writes: %q, %v", title, err)
	}
	if after := fileSum(t, snap.DBPath); after != before {
		t.Fatal("the snapshot file changed")
	}
}

// TestOpenWALInReadOnlyDirectory opens a WAL-mode snapshot in a directory
// the process cannot write, which needs immutable=1. Permissions do not
// bind root, so the test then runs itself as user nobody when it can.
func TestOpenWALInReadOnlyDirectory(t *testing.T) {
	if path := os.Getenv("PAPER_STORE_RO_SNAPSHOT"); path != "" {
		s, err := Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		if _, err := s.Paper(context.Background(), snapshot.PaperID(snapshot.KeyViT)); err != nil {
			t.Fatalf("Paper: %v", err)
		}
		if !s.Immutable {
			t.Fatal("expected the immutable fallback")
		}
		return
	}
	dir := t.TempDir()
	snap, err := snapshot.BuildFixture(filepath.Join(dir, "snap"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(snap.DBPath, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(snap.Dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(snap.Dir, 0o755) })
	// t.TempDir makes private directories; the test's own ones may open up.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() != 0 {
		t.Setenv("PAPER_STORE_RO_SNAPSHOT", snap.DBPath)
		TestOpenWALInReadOnlyDirectory(t)
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root without setpriv: directory permissions cannot be tested")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary and every directory above the snapshot must be
	// reachable by nobody.
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by other users", d)
		}
	}
	cmd := exec.Command(setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups",
		exe, "-test.run=^TestOpenWALInReadOnlyDirectory$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PAPER_STORE_RO_SNAPSHOT="+snap.DBPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("permission denied")) || bytes.Contains(out, []byte("operation not permitted")) {
			t.Skipf("cannot run the test binary as nobody: %s", out)
		}
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("as nobody: %s", out)
	}
}

// mutated builds a fixture copy and applies ddl to it with a writable
// connection.
func mutated(t *testing.T, ddl ...string) string {
	t.Helper()
	snap, err := snapshot.BuildFixture(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", snap.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range ddl {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return snap.DBPath
}

func TestOpenNotASnapshot(t *testing.T) {
	dir := t.TempDir()
	textFile := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(textFile, []byte(strings.Repeat("this is not sqlite\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	otherDB := filepath.Join(dir, "other.sqlite3")
	func() {
		db, err := sql.Open("sqlite", otherDB)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("CREATE TABLE todo (id INTEGER PRIMARY KEY, item TEXT)"); err != nil {
			t.Fatal(err)
		}
	}()
	tests := []struct {
		name         string
		path         string
		wantTables   []string
		wantColumns  []string
		wantInError  []string
		schemaErrNil bool // the error is not a *SchemaError
	}{
		{name: "unrelated database", path: otherDB, wantTables: requiredTables,
			wantInError: []string{"is not a paper snapshot", "missing tables paper, paper_summary", "paper_fts"}},
		{name: "two tables dropped", path: mutated(t, "DROP TABLE paper_fts", "DROP TABLE paper_tag"),
			wantTables: []string{"paper_fts", "paper_tag"}, wantInError: []string{"missing tables paper_fts, paper_tag"}},
		{name: "paper lacks columns", path: mutated(t, "ALTER TABLE paper DROP COLUMN summary_preview", "ALTER TABLE paper DROP COLUMN source_md_content_hash"),
			wantColumns: []string{"summary_preview", "source_md_content_hash"}, wantInError: []string{"table paper lacks columns summary_preview, source_md_content_hash"}},
		{name: "text file", path: textFile, wantInError: []string{"not a paper snapshot", "not a SQLite database"}},
		{name: "missing file", path: filepath.Join(dir, "nope.sqlite3"), schemaErrNil: true, wantInError: []string{"no such file"}},
		{name: "directory", path: dir, schemaErrNil: true, wantInError: []string{"is a directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			for _, w := range tc.wantInError {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var serr *SchemaError
			if !errors.As(err, &serr) {
				if !tc.schemaErrNil {
					t.Fatalf("error %T is not a *SchemaError", err)
				}
				return
			}
			if tc.schemaErrNil {
				t.Fatalf("unexpected *SchemaError %v", serr)
			}
			if !slices.Equal(serr.MissingTables, tc.wantTables) {
				t.Errorf("missing tables %v, want %v", serr.MissingTables, tc.wantTables)
			}
			if !slices.Equal(serr.MissingColumns, tc.wantColumns) {
				t.Errorf("missing columns %v, want %v", serr.MissingColumns, tc.wantColumns)
			}
		})
	}
}

func TestLegacySnapshot(t *testing.T) {
	snap, err := snapshot.BuildFixture(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(snap.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.HasDOI || s.HasBibTeX {
		t.Fatalf("legacy snapshot reports doi=%v bibtex=%v", s.HasDOI, s.HasBibTeX)
	}
	p, err := s.Paper(context.Background(), snapshot.PaperID(snapshot.KeyViT))
	if err != nil {
		t.Fatal(err)
	}
	if p.DOI != "" || p.HasBibTeX {
		t.Fatalf("legacy paper has doi %q bibtex %v", p.DOI, p.HasBibTeX)
	}
}

func TestDSN(t *testing.T) {
	tests := []struct {
		name, path string
		immutable  bool
		want       []string
	}{
		{"plain", "snap.sqlite3", false, []string{"file:///", "/snap.sqlite3?mode=ro&_query_only=1"}},
		{"special characters", "a?b#c%d.sqlite3", false, []string{"/a%3Fb%23c%25d.sqlite3?mode=ro"}},
		{"immutable", "snap.sqlite3", true, []string{"?mode=ro&_query_only=1&immutable=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DSN(tc.path, tc.immutable)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("DSN = %q, lacks %q", got, w)
				}
			}
		})
	}
	t.Run("opens a path with special characters", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "odd ?#% dir")
		snap, err := snapshot.Build(dir, snapshot.Generated(2, 3), snapshot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(snap.DBPath)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		s.Close()
	})
}
