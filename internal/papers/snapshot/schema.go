package snapshot

// schemaSQL creates the tables of a current snapshot. The legacy variant
// leaves out paper.doi and paper_bibtex.
const schemaSQL = `
CREATE TABLE snapshot_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE paper (
  paper_id TEXT PRIMARY KEY,
  paper_key TEXT NOT NULL,
  paper_key_type TEXT NOT NULL,
  %s
  title TEXT NOT NULL,
  year TEXT NOT NULL,
  month TEXT NOT NULL,
  publication_date TEXT NOT NULL,
  venue TEXT NOT NULL,
  preferred_summary_template TEXT NOT NULL,
  summary_preview TEXT NOT NULL,
  paper_index INTEGER NOT NULL DEFAULT 0,
  source_md_content_hash TEXT
);
CREATE INDEX idx_paper_year ON paper(year);
CREATE INDEX idx_paper_venue ON paper(venue);
CREATE TABLE paper_summary (
  paper_id TEXT NOT NULL,
  template_tag TEXT NOT NULL,
  PRIMARY KEY (paper_id, template_tag)
);
CREATE TABLE paper_translation (
  paper_id TEXT NOT NULL,
  lang TEXT NOT NULL,
  md_content_hash TEXT NOT NULL,
  PRIMARY KEY (paper_id, lang)
);
CREATE TABLE paper_key_alias (
  paper_key TEXT PRIMARY KEY,
  paper_id TEXT NOT NULL,
  paper_key_type TEXT NOT NULL,
  meta_fingerprint TEXT
);
CREATE TABLE year_count (
  year TEXT PRIMARY KEY,
  paper_count INTEGER NOT NULL
);
CREATE TABLE month_count (
  month TEXT PRIMARY KEY,
  paper_count INTEGER NOT NULL
);
CREATE VIRTUAL TABLE paper_fts USING fts5(
  paper_id UNINDEXED,
  title,
  summary,
  source,
  translated,
  metadata,
  tokenize='unicode61'
);
`

// bibtexSQL is the table only newer snapshots have.
const bibtexSQL = `
CREATE TABLE paper_bibtex (
  paper_id TEXT PRIMARY KEY,
  bibtex_raw TEXT NOT NULL,
  bibtex_key TEXT,
  entry_type TEXT
);
`

// facetSQL creates one facet table and its join table; %[1]s is the facet
// name (author, keyword, institution, tag, venue).
const facetSQL = `
CREATE TABLE %[1]s (
  %[1]s_id INTEGER PRIMARY KEY,
  value TEXT NOT NULL UNIQUE,
  paper_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE paper_%[1]s (
  paper_id TEXT NOT NULL,
  %[1]s_id INTEGER NOT NULL,
  PRIMARY KEY (paper_id, %[1]s_id)
);
CREATE INDEX idx_paper_%[1]s_%[1]s_id ON paper_%[1]s(%[1]s_id);
`

// Facets are the facet tables of a snapshot, in a fixed order.
var Facets = []string{"author", "keyword", "institution", "tag", "venue"}
