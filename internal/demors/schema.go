package demors

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

var aggregateRoles = []string{"count_distinct", "group_by", "group_by_time", "max", "min", "sum"}

// capFlag is one {declared, usable[, reason]} capability object.
func capFlag(declared, granted bool) object {
	o := obj("declared", declared, "usable", declared && granted)
	if declared && !granted {
		o = o.set("reason", "field_not_granted")
	}
	return o
}

// fieldCapability is the full capability object of one field under a grant.
func fieldCapability(f store.Field, granted bool) object {
	o := object{}
	if f.PDPPType != "" {
		o = o.set("type", f.PDPPType)
	}
	if f.Role != "" {
		o = o.set("role", f.Role)
	}
	agg := object{}
	for _, role := range aggregateRoles {
		agg = agg.set(role, capFlag(f.HasAggregation(role), granted))
	}
	rng := capFlag(len(f.RangeOps) > 0, granted)
	if len(f.RangeOps) > 0 {
		rng = rng.set("operators", f.RangeOps)
	}
	return append(o,
		member{"aggregation", agg},
		member{"granted", granted},
		member{"lexical_search", capFlag(f.Lexical, granted)},
		member{"schema", f.JSONSchema()},
		member{"semantic_search", capFlag(f.Semantic, granted)},
		member{"exact_filter", capFlag(f.Scalar(), granted)},
		member{"range_filter", rng},
	)
}

// compactFlags is the compact-view capability string of one field: comma-separated
// tokens t=<type>, role=<role>, g=false, eq, r=<ops>, lex, sem, a=<aggregates>, or
// "declared" when none apply.
func compactFlags(f store.Field, granted bool) string {
	flags := []string{"t=" + cmp.Or(f.PDPPType, f.JSONType)}
	if f.Role != "" {
		flags = append(flags, "role="+f.Role)
	}
	if !granted {
		flags = append(flags, "g=false")
		return strings.Join(flags, ",")
	}
	var aggs []string
	for _, role := range aggregateRoles {
		if f.HasAggregation(role) {
			aggs = append(aggs, role)
		}
	}
	for _, fl := range []struct {
		on   bool
		flag string
	}{{f.Scalar(), "eq"}, {len(f.RangeOps) > 0, "r=" + strings.Join(f.RangeOps, "|")}, {f.Lexical, "lex"}, {f.Semantic, "sem"}, {len(aggs) > 0, "a=" + strings.Join(aggs, "|")}} {
		if fl.on {
			flags = append(flags, fl.flag)
		}
	}
	return strings.Join(flags, ",")
}

// expandCapabilities lists the stream's relations and whether the grant can follow them
// under the connection.
func (s *Server) expandCapabilities(g *grant, st *store.Stream, connectionID string) []object {
	out := []object{}
	for _, rel := range st.Relationships {
		granted := g.allows(connectionID, rel.Target)
		o := obj(
			"name", rel.Name,
			"relation", rel.Name,
			"stream", rel.Target,
			"target_stream", rel.Target,
			"cardinality", rel.Cardinality,
			"child_parent_key_field", rel.ForeignKey,
			"foreign_key", rel.ForeignKey,
			"granted", granted,
			"usable", granted,
		)
		if !granted {
			o = o.set("reason", "related_stream_not_granted")
		}
		out = append(out, o)
	}
	return out
}

// queryDeclarations is the stream's query block: range filters, aggregations, expand.
func queryDeclarations(st *store.Stream) object {
	ranges := object{}
	aggs := obj("count", true)
	byRole := map[string][]string{}
	for _, f := range st.Fields {
		if len(f.RangeOps) > 0 {
			ranges = ranges.set(f.Name, f.RangeOps)
		}
		for _, role := range f.Aggregations {
			byRole[role] = append(byRole[role], f.Name)
		}
	}
	for _, role := range []string{"sum", "min", "max", "group_by", "group_by_time", "count_distinct"} {
		if len(byRole[role]) > 0 {
			aggs = aggs.set(role, byRole[role])
		}
	}
	var expand []object
	for _, rel := range st.Relationships {
		expand = append(expand, obj("name", rel.Name))
	}
	q := obj("range_filters", ranges, "aggregations", aggs)
	if expand != nil {
		q = q.set("expand", expand)
	}
	return q
}

func relationships(st *store.Stream) []object {
	out := []object{}
	for _, rel := range st.Relationships {
		out = append(out, obj("name", rel.Name, "stream", rel.Target, "cardinality", rel.Cardinality,
			"foreign_key", rel.ForeignKey, "references", rel.References))
	}
	return out
}

func streamJSONSchema(st *store.Stream) object {
	props := object{}
	for _, f := range st.Fields {
		props = props.set(f.Name, f.JSONSchema())
	}
	return obj("additionalProperties", false, "properties", props, "required", st.PrimaryKey, "type", "object")
}

// freshnessAt is the freshness object of data last captured at last ("": unknown).
func freshnessAt(last string) object {
	if last == "" {
		return obj("status", "unknown")
	}
	return obj("status", "unknown", "captured_at", last)
}

// streamMetadata is the full stream_metadata object for the given connections.
func (s *Server) streamMetadata(ctx context.Context, g *grant, st *store.Stream, conns []string) (object, error) {
	caps := object{}
	for _, f := range st.Fields {
		caps = caps.set(f.Name, fieldCapability(f, g.fieldGranted(conns[0], st.Name, f.Name)))
	}
	last := "" // the latest emitted_at across the connections
	for _, c := range conns {
		_, l, err := s.store.StreamStats(ctx, c, st.Name)
		if err != nil {
			return nil, err
		}
		last = max(last, l)
	}
	return obj(
		"expand_capabilities", s.expandCapabilities(g, st, conns[0]),
		"field_capabilities", caps,
		"freshness", freshnessAt(last),
		"name", st.Name,
		"object", "stream_metadata",
		"primary_key", st.PrimaryKey,
		"cursor_field", st.CursorField,
		"consent_time_field", st.CursorField,
		"query", queryDeclarations(st),
		"relationships", relationships(st),
		"schema", streamJSONSchema(st),
		"views", []object{},
		"instance_ids", conns,
		"granted_connections", s.connectionRefs(conns),
	), nil
}

// compactStream is a stream's compact-view entry, with granted_connections only when it
// differs from the connector-level set.
func (s *Server) compactStream(g *grant, st *store.Stream, conns, shared []string) object {
	caps := object{}
	for _, f := range st.Fields {
		caps = caps.set(f.Name, compactFlags(f, g.fieldGranted(conns[0], st.Name, f.Name)))
	}
	o := obj("name", st.Name, "primary_key", st.PrimaryKey)
	if !slices.Equal(conns, shared) {
		o = o.set("granted_connections", s.connectionRefs(conns))
	}
	return append(o,
		member{"field_capabilities", caps},
		member{"expand_capabilities", s.expandCapabilities(g, st, conns[0])},
	)
}

func (s api) GetSchema(ctx context.Context, req rsserver.GetSchemaRequestObject) (rsserver.GetSchemaResponseObject, error) {
	rc, p := reqCtxFrom(ctx), req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	if err := s.checkConnection(rc, connID); err != nil {
		return nil, err
	}
	streamFilter := ""
	if p.Stream != nil {
		streamFilter = *p.Stream
		if _, err := s.resolveStream(rc, streamFilter, connID); err != nil {
			return nil, err
		}
	}
	compact := val(p.View) == "compact"
	connectors := []object{}
	streamCount := 0
	for ci := range s.cat.Connectors {
		ctr := &s.cat.Connectors[ci]
		type entry struct {
			st    *store.Stream
			conns []string
		}
		var entries []entry
		for si := range ctr.Streams {
			st := &ctr.Streams[si]
			if streamFilter != "" && st.Name != streamFilter {
				continue
			}
			conns := rc.grant.connectionsFor(s.cat, st.Name)
			if connID != "" {
				conns = slices.DeleteFunc(conns, func(c string) bool { return c != connID })
			}
			if len(conns) > 0 {
				entries = append(entries, entry{st, conns})
			}
		}
		if len(entries) == 0 {
			continue
		}
		// The connector-level set is the most common per-stream set (the first of equals).
		count := func(e entry) int {
			return len(slices.DeleteFunc(slices.Clone(entries), func(o entry) bool { return !slices.Equal(o.conns, e.conns) }))
		}
		shared := slices.MaxFunc(entries, func(a, b entry) int { return cmp.Compare(count(a), count(b)) }).conns
		streams := make([]object, 0, len(entries))
		for _, e := range entries {
			if compact {
				streams = append(streams, s.compactStream(rc.grant, e.st, e.conns, shared))
				continue
			}
			md, err := s.streamMetadata(ctx, rc.grant, e.st, e.conns)
			if err != nil {
				return nil, err
			}
			streams = append(streams, md)
		}
		streamCount += len(streams)
		c := obj(
			"object", "connector",
			"source", obj("id", ctr.SourceID, "kind", "connector"),
			"stream_count", len(streams),
			"streams", streams,
			"connector_key", ctr.ID,
			"connector_id", ctr.ID,
		)
		if compact {
			c = c.set("granted_connections", s.connectionRefs(shared))
		}
		connectors = append(connectors, c)
	}
	bearer := obj("scope", "owner", "token_kind", "owner")
	if !rc.grant.owner {
		bearer = obj("scope", "grant", "token_kind", "client", "grant_id", rc.grant.grantID, "client_id", rc.grant.clientID)
	}
	body := obj("bearer", bearer, "connectors", connectors, "object", "schema")
	if compact {
		body = body.set("detail", "compact")
	}
	body = append(body,
		member{"connector_count", len(connectors)},
		member{"stream_count", streamCount},
		member{"links", obj("self", rc.selfLink())},
		member{"meta", meta(warnings)},
	)
	return jsonReply(200, body), nil
}

func (s api) ListStreams(ctx context.Context, req rsserver.ListStreamsRequestObject) (rsserver.ListStreamsResponseObject, error) {
	rc, p := reqCtxFrom(ctx), req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	if err := s.checkConnection(rc, connID); err != nil {
		return nil, err
	}
	data := []object{}
	for t := range s.grantedTargets(rc.grant, connID) {
		n, last, err := s.store.StreamStats(ctx, t.conn, t.stream.Name)
		if err != nil {
			return nil, err
		}
		item := s.withDisplayName(obj("last_updated", nullable(last), "name", t.stream.Name, "object", "stream", "record_count", n,
			"connection_id", t.conn, "connector_instance_id", t.conn), t.conn)
		item = append(item, member{"connector_id", t.connector.ID}, member{"freshness", freshnessAt(last)})
		data = append(data, item)
	}
	return jsonReply(200, obj(
		"data", data,
		"has_more", false,
		"object", "list",
		"links", obj("self", rc.selfLink(), "next", nil),
		"meta", meta(warnings),
	)), nil
}

func (s api) GetStreamMetadata(ctx context.Context, req rsserver.GetStreamMetadataRequestObject) (rsserver.GetStreamMetadataResponseObject, error) {
	rc, stream, p := reqCtxFrom(ctx), req.Stream, req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	sc, err := s.resolveStream(rc, stream, connID)
	if err != nil {
		return nil, err
	}
	md, err := s.streamMetadata(ctx, rc.grant, sc.stream, sc.conns)
	if err != nil {
		return nil, err
	}
	md = append(md, member{"links", obj("self", rc.selfLink())}, member{"meta", meta(warnings)})
	return jsonReply(200, md), nil
}

// nullable maps "" to JSON null.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
