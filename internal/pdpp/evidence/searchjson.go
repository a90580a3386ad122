package evidence

import (
	"slices"
	"strconv"
)

// The appenders below write what mustMarshal (encoding/json without HTML
// escaping) writes for the values of a compact search step, member for
// member, without reflection: a step encodes every hit it weighs, twice
// when previews must shrink, and the full-detail size estimate encodes the
// page once more. TestSearchAppendersMatchMarshal holds the bytes equal.

// encoded is c as mustMarshal writes it, built by appendNoEscape.
func (c *Continuation) encoded() []byte { return c.appendNoEscape(nil) }

// appendNoEscape appends c: the tool, then the arguments with their names
// in byte order. A continuation has a handful of arguments, sorted here in
// a fixed-size array (a longer list grows it).
func (c *Continuation) appendNoEscape(b []byte) []byte {
	b = append(b, `{"tool":`...)
	b = appendNoEscapeString(b, c.Tool)
	if c.Arguments == nil {
		return append(b, `,"arguments":null}`...)
	}
	var store [8]string
	keys := store[:0]
	for k := range c.Arguments {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, `,"arguments":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNoEscapeString(b, k)
		b = append(b, ':')
		b = appendArg(b, c.Arguments[k])
	}
	return append(b, "}}"...)
}

// appendEvidence appends the optional scalar evidence members shared by
// results[] and content_ladder entries.
func appendEvidence(b []byte, field, preview string, complete *bool) []byte {
	if field != "" {
		b = append(b, `,"evidence_field":`...)
		b = appendNoEscapeString(b, field)
	}
	if preview != "" {
		b = append(b, `,"evidence_preview":`...)
		b = appendNoEscapeString(b, preview)
	}
	if complete != nil {
		b = append(b, `,"evidence_complete":`...)
		b = strconv.AppendBool(b, *complete)
	}
	return b
}

// appendJSON appends r as a results[] entry.
func (r *SearchResult) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendNoEscapeString(b, r.ID)
	b = append(b, `,"title":`...)
	b = appendNoEscapeString(b, r.Title)
	if r.URL != "" {
		b = append(b, `,"url":`...)
		b = appendNoEscapeString(b, r.URL)
	}
	b = append(b, `,"stream":`...)
	b = appendNoEscapeString(b, r.Stream)
	b = append(b, `,"record_id":`...)
	b = appendNoEscapeString(b, r.RecordID)
	for _, m := range [...]struct{ name, val string }{
		{`,"connection_id":`, r.ConnectionID}, {`,"connector_id":`, r.ConnectorID}, {`,"connector_key":`, r.ConnectorKey},
	} {
		if m.val != "" {
			b = append(b, m.name...)
			b = appendNoEscapeString(b, m.val)
		}
	}
	if len(r.MatchedFields) > 0 {
		b = append(b, `,"matched_fields":[`...)
		for i, f := range r.MatchedFields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNoEscapeString(b, f)
		}
		b = append(b, ']')
	}
	b = appendEvidence(b, r.EvidenceField, r.EvidencePreview, r.EvidenceComplete)
	b = append(b, `,"next":`...)
	if r.nextJSON != nil {
		b = append(b, r.nextJSON...)
	} else {
		b = r.Next.appendNoEscape(b)
	}
	return append(b, '}')
}

// appendJSON appends l as a content_ladder.records[] entry of detail full.
func (l *LadderRecord) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendNoEscapeString(b, l.ID)
	b = appendEvidence(b, l.EvidenceField, l.EvidencePreview, l.EvidenceComplete)
	b = append(b, `,"next":`...)
	b = l.Next.appendNoEscape(b)
	b = append(b, `,"fetch":`...)
	b = l.Fetch.appendNoEscape(b)
	return append(b, '}')
}

// appendCompactLadder appends the compact content_ladder entry of the hit
// id: the id and its fetch call.
func appendCompactLadder(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = appendNoEscapeString(b, id)
	b = append(b, `,"fetch":{"tool":`...)
	b = appendNoEscapeString(b, ToolFetch)
	b = append(b, `,"arguments":{"id":`...)
	b = appendNoEscapeString(b, id)
	return append(b, "}}}"...)
}

// idEntryCosts returns what the id-only entry of each of n items adds to a
// step on the wire, its comma included; id(i) is item i's id. One entry is
// encoded at a time, into one buffer.
func idEntryCosts(n int, id func(i int) string) []int {
	costs := make([]int, n)
	var buf []byte
	for i := range costs {
		buf = appendIDEntry(buf[:0], id(i))
		costs[i] = WireLen(buf) + 1
	}
	return costs
}

// appendPreviewedEntry appends the records[] entry of a record a compact
// step shows: {"id": id}, with "previewed", the names of the fields of its
// data the server replaced by a Preview, when there are any. The list is
// written outside the record's data, where the RS cannot write, so a
// reader (the evidence view) follows a preview's next only for the fields
// it names, never for a record value shaped like a Preview.
func appendPreviewedEntry(b []byte, id string, previewed []string) []byte {
	if len(previewed) == 0 {
		return appendIDEntry(b, id)
	}
	b = append(b, `{"id":`...)
	b = appendNoEscapeString(b, id)
	b = append(b, `,"previewed":[`...)
	for i, name := range previewed {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNoEscapeString(b, name)
	}
	return append(b, "]}"...)
}

// appendIDEntry appends the entry of an item listed by its id alone,
// {"id": id}: a search hit in content_ladder.records[], a record in a
// query step's list.
func appendIDEntry(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = appendNoEscapeString(b, id)
	return append(b, '}')
}
