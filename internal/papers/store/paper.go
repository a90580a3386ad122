package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNotFound reports a paper_id that is not in the snapshot.
var ErrNotFound = errors.New("paper not found")

// Translation is one translated markdown of a paper.
type Translation struct {
	Lang string
	Hash string // md_content_hash
}

// Paper is everything the snapshot database knows about one paper.
type Paper struct {
	ID                string
	Title             string
	Year, Month       string
	Venue             string
	DOI               string // "" when NULL or when the snapshot has no doi column
	PreferredTemplate string
	Preview           string
	SourceHash        string // "" when the paper has no source markdown
	Templates         []string
	Translations      []Translation
	Authors           []string
	Keywords          []string
	Institutions      []string
	Tags              []string
	HasBibTeX         bool
}

// HasTemplate reports whether t is one of the paper's templates.
func (p *Paper) HasTemplate(t string) bool { return slices.Contains(p.Templates, t) }

// Translation returns the translation in lang, if any.
func (p *Paper) Translation(lang string) (Translation, bool) {
	for _, t := range p.Translations {
		if t.Lang == lang {
			return t, true
		}
	}
	return Translation{}, false
}

// Langs lists the translation languages.
func (p *Paper) Langs() []string {
	out := make([]string, len(p.Translations))
	for i, t := range p.Translations {
		out[i] = t.Lang
	}
	return out
}

// Paper loads one paper with its templates, translations and facet values
// (each in the order the snapshot stored them). A missing id gives
// ErrNotFound.
func (s *Store) Paper(ctx context.Context, id string) (*Paper, error) {
	doi := "NULL"
	if s.HasDOI {
		doi = "doi"
	}
	q := `SELECT paper_id, title, year, month, venue, preferred_summary_template, summary_preview, source_md_content_hash, ` + doi + ` FROM paper WHERE paper_id = ?`
	var p Paper
	var src, doiVal, month sql.NullString
	err := s.db.QueryRowContext(ctx, q, id).Scan(&p.ID, &p.Title, &p.Year, &month, &p.Venue, &p.PreferredTemplate, &p.Preview, &src, &doiVal)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	p.Month, p.SourceHash, p.DOI = month.String, strings.TrimSpace(src.String), strings.TrimSpace(doiVal.String)
	if p.Templates, err = s.strings(ctx, "SELECT template_tag FROM paper_summary WHERE paper_id = ? ORDER BY template_tag", id); err != nil {
		return nil, err
	}
	p.Translations, err = scanRows(ctx, s.db, "SELECT lang, md_content_hash FROM paper_translation WHERE paper_id = ? ORDER BY lang", func(rows *sql.Rows, t *Translation) error {
		err := rows.Scan(&t.Lang, &t.Hash)
		t.Lang = strings.ToLower(t.Lang)
		return err
	}, id)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		facet string
		dst   *[]string
	}{{"author", &p.Authors}, {"keyword", &p.Keywords}, {"institution", &p.Institutions}, {"tag", &p.Tags}} {
		q := fmt.Sprintf("SELECT f.value FROM paper_%[1]s pf JOIN %[1]s f ON f.%[1]s_id = pf.%[1]s_id WHERE pf.paper_id = ? ORDER BY pf.rowid", f.facet)
		if *f.dst, err = s.strings(ctx, q, id); err != nil {
			return nil, err
		}
	}
	if s.HasBibTeX {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM paper_bibtex WHERE paper_id = ?", id).Scan(&n); err != nil {
			return nil, err
		}
		p.HasBibTeX = n > 0
	}
	return &p, nil
}

func (s *Store) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	return scanRows(ctx, s.db, q, func(rows *sql.Rows, v *string) error { return rows.Scan(v) }, args...)
}

// scanRows runs q and reads each row with scan, as many as q returns (each
// query here is bounded by its LIMIT, by one paper or by the schema).
func scanRows[T any](ctx context.Context, db *sql.DB, q string, scan func(*sql.Rows, *T) error, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
