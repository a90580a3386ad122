package demors

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

const (
	defaultPageLimit = 25
	maxPageLimit     = 100
	maxExpandLimit   = 100
)

// pageCursor is the opaque records cursor (base64 JSON), shaped like the reference RS's.
type pageCursor struct {
	CursorValue string   `json:"cursor_value"`
	Kind        string   `json:"kind"`
	Order       string   `json:"order"`
	PrimaryKey  []string `json:"primary_key"`
	Session     string   `json:"session"`
	Stream      string   `json:"stream"`
}

// changesToken is the next_changes_since token (base64url JSON).
type changesToken struct {
	Kind  string `json:"kind"`
	After string `json:"after"`
	ID    string `json:"id"`
}

// parseChangesSince accepts "beginning", a next_changes_since token or an RFC 3339 time.
func parseChangesSince(raw string) (*store.Position, error) {
	if raw == "beginning" {
		return &store.Position{}, nil
	}
	var tok changesToken
	if decodeToken(raw, &tok) && tok.Kind == "changes" {
		return &store.Position{EmittedAt: tok.After, ID: tok.ID}, nil
	}
	if t, ok := normalizeTime(raw); ok {
		// After the whole instant: the highest possible id sorts after every id at that time.
		return &store.Position{EmittedAt: t, ID: "\U0010FFFF"}, nil
	}
	return nil, errInvalid("changes_since", "changes_since must be 'beginning', a next_changes_since token or an RFC 3339 timestamp")
}

// expandReq is one validated expand relation with its child limit.
type expandReq struct {
	rel   store.Relationship
	limit int
}

// parseExpand validates expand and expand_limit against the stream's relations and the grant.
func parseExpand(rc *reqCtx, expand *[]string, limits *rsserver.ExpandLimit, st *store.Stream, g *grant, conns []string) ([]expandReq, error) {
	if err := rejectBareDeepObject(rc, "expand_limit", "expand_limit[relation]=N"); err != nil {
		return nil, err
	}
	var out []expandReq
	for _, name := range listNames(val(expand)...) {
		rel, ok := st.Relationship(name)
		if !ok {
			return nil, errInvalidExpand("Unsupported expand relation '%s' on '%s'", name, st.Name)
		}
		for _, c := range conns {
			if !g.allows(c, rel.Target) {
				return nil, errInvalidExpand("Expand relation '%s' on '%s' targets stream '%s', which this grant does not cover", name, st.Name, rel.Target)
			}
		}
		out = append(out, expandReq{rel: rel, limit: 1})
	}
	for name, n := range val(limits) {
		i := slices.IndexFunc(out, func(e expandReq) bool { return e.rel.Name == name })
		if i < 0 {
			return nil, errInvalid("expand_limit", "expand_limit[%s] needs expand=%s", name, name)
		}
		if n < 1 || n > maxExpandLimit {
			return nil, errInvalid("expand_limit", "expand_limit[%s] must be between 1 and %d", name, maxExpandLimit)
		}
		out[i].limit = n
	}
	return out, nil
}

// projectData is the record body restricted to the given fields the grant shows under the
// record's connection, in that order.
func projectData(g *grant, rec store.Record, fields []string) object {
	o := make(object, 0, len(fields))
	for _, f := range fields {
		if !g.fieldGranted(rec.ConnectionID, rec.Stream, f) {
			continue
		}
		if v, ok := rec.Data[f]; ok {
			o = append(o, member{f, v})
		}
	}
	return o
}

// recordItem is one record as list items show it.
func (s *Server) recordItem(g *grant, rec store.Record, fields []string) object {
	return s.withDisplayName(obj(
		"data", projectData(g, rec, fields),
		"emitted_at", rec.EmittedAt,
		"id", rec.ID,
		"object", "record",
		"stream", rec.Stream,
		"connection_id", rec.ConnectionID,
		"connector_instance_id", rec.ConnectionID,
	), rec.ConnectionID)
}

// withExpanded adds to o, as "expanded", each requested relation followed one hop from
// rec within the same connection, related records projected to their granted fields.
func (s *Server) withExpanded(ctx context.Context, g *grant, o object, rec store.Record, reqs []expandReq) (object, error) {
	if len(reqs) == 0 {
		return o, nil
	}
	out := object{}
	for _, req := range reqs {
		target, ok := s.cat.StreamOf(rec.ConnectionID, req.rel.Target)
		if !ok {
			return nil, fmt.Errorf("relation %s targets unknown stream %s", req.rel.Name, req.rel.Target)
		}
		fields := g.grantedFields(target, rec.ConnectionID)
		key, present := rec.Data[req.rel.ForeignKey]
		var related []store.Record
		if present && key != nil {
			refField, _ := target.Field(req.rel.References)
			val, err := typedValue(refField, fmt.Sprint(key))
			if err != nil {
				return nil, err
			}
			related, err = s.store.Scan(ctx, []string{rec.ConnectionID}, target.Name,
				[]store.Filter{{Field: req.rel.References, Op: "eq", Value: val}})
			if err != nil {
				return nil, err
			}
		}
		if req.rel.Cardinality == "has_one" {
			var one any // null when nothing is related
			if len(related) > 0 {
				one = s.recordItem(g, related[0], fields)
			}
			out = append(out, member{req.rel.Name, one})
			continue
		}
		items := []object{}
		for _, r := range related[:min(len(related), req.limit)] {
			items = append(items, s.recordItem(g, r, fields))
		}
		out = append(out, member{req.rel.Name, obj("data", items, "has_more", len(related) > req.limit)})
	}
	return o.set("expanded", out), nil
}

func (s api) ListRecords(ctx context.Context, req rsserver.ListRecordsRequestObject) (rsserver.ListRecordsResponseObject, error) {
	rc, stream, p := reqCtxFrom(ctx), req.Stream, req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	sc, err := s.resolveStream(rc, stream, connID)
	if err != nil {
		return nil, err
	}
	st := sc.stream
	limit, w, err := pageLimit(p.Limit, defaultPageLimit, maxPageLimit, "records")
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, w...)
	if sort := val(p.Sort); sort != "" && sort != st.CursorField && sort != "emitted_at" {
		return nil, errInvalid("sort", "Stream '%s' sorts only by '%s'", st.Name, st.CursorField)
	}
	if val(p.View) != "" {
		return nil, errInvalid("view", "Stream '%s' declares no view named '%s'", st.Name, *p.View)
	}
	fields, err := parseFields(p.Fields, st, rc.grant, sc.conns[0])
	if err != nil {
		return nil, err
	}
	filters, err := parseFilters(rc, st, rc.grant, sc.conns)
	if err != nil {
		return nil, err
	}
	expands, err := parseExpand(rc, p.Expand, p.ExpandLimit, st, rc.grant, sc.conns)
	if err != nil {
		return nil, err
	}
	order := strings.ToLower(string(val(p.Order)))
	if p.Order != nil && order != "asc" && order != "desc" {
		return nil, errInvalid("order", "order must be asc or desc")
	}
	var changes *store.Position
	if since := val(p.ChangesSince); since != "" {
		if changes, err = parseChangesSince(since); err != nil {
			return nil, err
		}
		if order == "desc" {
			return nil, errInvalid("order", "changes_since pages oldest first; omit order or use order=asc")
		}
		order = "asc"
	}
	after := changes
	if raw := val(p.Cursor); raw != "" {
		var cur pageCursor
		if !decodeToken(raw, &cur) || cur.Kind != "page" || cur.Session != "records" || cur.Stream != st.Name ||
			(cur.Order != "ASC" && cur.Order != "DESC") || len(cur.PrimaryKey) != 1 || cur.CursorValue == "" ||
			order != "" && strings.ToUpper(order) != cur.Order {
			return nil, errInvalidCursor()
		}
		order = strings.ToLower(cur.Order)
		after = &store.Position{EmittedAt: cur.CursorValue, ID: cur.PrimaryKey[0]}
	}
	order = cmp.Or(order, "desc")
	desc := order == "desc"

	var recs []store.Record
	more := false
	for _, c := range sc.conns {
		page, m, err := s.store.List(ctx, store.ListQuery{ConnectionID: c, Stream: st.Name, Filters: filters,
			Desc: desc, After: after, Limit: limit})
		if err != nil {
			return nil, err
		}
		recs = append(recs, page...)
		more = more || m
	}
	dir := 1
	if desc {
		dir = -1
	}
	slices.SortStableFunc(recs, func(a, b store.Record) int {
		return cmp.Or(dir*cmp.Compare(a.EmittedAt, b.EmittedAt), dir*cmp.Compare(a.ID, b.ID), cmp.Compare(a.ConnectionID, b.ConnectionID))
	})
	data := make([]object, 0, len(recs))
	for _, rec := range recs {
		item, err := s.withExpanded(ctx, rc.grant, s.recordItem(rc.grant, rec, fields), rec, expands)
		if err != nil {
			return nil, err
		}
		data = append(data, item)
	}
	multi := len(sc.conns) > 1
	if multi && more {
		warnings = append(warnings, obj(
			"code", "partial_results",
			"message", "has_more=true and next_cursor is not emitted under multi-connection fan-in. Retry with `connection_id` to page a single connection.",
			"param", "connection_id",
		))
	}
	body := obj("data", data, "has_more", more, "object", "list")
	next := any(nil)
	if more && !multi {
		last := recs[len(recs)-1]
		cursor := encodeToken(base64.StdEncoding, pageCursor{
			CursorValue: last.EmittedAt, Kind: "page", Order: strings.ToUpper(order),
			PrimaryKey: []string{last.ID}, Session: "records", Stream: st.Name,
		})
		body = body.set("next_cursor", cursor)
		next = rc.linkWith("cursor", cursor)
	}
	if changes != nil && !more {
		pos := *after
		if len(recs) > 0 {
			last := recs[len(recs)-1]
			pos = store.Position{EmittedAt: last.EmittedAt, ID: last.ID}
		}
		body = body.set("next_changes_since", encodeToken(base64.RawURLEncoding, changesToken{Kind: "changes", After: pos.EmittedAt, ID: pos.ID}))
	}
	m := meta(warnings)
	if count := val(p.Count); count == "exact" || count == "estimated" {
		total, err := s.store.Count(ctx, sc.conns, st.Name, filters)
		if err != nil {
			return nil, err
		}
		m = m.set("count", obj("kind", "exact", "value", total))
	} else if count != "" && count != "none" {
		return nil, errInvalid("count", "count must be none, estimated or exact")
	}
	body = append(body,
		member{"url", rc.path},
		member{"links", obj("self", rc.selfLink(), "next", next)},
		member{"meta", m},
	)
	return jsonReply(200, body), nil
}

// locateRecord finds the record under its one granted holder: 404 when none, 409
// ambiguous_connection when several (no connection_id narrowed the choice).
func (s *Server) locateRecord(ctx context.Context, sc *streamScope, id string) (store.Record, error) {
	recs, err := s.store.Holding(ctx, sc.conns, sc.stream.Name, id)
	switch {
	case err != nil:
		return store.Record{}, err
	case len(recs) == 0:
		return store.Record{}, errNotFound("Record not found")
	case len(recs) > 1:
		holders := make([]string, len(recs))
		for i, r := range recs {
			holders[i] = r.ConnectionID
		}
		return store.Record{}, errAmbiguous(fmt.Sprintf("Record '%s' is present under more than one connection. Retry with `connection_id`.", id), s.connectionRefs(holders))
	}
	return recs[0], nil
}

func (s api) GetRecord(ctx context.Context, req rsserver.GetRecordRequestObject) (rsserver.GetRecordResponseObject, error) {
	rc, stream, id, p := reqCtxFrom(ctx), req.Stream, req.Id, req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	sc, err := s.resolveStream(rc, stream, connID)
	if err != nil {
		return nil, err
	}
	fields, err := parseFields(p.Fields, sc.stream, rc.grant, sc.conns[0])
	if err != nil {
		return nil, err
	}
	expands, err := parseExpand(rc, p.Expand, p.ExpandLimit, sc.stream, rc.grant, sc.conns)
	if err != nil {
		return nil, err
	}
	rec, err := s.locateRecord(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	data := projectData(rc.grant, rec, fields)
	raw, err := marshalJSON(data)
	if err != nil {
		return nil, err
	}
	body := s.withDisplayName(obj(
		"connector_key", sc.connector.SourceID,
		"connection_id", rec.ConnectionID,
		"data", data,
		"emitted_at", rec.EmittedAt,
		"id", rec.ID,
		"object", "record",
		"stream", rec.Stream,
		"connector_instance_id", rec.ConnectionID,
	), rec.ConnectionID)
	body, err = s.withExpanded(ctx, rc.grant, body.set("record_json_bytes", len(raw)), rec, expands)
	if err != nil {
		return nil, err
	}
	body = append(body, member{"links", obj("self", rc.selfLink())}, member{"meta", meta(warnings)})
	return jsonReply(200, body), nil
}
