package benchmarks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Fills of a LargeRS text: characters encoding/json escapes as six bytes
// each, and HTML (tags, entities, quotes, line breaks).
const (
	FillLessThan = "<"
	FillHTML     = "<p class=\"note\">Tom &amp; Jerry &lt;3</p>\n"
)

// LargeRS is a scripted resource server of large values, for the memory
// checks: one stream, "pages", of Records records whose text field holds
// Chars characters of Fill repeated. Its answers are built once, encoded
// as a Node RS sends them (no HTML escaping) with a Content-Length:
//
//	GET /v1/schema                         a client token's schema
//	GET /v1/streams/pages/records          the whole page (has_more false)
//	GET /v1/streams/pages/records/big      one record holding Records x Chars characters
//	GET /v1/streams/pages/records/{id}     one record of the page
//	GET .../records/{id}/field-window      a window of its text (offset_chars,
//	                                       limit_chars: default 4096, at most 16384)
//
// Any other path is 404 not_found. Every answer is the same whatever the
// token, limit or cursor; the bytes a test measures are the server's, not
// this handler's, which keeps its bodies for the life of the value.
type LargeRS struct {
	Records int
	Chars   int
	Fill    string
}

// LargeRecordID is the id of LargeRS's record of Records x Chars characters.
const LargeRecordID = "big"

// Handler builds every answer and returns the handler serving them.
func (l LargeRS) Handler() http.Handler {
	text := func(chars int) string { return strings.Repeat(l.Fill, chars/len(l.Fill)+1)[:chars] }
	record := func(id string, chars int) map[string]any {
		return map[string]any{"object": "record", "id": id, "stream": "pages", "connection_id": "cin_pages",
			"emitted_at": "2026-01-01T00:00:00Z", "data": map[string]any{"title": "page " + id, "text": text(chars)}}
	}
	page := make([]any, l.Records)
	one := map[string][]byte{LargeRecordID: encodeRaw(record(LargeRecordID, l.Records*l.Chars))}
	for i := range page {
		id := "p" + strconv.Itoa(i+1)
		page[i] = record(id, l.Chars)
		one[id] = encodeRaw(page[i])
	}
	list := encodeRaw(map[string]any{"object": "list", "data": page, "has_more": false, "next_cursor": nil})
	return scripted(func(r *http.Request) []byte {
		switch p := r.URL.Path; {
		case p == "/v1/streams/pages/records":
			return list
		case strings.HasPrefix(p, "/v1/streams/pages/records/") && strings.HasSuffix(p, "/field-window"):
			id := strings.TrimSuffix(strings.TrimPrefix(p, "/v1/streams/pages/records/"), "/field-window")
			if _, ok := one[id]; ok && r.URL.Query().Get("field") == "text" {
				chars := l.Chars
				if id == LargeRecordID {
					chars = l.Records * l.Chars
				}
				return l.window(id, text(chars), r)
			}
		case strings.HasPrefix(p, "/v1/streams/pages/records/"):
			return one[strings.TrimPrefix(p, "/v1/streams/pages/records/")]
		}
		return nil
	})
}

// scripted is a scripted RS: a client token's schema of its one stream,
// "pages", at /v1/schema, elsewhere route's body or 404 not_found when it
// gives none; every answer JSON with a Content-Length.
func scripted(route func(r *http.Request) []byte) http.Handler {
	schema := encodeRaw(map[string]any{"object": "schema", "bearer": map[string]any{"token_kind": "client"},
		"connectors": []any{map[string]any{"connector_key": "pages", "streams": []any{map[string]any{"name": "pages"}}}}})
	notFound := []byte(`{"error":{"type":"invalid_request_error","code":"not_found","message":"no such resource"}}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status := schema, http.StatusOK
		if r.URL.Path != "/v1/schema" {
			body = route(r)
		}
		if body == nil {
			body, status = notFound, http.StatusNotFound
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

// window is the field window of text (ASCII: chars are bytes) r asks for.
func (l LargeRS) window(id, text string, r *http.Request) []byte {
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset_chars"))
	limit, err := strconv.Atoi(q.Get("limit_chars"))
	if err != nil || limit <= 0 {
		limit = 4096
	}
	limit = min(limit, 16384)
	offset = min(max(offset, 0), len(text))
	end := min(offset+limit, len(text))
	w := map[string]any{"text": text[offset:end], "start_chars": offset, "end_chars": end, "total_chars": len(text),
		"limit_chars": limit, "complete": offset == 0 && end == len(text), "has_more": end < len(text),
		"next_offset_chars": nil, "previous_offset_chars": nil}
	if end < len(text) {
		w["next_offset_chars"] = end
	}
	if offset > 0 {
		w["previous_offset_chars"] = max(0, offset-limit)
	}
	return encodeRaw(map[string]any{"object": "field_window", "record_id": id, "connection_id": "cin_pages", "stream": "pages",
		"field": map[string]any{"path": "text", "type": "string"}, "window": w})
}

// encodeRaw encodes v without HTML escaping.
func encodeRaw(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("benchmarks: encoding a scripted answer: %v", err))
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// HostileRS is a scripted resource server whose data is costly to decode,
// for the decoded-size check: one stream, "pages", of one record, h1, whose
// field blob is an array of Elements empty objects ([{},{},...], three
// bytes each) or, with Members set, an object of that many members
// ({"k0000001":{},...}). Its answers are built once, with a Content-Length:
//
//	GET /v1/schema                      a client token's schema
//	GET /v1/streams/pages/records       a page of the one record (has_more false)
//	GET /v1/streams/pages/records/h1    the record
//
// Any other path is 404 not_found.
type HostileRS struct {
	Elements int
	Members  bool
}

// HostileRecordID is the id of HostileRS's one record.
const HostileRecordID = "h1"

// Blob returns the record's blob value.
func (h HostileRS) Blob() []byte {
	if !h.Members {
		return []byte("[" + strings.TrimSuffix(strings.Repeat("{},", h.Elements), ",") + "]")
	}
	b := append(make([]byte, 0, h.Elements*15+2), '{')
	for i := range h.Elements {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `"k%09d":{}`, i)
	}
	return append(b, '}')
}

// Handler builds every answer and returns the handler serving them.
func (h HostileRS) Handler() http.Handler {
	record := []byte(`{"object":"record","id":"` + HostileRecordID + `","stream":"pages","connection_id":"cin_pages","emitted_at":"2026-01-01T00:00:00Z","data":{"title":"hostile","blob":` + string(h.Blob()) + `}}`)
	list := []byte(`{"object":"list","data":[` + string(record) + `],"has_more":false,"next_cursor":null}`)
	return scripted(func(r *http.Request) []byte {
		switch r.URL.Path {
		case "/v1/streams/pages/records":
			return list
		case "/v1/streams/pages/records/" + HostileRecordID:
			return record
		}
		return nil
	})
}
