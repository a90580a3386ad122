package benchmarks

import (
	"net/http"
	"strconv"
	"strings"
)

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
	var b strings.Builder
	b.Grow(h.Elements*15 + 2)
	b.WriteByte('{')
	for i := range h.Elements {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strconv.Itoa(1_000_000_000 + i)[1:])
		b.WriteString(`":{}`)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// Handler builds every answer and returns the handler serving them.
func (h HostileRS) Handler() http.Handler {
	record := []byte(`{"object":"record","id":"` + HostileRecordID + `","stream":"pages","connection_id":"cin_pages","emitted_at":"2026-01-01T00:00:00Z","data":{"title":"hostile","blob":` + string(h.Blob()) + `}}`)
	list := []byte(`{"object":"list","data":[` + string(record) + `],"has_more":false,"next_cursor":null}`)
	schema := encodeRaw(map[string]any{"object": "schema", "bearer": map[string]any{"token_kind": "client"},
		"connectors": []any{map[string]any{"connector_key": "pages", "streams": []any{map[string]any{"name": "pages"}}}}})
	notFound := []byte(`{"error":{"type":"invalid_request_error","code":"not_found","message":"no such resource"}}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status := notFound, http.StatusNotFound
		switch r.URL.Path {
		case "/v1/schema":
			body, status = schema, http.StatusOK
		case "/v1/streams/pages/records":
			body, status = list, http.StatusOK
		case "/v1/streams/pages/records/" + HostileRecordID:
			body, status = record, http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}
