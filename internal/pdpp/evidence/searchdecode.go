package evidence

import "github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"

// The json keys of the types a search body decodes into, for splitKnown.
var (
	searchPageKeys = []string{"data", "has_more", "next_cursor", "meta"}
	searchHitKeys  = []string{"record_key", "record_url", "record_uri", "stream", "connection_id", "connector_id",
		"connector_key", "matched_fields", "retrieval_mode", "snippet", "evidence_excerpts", "score"}
	snippetKeys  = []string{"field", "text"}
	excerptKeys  = []string{"field_path", "preview_text", "truncated", "provenance", "read"}
	readHintKeys = []string{"field", "record_id", "stream", "connection_id"}
	pageMetaKeys = []string{"count", "warnings"}
	warningKeys  = []string{"code", "message"}
)

// decodeSearchPage reads an RS search body as json.Unmarshal into SearchPage
// does, in one validating scan plus one walk, without reflection. It
// returns false, for the caller to use encoding/json (its result and its
// errors), on invalid JSON, a body that is not an object, a repeated or
// case-variant key in any object it decodes, or a member of a type the
// field does not take. The walk is bounded by len(body): every member and
// element is visited once, by the splitters.
func decodeSearchPage(body []byte) (SearchPage, bool) {
	var page SearchPage
	if !jsonwalk.Valid(body) {
		return page, false
	}
	err := splitKnown(body, searchPageKeys, func(key string, val []byte) error {
		switch key {
		case "data":
			return sliceInto(&page.Data, val, func(h *SearchHit, v []byte) error {
				if !isObject(v) {
					return jsonwalk.ErrBadJSON // named by RenderSearch
				}
				return searchHitInto(h, v)
			})
		case "has_more":
			return boolInto(&page.HasMore, val)
		case "next_cursor":
			return optStringInto(&page.NextCursor, val)
		case "meta":
			return pageMetaInto(&page.Meta, val)
		}
		return nil // an unknown member, which encoding/json skips too
	})
	if err != nil {
		return SearchPage{}, false
	}
	return page, true
}

// searchHitInto decodes one element of a search body's data list.
func searchHitInto(h *SearchHit, val []byte) error {
	return objectInto(val, searchHitKeys, func(key string, v []byte) error {
		switch key {
		case "record_key":
			return stringInto(&h.RecordKey, v)
		case "record_url":
			return stringInto(&h.RecordURL, v)
		case "record_uri":
			return stringInto(&h.RecordURI, v)
		case "stream":
			return stringInto(&h.Stream, v)
		case "connection_id":
			return stringInto(&h.ConnectionID, v)
		case "connector_id":
			return stringInto(&h.ConnectorID, v)
		case "connector_key":
			return stringInto(&h.ConnectorKey, v)
		case "matched_fields":
			return sliceInto(&h.MatchedFields, v, stringInto)
		case "retrieval_mode":
			return stringInto(&h.RetrievalMode, v)
		case "snippet":
			return pointerInto(&h.Snippet, v, snippetInto)
		case "evidence_excerpts":
			return sliceInto(&h.Excerpts, v, excerptInto)
		case "score":
			rawInto(&h.Score, v)
		}
		return nil
	})
}

func snippetInto(s *Snippet, val []byte) error {
	return objectInto(val, snippetKeys, func(key string, v []byte) error {
		switch key {
		case "field":
			return stringInto(&s.Field, v)
		case "text":
			return stringInto(&s.Text, v)
		}
		return nil
	})
}

func excerptInto(e *Excerpt, val []byte) error {
	return objectInto(val, excerptKeys, func(key string, v []byte) error {
		switch key {
		case "field_path":
			return stringInto(&e.FieldPath, v)
		case "preview_text":
			return stringInto(&e.PreviewText, v)
		case "truncated":
			return boolInto(&e.Truncated, v)
		case "provenance":
			return stringInto(&e.Provenance, v)
		case "read":
			return pointerInto(&e.Read, v, readHintInto)
		}
		return nil
	})
}

func readHintInto(r *ReadHint, val []byte) error {
	return objectInto(val, readHintKeys, func(key string, v []byte) error {
		switch key {
		case "field":
			return stringInto(&r.Field, v)
		case "record_id":
			return stringInto(&r.RecordID, v)
		case "stream":
			return stringInto(&r.Stream, v)
		case "connection_id":
			return stringInto(&r.ConnectionID, v)
		}
		return nil
	})
}

func pageMetaInto(m *PageMeta, val []byte) error {
	return objectInto(val, pageMetaKeys, func(key string, v []byte) error {
		switch key {
		case "count":
			rawInto(&m.Count, v)
		case "warnings":
			return sliceInto(&m.Warnings, v, warningInto)
		}
		return nil
	})
}

func warningInto(w *Warning, val []byte) error {
	return objectInto(val, warningKeys, func(key string, v []byte) error {
		switch key {
		case "code":
			return stringInto(&w.Code, v)
		case "message":
			return stringInto(&w.Message, v)
		}
		return nil
	})
}
