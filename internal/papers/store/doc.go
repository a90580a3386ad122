// Package store reads a paper snapshot's SQLite database, read-only: the
// file is opened with mode=ro and every connection is query_only, so no
// statement can change it. It checks that the file is a snapshot, turns
// user queries into safe FTS5 expressions (CJK runs as spaced phrases),
// and answers full-text, keyword and facet queries and paper lookups.
package store
