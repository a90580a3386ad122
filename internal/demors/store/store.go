package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, FTS5 built in)
)

// Store is the seeded demo database.
type Store struct {
	db  *sql.DB
	cat *Catalog
	// sem holds, per record row and semantic field, the token counts of the token-overlap
	// semantic scorer; built once from the seed, never changed.
	sem map[int64]map[string]map[string]int
}

// Record is one stored record.
type Record struct {
	RID          int64
	ConnectionID string
	Stream       string
	ID           string
	EmittedAt    string
	// Data is the record body decoded with json.Number for numbers.
	Data map[string]any
}

const schemaSQL = `
CREATE TABLE records (
	rid INTEGER PRIMARY KEY,
	connection_id TEXT NOT NULL,
	stream TEXT NOT NULL,
	id TEXT NOT NULL,
	emitted_at TEXT NOT NULL,
	data TEXT NOT NULL,
	UNIQUE (connection_id, stream, id)
);
CREATE INDEX records_order ON records (connection_id, stream, emitted_at, id);
CREATE INDEX records_by_id ON records (stream, id);
CREATE VIRTUAL TABLE record_fts USING fts5(
	content, rid UNINDEXED, field UNINDEXED,
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE blobs (
	blob_id TEXT PRIMARY KEY,
	media_type TEXT NOT NULL,
	filename TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	bytes BLOB NOT NULL
);
CREATE TABLE blob_refs (
	blob_id TEXT NOT NULL,
	connection_id TEXT NOT NULL,
	stream TEXT NOT NULL,
	record_id TEXT NOT NULL,
	field TEXT NOT NULL
);
CREATE INDEX blob_refs_by_blob ON blob_refs (blob_id);
`

// seedImage is the seeded database, built once per process and serialized: every later Open
// copies bytes instead of re-indexing, and shares the seed's semantic index read-only.
var seedImage = sync.OnceValues(func() (seeded, error) {
	db, sem, err := buildSeedImage(context.Background())
	return seeded{db, sem}, err
})

type seeded struct {
	db  []byte
	sem map[int64]map[string]map[string]int
}

func buildSeedImage(ctx context.Context) ([]byte, map[int64]map[string]map[string]int, error) {
	db, err := openMemory()
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	sem, err := seed(ctx, db, DemoCatalog())
	if err != nil {
		return nil, nil, err
	}
	var image []byte
	err = rawConn(ctx, db, func(c serializer) error {
		var err error
		image, err = c.Serialize()
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: serialize seed: %w", err)
	}
	return image, sem, nil
}

// serializer is the part of the modernc.org/sqlite connection used to copy databases.
type serializer interface {
	Serialize() ([]byte, error)
	Deserialize([]byte) error
}

func rawConn(ctx context.Context, db *sql.DB, f func(serializer) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(serializer)
		if !ok {
			return fmt.Errorf("sqlite driver connection %T cannot serialize", dc)
		}
		return f(c)
	})
}

// openMemory opens a private in-memory database. ":memory:" is one database per
// connection, so the pool keeps exactly one, forever (no lifetime or idle time closes it).
func openMemory() (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// Open returns a fresh, private copy of the seeded demo database.
func Open(ctx context.Context) (*Store, error) {
	image, err := seedImage()
	if err != nil {
		return nil, err
	}
	db, err := openMemory()
	if err != nil {
		return nil, err
	}
	if err := rawConn(ctx, db, func(c serializer) error { return c.Deserialize(image.db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: load seed image: %w", err)
	}
	return &Store{db: db, cat: DemoCatalog(), sem: image.sem}, nil
}

// Close releases the database.
func (s *Store) Close() error { return s.db.Close() }

// Catalog returns the manifests and connections of the seeded data.
func (s *Store) Catalog() *Catalog { return s.cat }

// seed creates the schema, stores the generated data and returns the semantic index.
func seed(ctx context.Context, db *sql.DB, cat *Catalog) (map[int64]map[string]map[string]int, error) {
	sem := map[int64]map[string]map[string]int{}
	if _, err := db.ExecContext(ctx, schemaSQL); err != nil {
		return nil, fmt.Errorf("store: create schema: %w", err)
	}
	recs, blobs := generate()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: begin seed: %w", err)
	}
	defer tx.Rollback()
	insRec, err := tx.PrepareContext(ctx, `INSERT INTO records (connection_id, stream, id, emitted_at, data) VALUES (?, ?, ?, ?, ?) RETURNING rid`)
	if err != nil {
		return nil, fmt.Errorf("store: prepare records: %w", err)
	}
	insFTS, err := tx.PrepareContext(ctx, `INSERT INTO record_fts (content, rid, field) VALUES (?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("store: prepare fts: %w", err)
	}
	insRef, err := tx.PrepareContext(ctx, `INSERT INTO blob_refs (blob_id, connection_id, stream, record_id, field) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("store: prepare blob refs: %w", err)
	}
	for _, rec := range recs {
		st, ok := cat.StreamOf(rec.conn, rec.stream)
		if !ok {
			return nil, fmt.Errorf("store: seed record %s/%s:%s has no manifest stream", rec.conn, rec.stream, rec.id)
		}
		body, err := json.Marshal(rec.fields)
		if err != nil {
			return nil, fmt.Errorf("store: encode record %s: %w", rec.id, err)
		}
		var rid int64
		if err := insRec.QueryRowContext(ctx, rec.conn, rec.stream, rec.id, rec.emittedAt, string(body)).Scan(&rid); err != nil {
			return nil, fmt.Errorf("store: insert record %s: %w", rec.id, err)
		}
		for _, fd := range st.Fields {
			v := rec.fields[fd.Name]
			text, isText := v.(string)
			if fd.Lexical && isText {
				if _, err := insFTS.ExecContext(ctx, text, rid, fd.Name); err != nil {
					return nil, fmt.Errorf("store: index %s.%s: %w", rec.id, fd.Name, err)
				}
			}
			if fd.Semantic && isText {
				if sem[rid] == nil {
					sem[rid] = map[string]map[string]int{}
				}
				counts := map[string]int{}
				for _, tok := range Tokenize(text) {
					counts[tok]++
				}
				sem[rid][fd.Name] = counts
			}
			if ref, ok := v.(map[string]any); ok && fd.PDPPType == "blob" {
				if _, err := insRef.ExecContext(ctx, ref["blob_id"], rec.conn, rec.stream, rec.id, fd.Name); err != nil {
					return nil, fmt.Errorf("store: blob ref %s: %w", rec.id, err)
				}
			}
		}
	}
	for _, b := range blobs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (blob_id, media_type, filename, sha256, bytes) VALUES (?, ?, ?, ?, ?)`,
			b.id, b.mediaType, b.filename, b.sha256, b.bytes); err != nil {
			return nil, fmt.Errorf("store: insert blob %s: %w", b.id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: commit seed: %w", err)
	}
	return sem, nil
}

// Tokenize lower-cases text and splits it into runs of letters and digits.
func Tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Filter is one field condition. Op is eq, gte, gt, lte or lt; Value is a string, int64,
// float64 or bool already checked against the field's declared type.
type Filter struct {
	Field string
	Op    string
	Value any
}

var sqlOps = map[string]string{"eq": "=", "gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}

// recordsWhere is the FROM and WHERE, with arguments, of a query for a stream's records
// under the connections that match the filters.
func recordsWhere(connectionIDs []string, stream string, filters []Filter) (string, []any, error) {
	in, conns := inList(connectionIDs)
	var where strings.Builder
	where.WriteString(" FROM records WHERE stream = ? AND connection_id IN (" + in + ")")
	args := append([]any{stream}, conns...)
	for _, f := range filters {
		op, ok := sqlOps[f.Op]
		if !ok {
			return "", nil, fmt.Errorf("store: unknown filter operator %q", f.Op)
		}
		// The driver binds a bool as 1 or 0, as json_extract reads true and false.
		where.WriteString(" AND json_extract(data, ?) " + op + " ?")
		args = append(args, `$."`+strings.ReplaceAll(f.Field, `"`, `\"`)+`"`, f.Value) // the field quoted as a JSON path key
	}
	return where.String(), args, nil
}

// Position is a point in a stream's (emitted_at, id) order.
type Position struct {
	EmittedAt string
	ID        string
}

// ListQuery selects one page of one stream under one connection.
type ListQuery struct {
	ConnectionID string
	Stream       string
	Filters      []Filter
	Desc         bool
	// After, when set, starts the page strictly after this position in the page order.
	After *Position
	Limit int // at least 1
}

// List returns one page and whether more records follow it.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Record, bool, error) {
	where, args, err := recordsWhere([]string{q.ConnectionID}, q.Stream, q.Filters)
	if err != nil {
		return nil, false, err
	}
	query := `SELECT rid, connection_id, stream, id, emitted_at, data` + where
	cmp, dir := ">", "ASC"
	if q.Desc {
		cmp, dir = "<", "DESC"
	}
	if q.After != nil {
		query += fmt.Sprintf(" AND (emitted_at %s ? OR (emitted_at = ? AND id %s ?))", cmp, cmp)
		args = append(args, q.After.EmittedAt, q.After.EmittedAt, q.After.ID)
	}
	query += fmt.Sprintf(" ORDER BY emitted_at %s, id %s LIMIT ?", dir, dir)
	args = append(args, q.Limit+1)
	recs, err := s.queryRecords(ctx, true, query, args...)
	if err != nil {
		return nil, false, err
	}
	more := len(recs) > q.Limit
	if more {
		recs = recs[:q.Limit]
	}
	return recs, more, nil
}

// Count returns how many records of a stream under the connections match the filters.
func (s *Store) Count(ctx context.Context, connectionIDs []string, stream string, filters []Filter) (int, error) {
	where, args, err := recordsWhere(connectionIDs, stream, filters)
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*)`+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count: %w", err)
	}
	return n, nil
}

// Scan returns a stream's records under the connections that match the filters, in
// (emitted_at, connection_id, id) order.
func (s *Store) Scan(ctx context.Context, connectionIDs []string, stream string, filters []Filter) ([]Record, error) {
	where, args, err := recordsWhere(connectionIDs, stream, filters)
	if err != nil {
		return nil, err
	}
	return s.queryRecords(ctx, true, `SELECT rid, connection_id, stream, id, emitted_at, data`+where+` ORDER BY emitted_at, connection_id, id`, args...)
}

// Holding returns the records with this stream and id under the given connections, in
// the order given: one query finds the holders and loads them.
func (s *Store) Holding(ctx context.Context, connectionIDs []string, stream, id string) ([]Record, error) {
	where, args, _ := recordsWhere(connectionIDs, stream, nil) // no filters, no error
	recs, err := s.queryRecords(ctx, true, `SELECT rid, connection_id, stream, id, emitted_at, data`+where+` AND id = ?`, append(args, id)...)
	slices.SortFunc(recs, func(a, b Record) int {
		return cmp.Compare(slices.Index(connectionIDs, a.ConnectionID), slices.Index(connectionIDs, b.ConnectionID))
	})
	return recs, err
}

// ByRID returns the records with the given row ids; without withData their Data is nil,
// enough to rank and scope search hits before loading the page.
func (s *Store) ByRID(ctx context.Context, rids []int64, withData bool) (map[int64]Record, error) {
	out := map[int64]Record{}
	if len(rids) == 0 {
		return out, nil
	}
	in, args := inList(rids)
	q := `SELECT rid, connection_id, stream, id, emitted_at FROM records WHERE rid IN (` + in + `)`
	if withData {
		q = `SELECT rid, connection_id, stream, id, emitted_at, data FROM records WHERE rid IN (` + in + `)`
	}
	recs, err := s.queryRecords(ctx, withData, q, args...)
	for _, r := range recs {
		out[r.RID] = r
	}
	return out, err
}

// inList returns the placeholders and arguments of an SQL IN list.
func inList[T any](vals []T) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?,", len(vals)), ","), args
}

// query runs q and scans each row with scan; what names the query in errors.
func query[T any](ctx context.Context, db *sql.DB, what, q string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}

// StreamStats returns a stream's record count and latest emitted_at ("" when empty) under a connection.
func (s *Store) StreamStats(ctx context.Context, connectionID, stream string) (int, string, error) {
	var n int
	var last sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT count(*), max(emitted_at) FROM records WHERE connection_id = ? AND stream = ?`,
		connectionID, stream).Scan(&n, &last)
	if err != nil {
		return 0, "", fmt.Errorf("store: stream stats: %w", err)
	}
	return n, last.String, nil
}

func (s *Store) queryRecords(ctx context.Context, withData bool, q string, args ...any) ([]Record, error) {
	return query(ctx, s.db, "query records", q, args, func(rows *sql.Rows) (r Record, err error) {
		if !withData {
			return r, rows.Scan(&r.RID, &r.ConnectionID, &r.Stream, &r.ID, &r.EmittedAt)
		}
		var data string
		if err := rows.Scan(&r.RID, &r.ConnectionID, &r.Stream, &r.ID, &r.EmittedAt, &data); err != nil {
			return r, err
		}
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&r.Data); err != nil {
			return r, fmt.Errorf("decode record %s: %w", r.ID, err)
		}
		return r, nil
	})
}

// FieldScore is a record row, one of its fields and that field's score, lower is better
// (for an FTS5 match, its bm25).
type FieldScore struct {
	RID   int64
	Field string
	Score float64
}

// LexicalMatch runs an FTS5 query requiring every term (terms are quoted, so FTS5 syntax in
// user text has no effect) and returns every matching (record, field) row.
func (s *Store) LexicalMatch(ctx context.Context, terms []string) ([]FieldScore, error) {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return query(ctx, s.db, "lexical match", `SELECT rid, field, bm25(record_fts) FROM record_fts WHERE record_fts MATCH ? ORDER BY rid, field`,
		[]any{strings.Join(quoted, " ")}, func(rows *sql.Rows) (r FieldScore, err error) { err = rows.Scan(&r.RID, &r.Field, &r.Score); return })
}

// SemanticRow is one record field sharing at least one token with a semantic query.
type SemanticRow struct {
	RID   int64
	Field string
	// Matched is how many distinct query tokens occur in the field.
	Matched int
	// Occurrences is how many times query tokens occur in the field.
	Occurrences int
	// Tokens is the field's token count.
	Tokens int
}

// SemanticOverlap returns, for every semantic field sharing a token with the distinct
// query terms, the overlap counts, ordered by record row and field.
func (s *Store) SemanticOverlap(terms []string) []SemanticRow {
	var out []SemanticRow
	for rid, fields := range s.sem {
		for field, counts := range fields {
			row := SemanticRow{RID: rid, Field: field}
			for _, c := range counts {
				row.Tokens += c
			}
			for _, t := range terms {
				if c := counts[t]; c > 0 {
					row.Matched++
					row.Occurrences += c
				}
			}
			if row.Matched > 0 {
				out = append(out, row)
			}
		}
	}
	slices.SortFunc(out, func(a, b SemanticRow) int { return cmp.Or(cmp.Compare(a.RID, b.RID), cmp.Compare(a.Field, b.Field)) })
	return out
}

// SemanticVocabulary is the number of distinct tokens in the semantic index: the dimension
// of the token-overlap scorer's bag-of-words space.
func (s *Store) SemanticVocabulary() int {
	seen := map[string]bool{}
	for _, fields := range s.sem {
		for _, counts := range fields {
			for t := range counts {
				seen[t] = true
			}
		}
	}
	return len(seen)
}

// Blob is one stored attachment.
type Blob struct {
	ID, MediaType, Filename, SHA256 string
	Bytes                           []byte
}

// BlobRef names a record field that references a blob.
type BlobRef struct {
	ConnectionID, Stream, RecordID, Field string
}

// Blob returns a blob and the record fields referencing it.
func (s *Store) Blob(ctx context.Context, id string) (Blob, []BlobRef, bool, error) {
	var b Blob
	err := s.db.QueryRowContext(ctx, `SELECT blob_id, media_type, filename, sha256, bytes FROM blobs WHERE blob_id = ?`, id).
		Scan(&b.ID, &b.MediaType, &b.Filename, &b.SHA256, &b.Bytes)
	if errors.Is(err, sql.ErrNoRows) {
		return Blob{}, nil, false, nil
	}
	if err != nil {
		return Blob{}, nil, false, fmt.Errorf("store: blob: %w", err)
	}
	refs, err := query(ctx, s.db, "blob refs", `SELECT connection_id, stream, record_id, field FROM blob_refs WHERE blob_id = ? ORDER BY connection_id, stream, record_id`,
		[]any{id}, func(rows *sql.Rows) (r BlobRef, err error) {
			err = rows.Scan(&r.ConnectionID, &r.Stream, &r.RecordID, &r.Field)
			return
		})
	if err != nil {
		return Blob{}, nil, false, err
	}
	return b, refs, true, nil
}
