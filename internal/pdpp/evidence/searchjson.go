package evidence

import "strconv"

// The appenders below write what mustMarshal writes for the values of a
// compact search step, without reflection: a step encodes every hit it
// weighs, twice when previews must shrink, and the full-detail size
// estimate once more (TestSearchAppendersMatchMarshal holds the bytes
// equal). They stay hand-written for CPU: appendJSON (json v2, the same
// bytes) made BenchmarkRenderRSBodies/search 1.14 to 1.22 times as costly
// (median paired ratio and ratio of the medians, nine paired runs of
// user+system CPU; each hit's struct marshal was a ninth of the step's
// CPU), past the ceiling of 1.05 times commit b514ee8's tree from 0.90.

// appendEvidence appends the optional scalar evidence members shared by
// results[] and content_ladder entries.
func appendEvidence(b []byte, field, preview string, complete *bool) []byte {
	if field != "" {
		b = append(b, `,"evidence_field":`...)
		b = appendString(b, field)
	}
	if preview != "" {
		b = append(b, `,"evidence_preview":`...)
		b = appendString(b, preview)
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
	b = appendString(b, r.ID)
	b = append(b, `,"title":`...)
	b = appendString(b, r.Title)
	if r.URL != "" {
		b = append(b, `,"url":`...)
		b = appendString(b, r.URL)
	}
	b = append(b, `,"stream":`...)
	b = appendString(b, r.Stream)
	b = append(b, `,"record_id":`...)
	b = appendString(b, r.RecordID)
	for _, m := range [...]struct{ name, val string }{
		{`,"connection_id":`, r.ConnectionID}, {`,"connector_id":`, r.ConnectorID}, {`,"connector_key":`, r.ConnectorKey},
	} {
		if m.val != "" {
			b = append(b, m.name...)
			b = appendString(b, m.val)
		}
	}
	if len(r.MatchedFields) > 0 {
		b = append(b, `,"matched_fields":[`...)
		for i, f := range r.MatchedFields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f)
		}
		b = append(b, ']')
	}
	b = appendEvidence(b, r.EvidenceField, r.EvidencePreview, r.EvidenceComplete)
	b = append(b, `,"next":`...)
	if r.nextJSON != nil {
		b = append(b, r.nextJSON...)
	} else {
		b = r.Next.appendTo(b)
	}
	return append(b, '}')
}

// appendJSON appends l as a content_ladder.records[] entry of detail full.
func (l *LadderRecord) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, l.ID)
	b = appendEvidence(b, l.EvidenceField, l.EvidencePreview, l.EvidenceComplete)
	b = append(b, `,"next":`...)
	b = l.Next.appendTo(b)
	b = append(b, `,"fetch":`...)
	b = l.Fetch.appendTo(b)
	return append(b, '}')
}

// appendCompactLadder appends the compact content_ladder entry of the hit
// id: the id and its fetch call.
func appendCompactLadder(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"fetch":{"tool":`...)
	b = appendString(b, ToolFetch)
	b = append(b, `,"arguments":{"id":`...)
	b = appendString(b, id)
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

// appendIDEntry appends the entry of an item listed by its id alone,
// {"id": id}: a search hit in content_ladder.records[], a record in a
// query step's list.
func appendIDEntry(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	return append(b, '}')
}
