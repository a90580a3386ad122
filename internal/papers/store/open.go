package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// requiredTables are the tables every snapshot has and this package reads.
var requiredTables = []string{
	"paper", "paper_summary", "paper_translation", "paper_fts",
	"author", "paper_author", "keyword", "paper_keyword",
	"institution", "paper_institution", "tag", "paper_tag",
	"venue", "paper_venue",
}

// requiredPaperColumns are the columns of table paper this package reads.
// doi is optional (older snapshots lack it).
var requiredPaperColumns = []string{
	"paper_id", "title", "year", "month", "venue",
	"preferred_summary_template", "summary_preview", "source_md_content_hash",
}

// SchemaError reports a file that is not a paper snapshot.
type SchemaError struct {
	Path           string
	MissingTables  []string
	MissingColumns []string // of table paper
	Err            error    // set when the file is not a SQLite database at all
}

func (e *SchemaError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s is not a paper snapshot: %v", e.Path, e.Err)
	}
	var parts []string
	if len(e.MissingTables) > 0 {
		parts = append(parts, "missing tables "+strings.Join(e.MissingTables, ", "))
	}
	if len(e.MissingColumns) > 0 {
		parts = append(parts, "table paper lacks columns "+strings.Join(e.MissingColumns, ", "))
	}
	return fmt.Sprintf("%s is not a paper snapshot: %s", e.Path, strings.Join(parts, "; "))
}

func (e *SchemaError) Unwrap() error { return e.Err }

// Store is an open snapshot database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	// Immutable is set when the file had to be opened with immutable=1 (a
	// WAL-mode snapshot in a directory the process cannot write).
	Immutable bool
	HasDOI    bool // the snapshot has the paper.doi column
	HasBibTeX bool // the snapshot has the paper_bibtex table
}

// DSN is the data source name Open uses for path: the file opened
// read-only (mode=ro, so SQLite itself refuses to write it) with
// query_only on every connection. immutable adds immutable=1, which lets
// SQLite read a WAL-mode file in a directory it cannot write (it then
// takes no locks and ignores any -wal file).
func DSN(path string, immutable bool) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path
	}
	// In a SQLite URI, %, ? and # in the path must be percent-encoded.
	p = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(p)
	dsn := "file://" + p + "?mode=ro&_query_only=1"
	if immutable {
		dsn += "&immutable=1"
	}
	return dsn, nil
}

// Open opens the snapshot database at path read-only and checks that it is
// a paper snapshot; a file that is not one gives a *SchemaError naming
// what is missing.
func Open(path string) (*Store, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("open snapshot: %s is a directory, not a .sqlite3 file", path)
	}
	s, err := open(path, false)
	if serr, ok := errors.AsType[*SchemaError](err); ok && serr.Err != nil && needsImmutable(serr.Err) {
		// A WAL-mode snapshot in a read-only place: SQLite cannot create
		// the shared-memory file, so read the file as immutable.
		s, err = open(path, true)
	}
	return s, err
}

func open(path string, immutable bool) (*Store, error) {
	dsn, err := DSN(path, immutable)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	s := &Store{db: db, path: path, Immutable: immutable}
	if err := s.check(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// needsImmutable reports the errors of a WAL-mode file that SQLite cannot
// open read-only because it may not create the -shm file.
func needsImmutable(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "readonly") || strings.Contains(msg, "unable to open")
}

// check verifies the schema and records the optional parts.
func (s *Store) check(ctx context.Context) error {
	names, err := s.strings(ctx, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
	if err != nil {
		return &SchemaError{Path: s.path, Err: cleanSQLiteError(err)}
	}
	serr := &SchemaError{Path: s.path}
	for _, t := range requiredTables {
		if !slices.Contains(names, t) {
			serr.MissingTables = append(serr.MissingTables, t)
		}
	}
	if slices.Contains(names, "paper") {
		cols, err := s.strings(ctx, "SELECT name FROM pragma_table_info(?)", "paper")
		if err != nil {
			return err
		}
		for _, c := range requiredPaperColumns {
			if !slices.Contains(cols, c) {
				serr.MissingColumns = append(serr.MissingColumns, c)
			}
		}
		s.HasDOI = slices.Contains(cols, "doi")
	}
	if len(serr.MissingTables) > 0 || len(serr.MissingColumns) > 0 {
		return serr
	}
	s.HasBibTeX = slices.Contains(names, "paper_bibtex")
	return nil
}

// cleanSQLiteError shortens the driver's message for a file that is not a
// database.
func cleanSQLiteError(err error) error {
	if strings.Contains(err.Error(), "file is not a database") {
		return errors.New("the file is not a SQLite database")
	}
	return err
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database still answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	return s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
}
