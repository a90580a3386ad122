package pdpp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/events"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/query"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// optString returns nil for "", else a pointer.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// argsMap turns typed args back into the map shown in retry suggestions
// and continuations, leaving out detail when it is the default.
func argsMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["detail"] == evidence.DetailCompact {
		delete(m, "detail")
	}
	return m
}

// Schema serves `schema`: GET /v1/schema, compact unless detail=full.
func (a *Adapter) Schema(ctx context.Context, args mcptools.SchemaArgs) (*mcp.CallToolResult, error) {
	if args.Detail == "full" && args.Stream == "" {
		return errorResult(rs.AdapterError("invalid_argument", `detail "full" needs stream: name the stream whose full field schemas you want`, "detail"), "schema", argsMap(args)), nil
	}
	call := args.GetSchemaCall()
	compact := args.Detail != "full"
	if compact {
		call.Params.View = new(rsclient.GetSchemaParamsViewCompact)
	}
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.do(ctx, req, berr)
	projected := false
	if err != nil && compact && rejectsView(err) {
		// The RS does not know view=compact: read the full document and
		// project it here.
		call.Params.View = nil
		req, berr = call.NewRequest(a.rs.BaseURL())
		resp, err = a.do(ctx, req, berr)
		projected = err == nil
	}
	if err != nil {
		return errorResult(err, "schema", argsMap(args)), nil
	}
	body := resp.Body
	if projected {
		body = evidence.CompactSchema(body)
	}
	text, rerr := evidence.RenderSchema(body)
	if rerr != nil {
		return errorResult(events.BadResponse(rerr), "schema", nil), nil
	}
	if !compact {
		return a.fullReply(ctx, mcptools.ToolSchema, argsMap(args), text, struct{}{}, "data", body), nil
	}
	return budgetedData(mcptools.ToolSchema, text, body), nil
}

func rejectsView(err error) bool {
	re, ok := err.(*rs.Error)
	if !ok || re.Status != http.StatusBadRequest {
		return false
	}
	var e rsclient.ErrorObject
	_ = json.Unmarshal(re.Object(), &e)
	return e.Param == "view"
}

// QueryRecords serves `query_records`: GET /v1/streams/{stream}/records.
func (a *Adapter) QueryRecords(ctx context.Context, args mcptools.QueryRecordsArgs) (*mcp.CallToolResult, error) {
	fail := func(err error) (*mcp.CallToolResult, error) {
		return errorResult(err, "query_records", argsMap(args)), nil
	}
	filter, err := query.EncodeFilter(args.Filter)
	if err != nil {
		return fail(err)
	}
	expandLimit, err := query.EncodeExpandLimit(args.ExpandLimit, args.Expand)
	if err != nil {
		return fail(err)
	}
	fields, err := query.JoinFields(args.Fields)
	if err != nil {
		return fail(err)
	}
	page, err := resolvePage(evidence.ToolQuery, args.Cursor, args, true)
	if err != nil {
		return fail(err)
	}
	if err := a.checkExpand(ctx, args.Stream, args.ConnectionID, args.Expand, len(expandLimit) > 0); err != nil {
		return fail(err)
	}
	// Every argument with a param: is mapped by the generated call; what
	// the catalog lists under by_hand is set here.
	call := args.ListRecordsCall()
	call.Params.Cursor, call.Params.Fields = optString(page.rsCursor), optString(fields)
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.do(ctx, withQuery(req, filter, expandLimit), berr)
	if err != nil {
		return fail(err)
	}
	full := args.Detail == evidence.DetailFull
	if full {
		if err := a.fullBodyOver(mcptools.ToolQueryRecords, argsMap(args), resp.Body); err != nil {
			return fail(err)
		}
	}
	view, rerr := evidence.RenderList(resp.Body, args.Stream, args.ConnectionID, page.sameArgs(""))
	if rerr != nil {
		return fail(events.BadResponse(rerr))
	}
	if full {
		out := map[string]any{"records": view.Records, "has_more": view.HasMore, "detail": evidence.DetailFull}
		if view.NextCursor != "" {
			out["next_cursor"] = view.NextCursor
		}
		if view.NextPage != nil {
			out["next"] = view.NextPage
		}
		return a.fullReply(ctx, mcptools.ToolQueryRecords, argsMap(args), view.Rendered, out, "data", resp.Body), nil
	}
	limit, room := stepBudget(mcptools.ToolQueryRecords, len(resp.Body))
	ids := make([]string, len(view.Records))
	for i, r := range view.Records {
		ids[i] = r.ID
	}
	st := page.Step(ids, func() int { return view.FullBytes(resp.Body) })
	text, structured, cut, cerr := shownStep(resp.Body, limit, room, func(room int) (string, json.RawMessage, evidence.Truncation, error) {
		return view.CompactStep(resp.Body, st, room)
	})
	if cerr != nil {
		return fail(events.BadResponse(cerr))
	}
	return compactResult(limit, text, structured, evidence.WireLen(structured), cut.Full), nil
}

// Aggregate serves `aggregate`: GET /v1/streams/{stream}/aggregate.
func (a *Adapter) Aggregate(ctx context.Context, args mcptools.AggregateArgs) (*mcp.CallToolResult, error) {
	fail := func(err error) (*mcp.CallToolResult, error) { return errorResult(err, "aggregate", argsMap(args)), nil }
	switch {
	case args.GroupBy != "" && args.GroupByTime != "":
		return fail(rs.AdapterError("invalid_argument", "use group_by or group_by_time, not both", "group_by"))
	case args.GroupByTime != "" && args.Granularity == "":
		return fail(rs.AdapterError("invalid_argument", `group_by_time needs granularity, e.g. {"group_by_time": "created_at", "granularity": "month"}`, "granularity"))
	case args.Granularity != "" && args.GroupByTime == "":
		return fail(rs.AdapterError("invalid_argument", "granularity applies only with group_by_time", "granularity"))
	case args.Metric != "count" && args.Field == "":
		return fail(rs.AdapterError("invalid_argument", fmt.Sprintf("metric %q needs field: the field to %s", args.Metric, args.Metric), "field"))
	}
	filter, err := query.EncodeFilter(args.Filter)
	if err != nil {
		return fail(err)
	}
	call := args.AggregateStreamCall()
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.do(ctx, withQuery(req, filter), berr)
	if err != nil {
		return fail(err)
	}
	text, rerr := evidence.RenderAggregate(resp.Body)
	if rerr != nil {
		return fail(events.BadResponse(rerr))
	}
	return budgetedData(mcptools.ToolAggregate, text, resp.Body), nil
}

// Search serves `search`: GET /v1/search, /v1/search/semantic or /v1/search/hybrid.
func (a *Adapter) Search(ctx context.Context, args mcptools.SearchArgs) (*mcp.CallToolResult, error) {
	fail := func(err error) (*mcp.CallToolResult, error) { return errorResult(err, "search", argsMap(args)), nil }
	filter, err := query.EncodeFilter(args.Filter)
	if err != nil {
		return fail(err)
	}
	page, err := resolvePage(evidence.ToolSearch, args.Cursor, args, true)
	if err != nil {
		return fail(err)
	}
	cursor := optString(page.rsCursor)
	base := a.rs.BaseURL()
	var req *http.Request
	var berr error
	switch args.Mode {
	case "semantic":
		call := args.SearchRecordsSemanticCall()
		call.Params.Cursor = cursor
		req, berr = call.NewRequest(base)
	case "hybrid":
		if page.rsCursor != "" {
			return fail(rs.AdapterError("invalid_argument", "hybrid search returns one ranked page and takes no cursor; raise limit (up to 100) or use mode lexical to page", "cursor"))
		}
		call := args.SearchRecordsHybridCall()
		req, berr = call.NewRequest(base)
	default:
		call := args.SearchRecordsLexicalCall()
		call.Params.Cursor = cursor
		req, berr = call.NewRequest(base)
	}
	resp, err := a.do(ctx, withQuery(req, filter), berr)
	if err != nil {
		return fail(err)
	}
	limit := 0
	if args.Limit != nil {
		limit = *args.Limit
	}
	sreq := evidence.SearchRequest{
		Q: args.Q, Mode: args.Mode, Streams: args.Streams, Limit: limit, ConnectionID: args.ConnectionID, Filter: args.Filter, Detail: args.Detail,
	}
	view, rerr := evidence.RenderSearch(resp.Body, sreq, a.rs.Origin())
	if rerr != nil {
		return fail(events.BadResponse(rerr))
	}
	if args.Detail == evidence.DetailFull {
		out := view.Structured()
		out["detail"] = evidence.DetailFull
		if view.NextPage != nil {
			out["next"] = view.NextPage
		}
		return a.fullReply(ctx, mcptools.ToolSearch, argsMap(args), view.FullText(), out, "", nil), nil
	}
	budget, room := stepBudget(mcptools.ToolSearch, len(resp.Body))
	ids := make([]string, len(view.Results))
	for i, r := range view.Results {
		ids[i] = r.ID
	}
	st := page.Step(ids, view.FullBytes)
	text, structured, cut, _ := shownStep(resp.Body, budget, room, func(room int) (string, json.RawMessage, evidence.Truncation, error) {
		t, s, c := view.CompactStep(st, room)
		return t, s, c, nil
	})
	return compactResult(budget, text, structured, evidence.WireLen(structured), cut.Full), nil
}

// Fetch serves `fetch`: GET /v1/streams/{stream}/records/{id}.
func (a *Adapter) Fetch(ctx context.Context, args mcptools.FetchArgs) (*mcp.CallToolResult, error) {
	fail := func(err error) (*mcp.CallToolResult, error) { return errorResult(err, "fetch", argsMap(args)), nil }
	ref, err := handles.ParseID(args.ID)
	if err != nil {
		return fail(err)
	}
	if ref, err = handles.ResolveConnection(ref, args.ConnectionID); err != nil {
		return fail(err)
	}
	full := args.Detail == evidence.DetailFull
	doc, body, err := a.fetchRecord(ctx, args.GetRecordCall(), ref, args.Fields, args.Expand, args.ExpandLimit, full, argsMap(args))
	if err != nil {
		return fail(err)
	}
	if full {
		// The RS record verbatim in data, every value whole; the document
		// beside it points at data rather than repeat it.
		doc.Detail = evidence.DetailFull
		return a.fullReply(ctx, mcptools.ToolFetch, argsMap(args), doc.Rendered, doc, "data", body), nil
	}
	doc.Detail = evidence.DetailCompact
	if doc.Truncated {
		call := fullDetailCall(evidence.ToolFetch, argsMap(args))
		doc.Full = &call
	}
	// The document is encoded once, by the server; its size is estimated
	// from its parts.
	size := evidence.DocumentStructuredBytes(doc)
	if unseen.HasJSON(body) {
		// Values of the body may hold hidden characters: the document is
		// encoded here, so compactResult shows them (one scan otherwise).
		if raw, merr := evidence.MarshalNoEscape(doc); merr == nil {
			return compactResult(replyBudget(mcptools.ToolFetch, 0), doc.Rendered, json.RawMessage(raw), len(raw), doc.Full), nil
		}
	}
	return compactResult(replyBudget(mcptools.ToolFetch, 0), doc.Rendered, doc, size, doc.Full), nil
}

// fetchRecord reads one record and renders it within fetch's reply budget
// (full: as evidence.RenderDocumentFull), and returns the RS body too; fetch
// and the record resource share it. With full, a body over the full
// ceiling is refused (fullBodyOver, naming fetch's arguments as shown)
// before anything is rendered. call holds what fetch's arguments map
// to by generated code (nothing for the resource); the record, fields and
// expansions (the catalog's by_hand) are set here.
func (a *Adapter) fetchRecord(ctx context.Context, call mcptools.GetRecordCall, ref handles.RecordRef, fieldList, expand []string, expandLimitRaw json.RawMessage, full bool, shown map[string]any) (evidence.Document, []byte, error) {
	fields, err := query.JoinFields(fieldList)
	if err != nil {
		return evidence.Document{}, nil, err
	}
	expandLimit, err := query.EncodeExpandLimit(expandLimitRaw, expand)
	if err != nil {
		return evidence.Document{}, nil, err
	}
	if err := a.checkExpand(ctx, ref.Stream, ref.ConnectionID, expand, len(expandLimit) > 0); err != nil {
		return evidence.Document{}, nil, err
	}
	call.Stream, call.Id = ref.Stream, ref.RecordID
	call.Params.Fields, call.Params.ConnectionId = optString(fields), optString(ref.ConnectionID)
	if len(expand) > 0 {
		call.Params.Expand = &expand
	}
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.do(ctx, withQuery(req, expandLimit), berr)
	if err != nil {
		return evidence.Document{}, nil, err
	}
	if full {
		if err := a.fullBodyOver(mcptools.ToolFetch, shown, resp.Body); err != nil {
			return evidence.Document{}, nil, err
		}
	}
	var doc evidence.Document
	var rerr error
	if full {
		doc, rerr = evidence.RenderDocumentFull(resp.Body, ref, a.rs.Origin(), a.declaredRoles(ctx, ref.Stream))
	} else if limit := replyBudget(mcptools.ToolFetch, 0); unseen.HasJSON(resp.Body) {
		// Measured as shown: hidden characters become longer markers, so
		// the document is cut further (down to evidence.FieldValueChars a
		// field; past that compactResult keeps its small members).
		roles := a.declaredRoles(ctx, ref.Stream)
		_, _, doc, rerr = refitShown(limit, limit, func(room int) (string, json.RawMessage, evidence.Document, error) {
			d, err := evidence.RenderDocumentWithin(resp.Body, ref, a.rs.Origin(), roles, room)
			if err != nil {
				return "", nil, d, err
			}
			raw, err := evidence.MarshalNoEscape(d)
			return d.Rendered, raw, d, err
		})
	} else {
		doc, rerr = evidence.RenderDocumentWithin(resp.Body, ref, a.rs.Origin(), a.declaredRoles(ctx, ref.Stream), limit)
	}
	if rerr != nil {
		return evidence.Document{}, nil, events.BadResponse(rerr)
	}
	return doc, resp.Body, nil
}

// ReadRecordField serves `read_record_field`: GET .../records/{id}/field-window.
func (a *Adapter) ReadRecordField(ctx context.Context, args mcptools.ReadRecordFieldArgs) (*mcp.CallToolResult, error) {
	w, err := windowFromArgs(args)
	if err != nil {
		return errorResult(err, "read_record_field", argsMap(args)), nil
	}
	// A compact reply's continuations are next and previous; only the full
	// detail also names the next window as a cursor.
	view, err := a.readWindow(ctx, args.GetFieldWindowCall(), w, args.Detail == evidence.DetailFull)
	if err != nil {
		return errorResult(err, "read_record_field", argsMap(args)), nil
	}
	var res *mcp.CallToolResult
	if args.Detail == evidence.DetailFull {
		// The window text is paid for once: it lives in structured output,
		// and content[] says where.
		view.FullText()
		res = a.fullReply(ctx, mcptools.ToolReadRecordField, argsMap(args), view.Rendered, view, "", nil)
	} else {
		res = compactWindow(view, replyBudget(mcptools.ToolReadRecordField, view.RSBodyBytes), pageLimit(view, w))
	}
	res.Meta = mcp.NewMetaFromMap(map[string]any{MetaFieldWindowURI: handles.FieldWindowURI(w)})
	return res, nil
}

// windowFromArgs resolves the record, field and range of a field read from an
// id, a stream+record_id pair, or a cursor, refusing contradictions
// (conflicting_arguments, naming the explicit argument that disagrees).
// Argument formats and ranges were checked by the generated Validate; what
// is left is checked here, and every error names the argument at fault.
func windowFromArgs(args mcptools.ReadRecordFieldArgs) (handles.WindowRef, error) {
	if args.Cursor == "" && args.OffsetChars == nil && args.Q == "" && strings.HasPrefix(args.ID, handles.FieldWindowURIPrefix) {
		// A field-window handle given as id names a window, not only its
		// record: read that window, as the same handle given as cursor does.
		args.Cursor, args.ID = args.ID, ""
	}
	if args.Cursor != "" {
		return windowFromCursor(args)
	}
	var w handles.WindowRef
	if args.FieldPath == "" {
		return w, rs.AdapterError("missing_argument", `field_path is required unless a cursor is given; name a top-level text field, e.g. "text"`, "field_path")
	}
	var ref handles.RecordRef
	var err error
	switch {
	case args.ID != "":
		if ref, err = handles.ParseID(args.ID); err != nil {
			return w, err
		}
		if (args.Stream != "" && args.Stream != ref.Stream) || (args.RecordID != "" && args.RecordID != ref.RecordID) {
			return w, rs.AdapterError("conflicting_arguments", "id names another record than stream/record_id; pass only id", "id")
		}
	case args.Stream != "" && args.RecordID != "":
		ref = handles.RecordRef{Stream: args.Stream, RecordID: args.RecordID}
		if err := ref.Validate(); err != nil {
			return w, err
		}
	default:
		return w, rs.AdapterError("missing_argument", `name the record: id (e.g. "cin_x/transcripts:tr-5" as shown by search or fetch), or stream and record_id`, "id")
	}
	if ref, err = handles.ResolveConnection(ref, args.ConnectionID); err != nil {
		return w, err
	}
	w = handles.WindowRef{Record: ref, Field: args.FieldPath, Q: args.Q}
	if args.OffsetChars != nil {
		if args.Q != "" {
			return w, rs.AdapterError("conflicting_arguments", "pass either offset_chars or q, not both", "q")
		}
		w.Offset = *args.OffsetChars
	}
	if args.LimitChars != nil {
		w.Limit = *args.LimitChars
	}
	if args.Q != "" {
		w.Before, w.After = matchContext(args.Q, w.Limit, args.BeforeChars, args.AfterChars)
	} else if args.BeforeChars != nil || args.AfterChars != nil {
		param := "before_chars"
		if args.BeforeChars == nil {
			param = "after_chars"
		}
		return w, rs.AdapterError("invalid_argument", "before_chars and after_chars apply only with q", param)
	}
	return w, w.ValidateArgs()
}

// windowFromCursor resolves a read that continues from a cursor. Explicit
// arguments may repeat what the cursor says, and limit_chars may resize the
// window; anything that names another record, connection or field, or moves
// the window another way, is refused rather than silently overridden.
func windowFromCursor(args mcptools.ReadRecordFieldArgs) (handles.WindowRef, error) {
	c, err := handles.DecodeCursor(args.Cursor)
	if err != nil {
		return handles.WindowRef{}, err
	}
	conflict := func(param, format string, a ...any) (handles.WindowRef, error) {
		return handles.WindowRef{}, rs.AdapterError("conflicting_arguments", fmt.Sprintf(format, a...)+
			"; pass the cursor alone (with limit_chars if you like), or drop the cursor and name the record explicitly", param)
	}
	cr := c.Record
	if args.FieldPath != "" && args.FieldPath != c.Field {
		return conflict("field_path", "cursor reads field %q but field_path is %q", c.Field, args.FieldPath)
	}
	if args.ID != "" {
		ref, err := handles.ParseID(args.ID)
		if err != nil {
			return handles.WindowRef{}, err
		}
		if ref.Stream != cr.Stream || ref.RecordID != cr.RecordID || (ref.ConnectionID != "" && ref.ConnectionID != cr.ConnectionID) {
			return conflict("id", "cursor reads record %q but id names %q", cr.ID(), ref.ID())
		}
	}
	if args.ConnectionID != "" && args.ConnectionID != cr.ConnectionID {
		return conflict("connection_id", "cursor reads record %q but connection_id is %q", cr.ID(), args.ConnectionID)
	}
	if args.Stream != "" && args.Stream != cr.Stream {
		return conflict("stream", "cursor reads stream %q but stream is %q", cr.Stream, args.Stream)
	}
	if args.RecordID != "" && args.RecordID != cr.RecordID {
		return conflict("record_id", "cursor reads record_id %q but record_id is %q", cr.RecordID, args.RecordID)
	}
	switch {
	case args.OffsetChars != nil:
		return conflict("offset_chars", "the cursor already fixes the window's offset")
	case args.Q != "":
		return conflict("q", "the cursor already fixes the window's position")
	case args.BeforeChars != nil:
		return conflict("before_chars", "the cursor already fixes the window's position")
	case args.AfterChars != nil:
		return conflict("after_chars", "the cursor already fixes the window's position")
	}
	if args.LimitChars == nil {
		return c, nil
	}
	c.Limit = *args.LimitChars
	return c, c.ValidateArgs()
}

// matchContext returns the before_chars and after_chars to send with q.
// A side the caller gave is kept. A side left out gets the default context
// (evidence.MatchBeforeChars / MatchAfterChars), scaled down when limit
// would not hold it together with the match and the other side, so the RS
// (which trims the text after the match first when a window is over
// limit_chars) keeps text on both sides of the match.
func matchContext(q string, limit int, before, after *int) (int, int) {
	b, a := evidence.MatchBeforeChars, evidence.MatchAfterChars
	if before != nil {
		b = *before
	}
	if after != nil {
		a = *after
	}
	if limit <= 0 || (before != nil && after != nil) {
		return b, a
	}
	room := max(0, limit-utf8.RuneCountInString(strings.TrimSpace(q)))
	switch {
	case before == nil && after == nil:
		if b+a > room {
			b = room * evidence.MatchBeforeChars / (evidence.MatchBeforeChars + evidence.MatchAfterChars)
			a = room - b
		}
	case before == nil:
		b = min(b, max(0, room-a))
	default:
		a = min(a, max(0, room-b))
	}
	return b, a
}

// readWindow performs the field-window call for w and renders it; the tool
// and the field-window resource share it, so both return the same window.
// withCursor adds the next window as a cursor (next_cursor) to next and
// previous. call holds what the tool's arguments map to by generated code
// (nothing for the resource); the window (the catalog's by_hand) is set from w.
func (a *Adapter) readWindow(ctx context.Context, call mcptools.GetFieldWindowCall, w handles.WindowRef, withCursor bool) (evidence.WindowView, error) {
	call.Stream, call.Id = w.Record.Stream, w.Record.RecordID
	p := &call.Params
	p.Field, p.ConnectionId, p.Q = w.Field, optString(w.Record.ConnectionID), optString(w.Q)
	if w.Offset > 0 {
		p.OffsetChars = new(w.Offset)
	}
	if w.Limit > 0 {
		p.LimitChars = new(w.Limit)
	}
	if w.Q != "" {
		p.BeforeChars, p.AfterChars = new(w.Before), new(w.After)
	}
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.do(ctx, req, berr)
	if err != nil {
		return evidence.WindowView{}, err
	}
	var cursorFor func(offset, limit int) string
	if withCursor {
		cursorFor = func(offset, limit int) string {
			next := w
			next.Offset, next.Limit, next.Q, next.Before, next.After = offset, limit, "", 0, 0
			return handles.EncodeCursor(next)
		}
	}
	view, rerr := evidence.RenderWindowFrom(resp.Body, w.Record, w.Offset, w.Limit, cursorFor)
	var past *evidence.PastEndError
	if errors.As(rerr, &past) {
		return evidence.WindowView{}, offsetPastEnd(w, past)
	}
	if rerr != nil {
		return evidence.WindowView{}, events.BadResponse(rerr)
	}
	return view, nil
}

// checkExpand enforces the expand gate: expand on a stream whose live schema
// advertises no expand_capabilities is refused before the records call. A
// schema that cannot be read, or does not list the stream, defers to the RS.
func (a *Adapter) checkExpand(ctx context.Context, stream, connectionID string, expand []string, hasLimit bool) error {
	if len(expand) == 0 && !hasLimit {
		return nil
	}
	req, berr := rsclient.NewGetSchemaRequest(a.rs.BaseURL(), &rsclient.GetSchemaParams{
		Stream: &stream, ConnectionId: optString(connectionID), View: new(rsclient.GetSchemaParamsViewCompact)})
	resp, err := a.do(ctx, req, berr)
	if err != nil {
		return nil // fail open: the RS decides
	}
	caps, found := evidence.ExpandCapabilities(resp.Body, stream)
	if !found || len(caps) > 0 {
		return nil
	}
	return rs.AdapterError("invalid_expand",
		fmt.Sprintf("stream %q advertises no expand_capabilities, so expand/expand_limit cannot be used on it; see GET /v1/schema (expand_capabilities) via the schema tool for what each stream can expand", stream), "expand")
}

// codeOutOfRange is the code of an argument outside what it may name; the
// generated Validate uses it for bounds known before the call.
const codeOutOfRange = "out_of_range"

// offsetPastEnd is the typed error of a read of w whose offset lies past
// the end of its field (known once the RS answered): it names
// offset_chars, the field's size and, as next, the call that reads the
// field's last window, which stays within the field.
func offsetPastEnd(w handles.WindowRef, e *evidence.PastEndError) *rs.Error {
	size := w.Limit
	if size <= 0 {
		size = evidence.DefaultWindowChars
	}
	next := evidence.ReadFieldCall(w.Record.ID(), w.Field, max(0, e.Total-size), w.Limit, "")
	obj := map[string]any{
		"type": "adapter_error",
		"code": codeOutOfRange,
		"message": fmt.Sprintf("offset_chars %d is past the end of field %q, which has %d characters; read at offsets 0 to %d",
			e.Offset, w.Field, e.Total, max(0, e.Total-1)),
		"param":       "offset_chars",
		"total_chars": e.Total,
		"next":        next,
	}
	b, _ := json.Marshal(map[string]any{"error": obj}) // strings, ints and a call always encode
	return &rs.Error{Envelope: b}
}

// compactWindow is the compact result of a field window within limit
// bytes. The window text is paid for once, in content[]; structured output
// points at it and names the full-detail call of the same range. A shown
// window (markers for hidden characters) that does not fit is cut to the
// longest prefix whose reply fits (binary search over characters, at most
// log2(MaxWindowChars)+1 renderings; a window that fits is rendered once),
// and its next read starts right after it, so walking next shows every
// character of the field once.
func compactWindow(view evidence.WindowView, limit, pageLimit int) *mcp.CallToolResult {
	text, structured, size := compactWindowParts(view)
	if limit > 0 && size > limit {
		total := evidence.CountChars(view.Text)
		// The prefixes that fit are the 1..keep characters; at least one
		// is kept, so next moves on.
		keep := sort.Search(total-1, func(i int) bool {
			cut := view
			cut.CutTo(i+1, pageLimit)
			_, _, n := compactWindowParts(cut)
			return n > limit
		})
		if total > 1 {
			view.CutTo(max(keep, 1), pageLimit)
			text, structured, _ = compactWindowParts(view)
		}
	}
	return compactResult(limit, text, json.RawMessage(structured), len(structured), view.Full)
}

// compactWindowParts renders view as a compact reply does: the text with
// hidden characters shown and the structured output, and the reply's size
// as compactResult measures it.
func compactWindowParts(view evidence.WindowView) (string, []byte, int) {
	call := evidence.ReadFieldCall(view.ID, view.FieldPath, view.Window.StartChars, view.Window.EndChars-view.Window.StartChars, "")
	call.Arguments["detail"] = evidence.DetailFull
	// The window is shown by CompactText (its span in content[] must
	// hold): the reply says so here.
	hidden := unseen.Has(view.Rendered)
	view.CompactText(call)
	if hidden {
		view.Rendered += hiddenNote
	}
	// The window's few members cost less to append than to marshal.
	structured := view.AppendJSON(make([]byte, 0, 1024))
	shown, _ := showStructured(structured)
	return view.Rendered, structured, resultOverhead + evidence.JSONStringLen(view.Rendered) + evidence.WireLen(shown)
}

// pageLimit is the page size of the reads that continue view, read as w
// asked: the one its next call names, else what w asked for (0: the
// default), none for a q window, which pages on with the default.
func pageLimit(view evidence.WindowView, w handles.WindowRef) int {
	if view.Next != nil {
		l, _ := view.Next.Arguments["limit_chars"].(int)
		return l
	}
	if w.Q != "" || w.Limit == evidence.DefaultWindowChars {
		return 0
	}
	return w.Limit
}
