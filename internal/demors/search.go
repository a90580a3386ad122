package demors

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

const (
	defaultSearchLimit = 10
	maxSearchLimit     = 100
	snippetBefore      = 80
	snippetAfter       = 280
	openingChars       = 160
	semanticCursorTag  = "sem1."
)

// semanticStopwords are ignored by the token-overlap semantic scorer.
var semanticStopwords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "and": true, "or": true, "to": true, "in": true,
	"on": true, "for": true, "with": true, "about": true, "is": true, "are": true, "at": true, "by": true,
}

// streamTarget is one (connection, stream) pair a grant reads.
type streamTarget struct {
	conn      string
	connector *store.Connector
	stream    *store.Stream
}

// targetKey names one (connection, stream) pair.
type targetKey struct{ conn, stream string }

// searchScope is the resolved scope of one search request.
type searchScope struct {
	targets  []streamTarget // in request order; each pair once, as stream names are distinct
	filtered map[int64]bool // nil when no filter applies
	key      string         // canonical description, bound into cursors
}

// grantedTargets yields, in catalog order, each stream the grant reads under each of its
// connections, or under connID alone when given.
func (s *Server) grantedTargets(g *grant, connID string) iter.Seq[streamTarget] {
	return func(yield func(streamTarget) bool) {
		for ci := range s.cat.Connectors {
			ctr := &s.cat.Connectors[ci]
			for si := range ctr.Streams {
				for _, c := range g.connectionsFor(s.cat, ctr.Streams[si].Name) {
					if (connID == "" || c == connID) && !yield(streamTarget{c, ctr, &ctr.Streams[si]}) {
						return
					}
				}
			}
		}
	}
}

// prepareSearch does what every search mode shares: it tokenises q, resolves the granted
// streams and connections to search, and applies the page limit (with its clamp warning).
func (s *Server) prepareSearch(ctx context.Context, rc *reqCtx, q string, typedStreams *[]string, typedConn *string, limitParam *int) ([]string, *searchScope, []object, int, error) {
	tokens := store.Tokenize(q)
	if len(tokens) == 0 {
		return nil, nil, nil, 0, errInvalid("q", "q must contain at least one letter or digit")
	}
	connID, warnings := connectionParam(rc, typedConn)
	// From streams=a&streams=b, streams[]=a and comma lists.
	streams := listNames(slices.Concat(val(typedStreams), rc.query["streams[]"])...)
	sc := &searchScope{}
	var ss *streamScope // the last stream named
	if len(streams) > 0 {
		for _, name := range streams {
			var err error
			if ss, err = s.resolveStream(rc, name, connID); err != nil {
				return nil, nil, nil, 0, err
			}
			for _, c := range ss.conns {
				sc.targets = append(sc.targets, streamTarget{c, ss.connector, ss.stream})
			}
		}
	} else {
		if err := s.checkConnection(rc, connID); err != nil {
			return nil, nil, nil, 0, err
		}
		sc.targets = slices.Collect(s.grantedTargets(rc.grant, connID))
	}
	filterMap, err := rawFilters(rc)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var filters []store.Filter
	if len(filterMap) > 0 {
		if len(streams) != 1 {
			return nil, nil, nil, 0, errInvalid("streams", "filter[...] requires exactly one streams value (e.g. ?streams=transcripts&filter[language]=en).")
		}
		if filters, err = parseFilters(rc, ss.stream, rc.grant, ss.conns); err != nil {
			return nil, nil, nil, 0, err
		}
		recs, err := s.store.Scan(ctx, ss.conns, ss.stream.Name, filters)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		sc.filtered = map[int64]bool{}
		for _, r := range recs {
			sc.filtered[r.RID] = true
		}
	}
	var key strings.Builder
	fmt.Fprintf(&key, "q=%s|", q)
	for _, t := range sc.targets {
		fmt.Fprintf(&key, "%s/%s|", t.conn, t.stream.Name)
	}
	for _, f := range filters {
		fmt.Fprintf(&key, "%s:%s:%v|", f.Field, f.Op, f.Value)
	}
	sc.key = key.String()
	limit, w, err := pageLimit(limitParam, defaultSearchLimit, maxSearchLimit, "results")
	if err != nil {
		return nil, nil, nil, 0, err
	}
	return tokens, sc, append(warnings, w...), limit, nil
}

// searchCursor is the opaque search cursor: an offset bound to the query it came from.
type searchCursor struct {
	Off  int    `json:"off"`
	Snap string `json:"snap"`
}

// The search modes, indexing hit.rk and modes.
const (
	modeLexical = iota
	modeSemantic
)

// modes names each search mode and the kind of its score.
var modes = [2]struct{ name, score string }{{"lexical", "bm25"}, {"semantic", "semantic_distance"}}

// hit is one ranked search result.
type hit struct {
	rec    store.Record
	target streamTarget
	rk     [2]*ranking // by mode; nil when that mode did not match the record
	rrf    float64
}

// ranking is how one search mode matched a record.
type ranking struct {
	score   float64         // the best (lowest) field score: bm25, or semantic distance
	best    string          // the field that scored it
	matched map[string]bool // the matched fields
}

// inScope returns the target of a record row when the grant lets the search read field.
func (sc *searchScope) inScope(g *grant, rec store.Record, field string) (streamTarget, bool) {
	// A linear search: the targets are at most the catalog's (connection, stream) pairs.
	i := slices.IndexFunc(sc.targets, func(t streamTarget) bool { return t.conn == rec.ConnectionID && t.stream.Name == rec.Stream })
	if i < 0 || !g.fieldGranted(rec.ConnectionID, rec.Stream, field) || sc.filtered != nil && !sc.filtered[rec.RID] {
		return streamTarget{}, false
	}
	return sc.targets[i], true
}

// orderFields sorts field names into manifest order.
func orderFields(st *store.Stream, names map[string]bool) []string {
	var out []string
	for _, f := range st.Fields {
		if names[f.Name] {
			out = append(out, f.Name)
		}
	}
	return out
}

// hitOrder breaks score ties: newest first, then by connection, stream and id.
func hitOrder(a, b *hit) int {
	return cmp.Or(cmp.Compare(b.rec.EmittedAt, a.rec.EmittedAt), cmp.Compare(a.rec.ConnectionID, b.rec.ConnectionID),
		cmp.Compare(a.rec.Stream, b.rec.Stream), cmp.Compare(a.rec.ID, b.rec.ID))
}

// lexicalHits ranks records by their best bm25 score over granted lexical fields.
func (s *Server) lexicalHits(ctx context.Context, g *grant, sc *searchScope, terms []string) ([]*hit, error) {
	rows, err := s.store.LexicalMatch(ctx, terms)
	if err != nil {
		return nil, err
	}
	return s.rankHits(ctx, g, sc, rows, modeLexical)
}

// semanticHits ranks records by token-overlap distance over granted semantic fields:
// distance = 1 - coverage * (0.9 + 0.1 * min(1, 10 * density)), where coverage is the share
// of distinct query tokens the best field contains and density the share of that field's
// tokens that are query tokens. Records sharing no token are not returned.
func (s *Server) semanticHits(ctx context.Context, g *grant, sc *searchScope, tokens []string) ([]*hit, error) {
	distinct := map[string]bool{}
	for _, t := range tokens {
		if !semanticStopwords[t] {
			distinct[t] = true
		}
	}
	if len(distinct) == 0 {
		return nil, nil
	}
	rows := s.store.SemanticOverlap(slices.Collect(maps.Keys(distinct)))
	scores := make([]store.FieldScore, 0, len(rows))
	for _, r := range rows {
		cov := float64(r.Matched) / float64(len(distinct))
		dens := 0.0
		if r.Tokens > 0 {
			dens = float64(r.Occurrences) / float64(r.Tokens)
		}
		d := 1 - cov*(0.9+0.1*math.Min(1, 10*dens))
		scores = append(scores, store.FieldScore{RID: r.RID, Field: r.Field, Score: math.Round(d*1e6) / 1e6})
	}
	return s.rankHits(ctx, g, sc, scores, modeSemantic)
}

// rankHits turns (record, field) scores into one hit per record in scope, with its best
// (lowest) score and matched fields, best first; semantic hits count only semantic fields.
func (s *Server) rankHits(ctx context.Context, g *grant, sc *searchScope, rows []store.FieldScore, mode int) ([]*hit, error) {
	rids := make([]int64, 0, len(rows))
	for _, r := range rows {
		rids = append(rids, r.RID)
	}
	// Rank on record heads; only the page's records get their data loaded
	// (withData), so a broad query does not decode every match.
	recs, err := s.store.ByRID(ctx, rids, false)
	if err != nil {
		return nil, err
	}
	byRID := map[int64]*ranking{}
	var out []*hit
	for _, r := range rows {
		rec := recs[r.RID]
		t, ok := sc.inScope(g, rec, r.Field)
		if !ok {
			continue
		}
		if fd, _ := t.stream.Field(r.Field); mode == modeSemantic && !fd.Semantic {
			continue
		}
		rk, seen := byRID[r.RID]
		switch {
		case !seen:
			rk = &ranking{score: r.Score, best: r.Field, matched: map[string]bool{}}
			h := &hit{rec: rec, target: t}
			h.rk[mode] = rk
			byRID[r.RID] = rk
			out = append(out, h)
		case r.Score < rk.score:
			rk.score, rk.best = r.Score, r.Field
		}
		rk.matched[r.Field] = true
	}
	slices.SortStableFunc(out, func(a, b *hit) int {
		return cmp.Or(cmp.Compare(a.rk[mode].score, b.rk[mode].score), hitOrder(a, b))
	})
	return out, nil
}

// hitBase is the identity part of a search result.
func (s *Server) hitBase(h *hit, matched []string, mode string) object {
	o := obj(
		"connector_id", h.target.connector.ID,
		"emitted_at", h.rec.EmittedAt,
		"matched_fields", matched,
		"object", "search_result",
		"record_key", h.rec.ID,
		"record_url", "/v1/streams/"+h.rec.Stream+"/records/"+h.rec.ID,
	)
	if mode != "" {
		o = o.set("retrieval_mode", mode)
	}
	o = o.set("stream", h.rec.Stream)
	if at, ok := h.rec.Data[h.target.stream.CursorField].(string); ok {
		o = o.set("authored_at", at)
	}
	return s.withDisplayName(append(o, member{"connection_id", h.rec.ConnectionID}, member{"connector_instance_id", h.rec.ConnectionID}), h.rec.ConnectionID)
}

// withLexicalEvidence adds to o a lexical hit's snippet and proven evidence excerpts. A match
// in the declared primary title (role primary-title) is identity: it gets a snippet but no
// field-window excerpt.
func withLexicalEvidence(o object, h *hit, terms map[string]bool) object {
	var snippet object
	var excerpts []object
	for _, name := range orderFields(h.target.stream, h.rk[modeLexical].matched) {
		text, _ := h.rec.Data[name].(string)
		runes := []rune(text)
		spans := termSpans(runes, terms)
		if len(spans) == 0 {
			continue
		}
		preview, truncated := markedExcerpt(runes, spans, snippetBefore, snippetAfter)
		fd, _ := h.target.stream.Field(name)
		proven := fd.Role != "primary-title"
		if snippet == nil || (proven && len(excerpts) == 0) {
			snippet = obj("field", name, "text", preview)
		}
		if !proven {
			continue
		}
		excerpts = append(excerpts, obj(
			"field_path", name,
			"object", "evidence_excerpt",
			"preview_text", preview,
			"provenance", "lexical_match",
			"read", obj(
				"field", name,
				"method", "GET",
				"object", "field_window_read",
				"record_id", h.rec.ID,
				"route", "/v1/streams/"+h.rec.Stream+"/records/"+h.rec.ID+"/field-window",
				"stream", h.rec.Stream,
				"connection_id", h.rec.ConnectionID,
			),
			"truncated", truncated,
		))
	}
	if snippet != nil {
		o = o.set("snippet", snippet)
	}
	if len(excerpts) > 0 {
		o = o.set("evidence_excerpts", excerpts)
	}
	return o
}

// scoreObject is a lower-is-better score of the kind bm25 or semantic_distance.
func scoreObject(kind string, v float64) object {
	return obj("kind", kind, "order", "lower_is_better", "value", v)
}

// semanticSnippet is the opening of the hit's best semantic field (no match markers: the
// token-overlap scorer proves no particular passage).
func semanticSnippet(h *hit) object {
	best := h.rk[modeSemantic].best
	text, _ := h.rec.Data[best].(string)
	return obj("field", best, "text", opening([]rune(text), openingChars))
}

func (s api) SearchRecordsLexical(ctx context.Context, req rsserver.SearchRecordsLexicalRequestObject) (rsserver.SearchRecordsLexicalResponseObject, error) {
	p := req.Params
	return s.rankedSearch(ctx, reqCtxFrom(ctx), modeLexical, p.Q, p.Streams, p.ConnectionId, p.Limit, p.Cursor)
}

func (s api) SearchRecordsSemantic(ctx context.Context, req rsserver.SearchRecordsSemanticRequestObject) (rsserver.SearchRecordsSemanticResponseObject, error) {
	p := req.Params
	return s.rankedSearch(ctx, reqCtxFrom(ctx), modeSemantic, p.Q, p.Streams, p.ConnectionId, p.Limit, p.Cursor)
}

// rankedSearch answers a lexical or a semantic search: one ranking, paged by an offset
// cursor bound to the query and the mode.
func (s *Server) rankedSearch(ctx context.Context, rc *reqCtx, mode int, q string, streams *[]string, conn *string, limitParam *int, cursor *string) (*reply, error) {
	tokens, sc, warnings, limit, err := s.prepareSearch(ctx, rc, q, streams, conn, limitParam)
	if err != nil {
		return nil, err
	}
	semantic := mode == modeSemantic
	tag, ranked, retrieval := "", s.lexicalHits, ""
	if semantic {
		tag, ranked, retrieval = semanticCursorTag, s.semanticHits, "semantic"
	}
	sum := sha256.Sum256([]byte(modes[mode].name + "\x00" + sc.key))
	snap := "snap_" + hex.EncodeToString(sum[:8])
	var cur searchCursor
	if raw := val(cursor); raw != "" {
		token, ok := strings.CutPrefix(raw, tag)
		if !ok || !decodeToken(token, &cur) || cur.Snap != snap || cur.Off < 0 {
			return nil, errInvalidCursor()
		}
	}
	off := cur.Off
	hits, err := ranked(ctx, rc.grant, sc, tokens)
	if err != nil {
		return nil, err
	}
	terms := foldedTerms(tokens)
	page, more := pageOf(hits, off, limit)
	if err := s.withData(ctx, page); err != nil {
		return nil, err
	}
	data := make([]object, 0, len(page))
	for _, h := range page {
		rk := h.rk[mode]
		o := s.hitBase(h, orderFields(h.target.stream, rk.matched), retrieval)
		if semantic {
			o = o.set("snippet", semanticSnippet(h))
		} else {
			o = withLexicalEvidence(o, h, terms)
		}
		data = append(data, o.set("score", scoreObject(modes[mode].score, rk.score)))
	}
	body := obj("has_more", more, "object", "list", "url", rc.path)
	next := any(nil)
	if more {
		cursor := tag + encodeToken(base64.RawURLEncoding, searchCursor{Off: off + limit, Snap: snap})
		body = body.set("next_cursor", cursor)
		next = rc.linkWith("cursor", cursor)
	}
	body = append(body, member{"data", data})
	links := member{"links", obj("self", rc.selfLink(), "next", next)}
	if semantic {
		return jsonReply(200, append(body, links, member{"meta", meta(warnings)})), nil
	}
	sources := map[string]bool{}
	for _, t := range sc.targets {
		sources[t.conn] = true
	}
	if warnings == nil {
		warnings = []object{}
	}
	return jsonReply(200, append(body,
		member{"meta", obj(
			"count", len(hits),
			"count_accuracy", "exact",
			"recall", obj("complete", true, "ranked_candidate_count", len(hits), "ranking_scope", "all_matches",
				"sources_searched_count", len(sources), "truncated", false),
			"warnings", warnings,
		)},
		links,
	)), nil
}

// rrfK is the reciprocal-rank-fusion constant of hybrid search.
const rrfK = 60

func (s api) SearchRecordsHybrid(ctx context.Context, req rsserver.SearchRecordsHybridRequestObject) (rsserver.SearchRecordsHybridResponseObject, error) {
	rc, p := reqCtxFrom(ctx), req.Params
	tokens, sc, warnings, limit, err := s.prepareSearch(ctx, rc, p.Q, p.Streams, p.ConnectionId, p.Limit)
	if err != nil {
		return nil, err
	}
	merged := map[int64]*hit{}
	var all []*hit
	for mode, ranked := range []func(context.Context, *grant, *searchScope, []string) ([]*hit, error){s.lexicalHits, s.semanticHits} {
		hits, err := ranked(ctx, rc.grant, sc, tokens)
		if err != nil {
			return nil, err
		}
		for i, h := range hits {
			m, ok := merged[h.rec.RID]
			if ok {
				m.rk[mode] = h.rk[mode]
			} else {
				m, merged[h.rec.RID] = h, h
				all = append(all, h)
			}
			m.rrf += 1 / float64(rrfK+i+1)
		}
	}
	slices.SortStableFunc(all, func(a, b *hit) int { return cmp.Or(cmp.Compare(b.rrf, a.rrf), hitOrder(a, b)) })
	terms := foldedTerms(tokens)
	page, more := pageOf(all, 0, limit)
	if err := s.withData(ctx, page); err != nil {
		return nil, err
	}
	data := make([]object, 0, len(page))
	for _, h := range page {
		matched := map[string]bool{}
		var sources []string
		scores := object{}
		for mode, rk := range h.rk {
			if rk != nil {
				sources = append(sources, modes[mode].name)
				scores = scores.set(modes[mode].name, scoreObject(modes[mode].score, rk.score))
				maps.Copy(matched, rk.matched)
			}
		}
		o := s.hitBase(h, orderFields(h.target.stream, matched), "hybrid")
		o = o.set("retrieval_sources", sources)
		if h.rk[modeLexical] != nil {
			o = withLexicalEvidence(o, h, terms)
		} else {
			o = o.set("snippet", semanticSnippet(h))
		}
		data = append(data, o.set("scores", scores))
	}
	return jsonReply(200, obj(
		"has_more", more,
		"object", "list",
		"url", rc.path,
		"data", data,
		"links", obj("self", rc.selfLink(), "next", nil),
		"meta", meta(warnings),
	)), nil
}

// withData loads the data of the page's records, which ranking left out.
func (s *Server) withData(ctx context.Context, page []*hit) error {
	rids := make([]int64, 0, len(page))
	for _, h := range page {
		rids = append(rids, h.rec.RID)
	}
	recs, err := s.store.ByRID(ctx, rids, true)
	if err != nil {
		return err
	}
	for _, h := range page {
		h.rec.Data = recs[h.rec.RID].Data
	}
	return nil
}

// pageOf returns hits[off:off+limit] and whether more follow.
func pageOf(hits []*hit, off, limit int) ([]*hit, bool) {
	if off >= len(hits) {
		return nil, false
	}
	end := min(len(hits), off+limit)
	return hits[off:end], end < len(hits)
}
