package snapshot

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/textnorm"
)

// File and folder names inside a built snapshot directory.
const (
	DBFile    = "snapshot.sqlite3"
	AssetsDir = "assets"
)

// PreviewChars is the longest summary_preview, in characters.
const PreviewChars = 320

// unknown is how a snapshot stores a missing text value.
const unknown = "unknown"

// Summary is one template's summary of a paper.
type Summary struct {
	Template string // template tag, e.g. "deep_read"
	Markdown string // the summary text
}

// Paper is one paper to write. Empty Year, Month and Venue are stored as
// "unknown"; an empty DOI as NULL; an empty Source as a NULL source hash.
type Paper struct {
	Key          string // paper_key; the paper_id derives from it
	Title        string
	Year, Month  string
	Venue        string
	DOI          string
	Authors      []string
	Keywords     []string
	Institutions []string
	Tags         []string
	Abstract     string
	Summaries    []Summary // one per available template
	Preferred    string    // preferred_summary_template; must be one of Summaries
	Source       string    // source markdown
	Translations map[string]string
	BibTeX       string // raw entry; empty means no paper_bibtex row
}

// Options shape the written snapshot.
type Options struct {
	// Legacy writes an older snapshot: no paper.doi column and no
	// paper_bibtex table.
	Legacy bool
	// OmitAssets lists asset paths (relative to the asset root) that the
	// database refers to but that are not written, to simulate a missing
	// asset.
	OmitAssets []string
	// RawAssets replaces the content of asset paths, e.g. to write a
	// summary that is not JSON.
	RawAssets map[string]string
}

// Snapshot is a written snapshot.
type Snapshot struct {
	Dir       string // the directory holding both
	DBPath    string // the SQLite database
	AssetsDir string // the asset root
	Papers    int
}

// PaperID derives a paper_id from a paper_key: the first 32 hex characters
// of sha256("v1|" + key).
func PaperID(key string) string {
	sum := sha256.Sum256([]byte("v1|" + key))
	return hex.EncodeToString(sum[:])[:32]
}

// ContentHash is the content hash naming a markdown asset.
func ContentHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// fileURI is path as a SQLite file: URI, with the characters that URIs
// reserve percent-encoded.
func fileURI(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return "file://" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(p)
}

// summaryDoc is the JSON of a summary asset.
type summaryDoc struct {
	PaperTitle       string   `json:"paper_title"`
	PaperAuthors     []string `json:"paper_authors"`
	PublicationYear  string   `json:"publication_year"`
	PublicationVenue string   `json:"publication_venue"`
	Abstract         string   `json:"abstract"`
	Keywords         []string `json:"keywords"`
	TemplateTag      string   `json:"template_tag"`
	Summary          string   `json:"summary"`
}

// SummaryJSON is the exact content written for one template's summary.
func SummaryJSON(p Paper, template string) (string, error) {
	i := slices.IndexFunc(p.Summaries, func(s Summary) bool { return s.Template == template })
	if i < 0 {
		return "", fmt.Errorf("paper %q has no template %q", p.Key, template)
	}
	doc := summaryDoc{
		PaperTitle:       p.Title,
		PaperAuthors:     append([]string{}, p.Authors...), // [] when none
		PublicationYear:  orUnknown(p.Year),
		PublicationVenue: orUnknown(p.Venue),
		Abstract:         p.Abstract,
		Keywords:         append([]string{}, p.Keywords...),
		TemplateTag:      template,
		Summary:          p.Summaries[i].Markdown,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

func orUnknown(s string) string {
	if strings.TrimSpace(s) == "" {
		return unknown
	}
	return s
}

// Build writes papers as a snapshot into dir (created if needed; it must
// not already hold a snapshot database).
func Build(dir string, papers []Paper, opt Options) (*Snapshot, error) {
	snap := &Snapshot{Dir: dir, DBPath: filepath.Join(dir, DBFile), AssetsDir: filepath.Join(dir, AssetsDir), Papers: len(papers)}
	if err := os.MkdirAll(snap.AssetsDir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(snap.DBPath); err == nil {
		return nil, fmt.Errorf("snapshot: %s already exists", snap.DBPath)
	}
	db, err := sql.Open("sqlite", fileURI(snap.DBPath)+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	w := &writer{db: db, opt: opt, assets: snap.AssetsDir, facetIDs: map[[2]string]int64{}}
	err = w.write(papers)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return snap, nil
}

// writer keeps the first failure of its steps in err; every step after it
// does nothing, so a paper's steps run in a row and err is checked once.
type writer struct {
	db       *sql.DB
	tx       *sql.Tx
	opt      Options
	assets   string
	facetIDs map[[2]string]int64 // (facet, value) -> id
	written  map[string]bool     // asset paths already written
	err      error
}

func (w *writer) write(papers []Paper) error {
	ctx := context.Background()
	ddl := fmt.Sprintf(schemaSQL, "doi TEXT,") + bibtexSQL
	if w.opt.Legacy {
		ddl = fmt.Sprintf(schemaSQL, "")
	}
	for _, f := range Facets {
		ddl += fmt.Sprintf(facetSQL, f)
	}
	if _, err := w.db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w.tx = tx
	w.written = map[string]bool{}
	seen := map[string]bool{}
	for i, p := range papers {
		id := PaperID(p.Key)
		if seen[id] {
			return fmt.Errorf("paper %d: duplicate key %q", i, p.Key)
		}
		seen[id] = true
		if err := w.paper(i, id, p); err != nil {
			return fmt.Errorf("paper %q: %w", p.Key, err)
		}
	}
	for path, content := range w.opt.RawAssets {
		if !w.written[path] {
			w.asset(path, content)
		}
	}
	w.finish(len(papers))
	if w.err != nil {
		return w.err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = w.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// exec runs one statement in the transaction.
func (w *writer) exec(q string, args ...any) sql.Result {
	if w.err != nil {
		return nil
	}
	res, err := w.tx.ExecContext(context.Background(), q, args...)
	w.err = err
	return res
}

func (w *writer) paper(index int, id string, p Paper) error {
	if strings.TrimSpace(p.Key) == "" || strings.TrimSpace(p.Title) == "" {
		return errors.New("key and title are required")
	}
	if len(p.Summaries) == 0 {
		return errors.New("at least one summary is required")
	}
	var preferredMD string
	if i := slices.IndexFunc(p.Summaries, func(s Summary) bool { return s.Template == p.Preferred }); i >= 0 {
		preferredMD = p.Summaries[i].Markdown
	}
	if preferredMD == "" {
		return fmt.Errorf("preferred template %q has no summary", p.Preferred)
	}
	var sourceHash any
	if p.Source != "" {
		h := ContentHash(p.Source)
		sourceHash = h
		w.asset(assets.SourcePath(h), p.Source)
	}
	year, month := orUnknown(p.Year), orUnknown(p.Month)
	date := unknown
	if year != unknown {
		date = year
		if month != unknown {
			date += "-" + month
		}
	}
	cols := "paper_id, paper_key, paper_key_type, title, year, month, publication_date, venue, preferred_summary_template, summary_preview, paper_index, source_md_content_hash"
	args := []any{id, p.Key, "title", p.Title, year, month, date, orUnknown(p.Venue), p.Preferred, Preview(preferredMD), index + 1, sourceHash}
	if !w.opt.Legacy {
		cols += ", doi"
		var doi any
		if p.DOI != "" {
			doi = p.DOI
		}
		args = append(args, doi)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")
	w.exec("INSERT INTO paper ("+cols+") VALUES ("+marks+")", args...)
	w.exec("INSERT INTO paper_key_alias (paper_key, paper_id, paper_key_type) VALUES (?, ?, 'title')", p.Key, id)
	for _, s := range p.Summaries {
		w.exec("INSERT INTO paper_summary (paper_id, template_tag) VALUES (?, ?)", id, s.Template)
		doc, err := SummaryJSON(p, s.Template)
		if err != nil {
			return err
		}
		w.asset(assets.TemplateSummaryPath(id, s.Template), doc)
		if s.Template == p.Preferred {
			w.asset(assets.PreferredSummaryPath(id), doc)
		}
	}
	var translated []string
	for _, lang := range slices.Sorted(maps.Keys(p.Translations)) {
		md := p.Translations[lang]
		h := ContentHash(md)
		w.exec("INSERT INTO paper_translation (paper_id, lang, md_content_hash) VALUES (?, ?, ?)", id, strings.ToLower(lang), h)
		w.asset(assets.TranslationPath(strings.ToLower(lang), h), md)
		translated = append(translated, PlainText(md))
	}
	if p.BibTeX != "" && !w.opt.Legacy {
		w.exec("INSERT INTO paper_bibtex (paper_id, bibtex_raw, bibtex_key, entry_type) VALUES (?, ?, ?, ?)",
			id, p.BibTeX, bibKey(p.BibTeX), bibType(p.BibTeX))
	}
	facetValues := map[string][]string{
		"author": p.Authors, "keyword": p.Keywords, "institution": p.Institutions, "tag": p.Tags, "venue": {p.Venue},
	}
	for _, f := range Facets {
		for _, v := range facetValues[f] {
			w.facet(f, id, v)
		}
	}
	metadata := strings.Join([]string{
		p.Title, strings.Join(p.Authors, " "), p.Venue, strings.Join(p.Keywords, " "),
		strings.Join(p.Institutions, " "), year, p.DOI,
	}, " ")
	summaryText := PlainText(p.Abstract + "\n" + preferredMD)
	w.exec("INSERT INTO paper_fts (paper_id, title, summary, source, translated, metadata) VALUES (?, ?, ?, ?, ?, ?)",
		id,
		textnorm.SpaceCJK(p.Title),
		textnorm.SpaceCJK(summaryText),
		textnorm.SpaceCJK(PlainText(p.Source)),
		textnorm.SpaceCJK(strings.Join(translated, " ")),
		textnorm.SpaceCJK(textnorm.CollapseSpace(metadata)))
	return w.err
}

// facet links paper id to the normalized value of facet f, creating the
// value on first use. Empty and "unknown" values are not facets.
func (w *writer) facet(f, paperID, raw string) {
	v := textnorm.FacetValue(raw)
	if v == "" || v == unknown {
		return
	}
	id, ok := w.facetIDs[[2]string{f, v}]
	if !ok {
		res := w.exec(fmt.Sprintf("INSERT INTO %s (value) VALUES (?)", f), v)
		if w.err != nil {
			return
		}
		if id, w.err = res.LastInsertId(); w.err != nil {
			return
		}
		w.facetIDs[[2]string{f, v}] = id
	}
	w.exec(fmt.Sprintf("INSERT OR IGNORE INTO paper_%[1]s (paper_id, %[1]s_id) VALUES (?, ?)", f), paperID, id)
}

// finish fills the precomputed counts and the snapshot metadata.
func (w *writer) finish(papers int) {
	for _, f := range Facets {
		w.exec(fmt.Sprintf("UPDATE %[1]s SET paper_count = (SELECT count(*) FROM paper_%[1]s WHERE paper_%[1]s.%[1]s_id = %[1]s.%[1]s_id)", f))
	}
	w.exec("INSERT INTO year_count (year, paper_count) SELECT year, count(*) FROM paper GROUP BY year")
	w.exec("INSERT INTO month_count (month, paper_count) SELECT month, count(*) FROM paper GROUP BY month")
	meta := [][2]string{{"schema_version", "1"}, {"builder", "pdpp-mcp internal/papers/snapshot"}, {"paper_count", fmt.Sprint(papers)}}
	if w.opt.Legacy {
		meta[0][1] = "0"
	}
	for _, kv := range meta {
		w.exec("INSERT INTO snapshot_meta (key, value) VALUES (?, ?)", kv[0], kv[1])
	}
}

// asset writes one asset file unless Options omit or replace it.
func (w *writer) asset(rel, content string) {
	if w.err != nil || w.written[rel] {
		return
	}
	w.written[rel] = true
	if slices.Contains(w.opt.OmitAssets, rel) {
		return
	}
	if raw, ok := w.opt.RawAssets[rel]; ok {
		content = raw
	}
	path := filepath.Join(w.assets, filepath.FromSlash(rel))
	if w.err = os.MkdirAll(filepath.Dir(path), 0o755); w.err == nil {
		w.err = os.WriteFile(path, []byte(content), 0o644)
	}
}

// Preview is the summary_preview of a summary: its plain text, cut to
// PreviewChars characters ending in "…" when longer.
func Preview(markdown string) string {
	text := PlainText(markdown)
	if utf8.RuneCountInString(text) <= PreviewChars {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:PreviewChars-1])) + "…"
}

// PlainText drops the markdown markers of headings, emphasis, code, quotes
// and list items and collapses white space.
func PlainText(markdown string) string {
	var lines []string
	for _, l := range strings.Split(markdown, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimLeft(l, "#>")
		l = strings.TrimSpace(l)
		for _, p := range []string{"- ", "* ", "+ "} {
			l = strings.TrimPrefix(l, p)
		}
		lines = append(lines, l)
	}
	text := strings.NewReplacer("**", "", "__", "", "`", "", "*", "").Replace(strings.Join(lines, " "))
	return textnorm.CollapseSpace(text)
}

// bibKey and bibType read "@type{key," from a raw BibTeX entry.
func bibKey(raw string) any {
	_, rest, ok := strings.Cut(raw, "{")
	if !ok {
		return nil
	}
	key, _, _ := strings.Cut(rest, ",")
	return strings.TrimSpace(key)
}

func bibType(raw string) any {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "@") {
		return nil
	}
	t, _, ok := strings.Cut(raw[1:], "{")
	if !ok {
		return nil
	}
	return strings.ToLower(strings.TrimSpace(t))
}
