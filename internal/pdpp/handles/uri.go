package handles

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

// URI prefixes.
const (
	RecordURIPrefix      = "pdpp://record/"
	StreamURIPrefix      = "pdpp://stream/"
	FieldWindowURIPrefix = "pdpp://field-window/"
)

// RecordURI returns "pdpp://record/" followed by the record's id spelled
// (unseen.Spell: a character a person cannot see written out, so the URI
// decoded shows it) and escaped as one path segment (so "/" becomes %2F),
// which the resource template pdpp://record/{+handle} matches.
func RecordURI(ref RecordRef) string {
	return RecordURIPrefix + url.PathEscape(unseen.Spell(ref.ID()))
}

// ParseRecordURI parses a record URI in one of these forms (every segment
// is percent-decoded, then unspelled (unseen.Unspell), before it is
// checked):
//
//	pdpp://record/{escaped id}                       one segment holding a result id (RecordURI's form)
//	pdpp://record/{base64url JSON}                   one segment holding {"v":1,"kind":"record","connection_id","stream","record_id"}
//	pdpp://record/{connection_id}/{stream}:{record_id}  a result id pasted unescaped after the scheme
//	pdpp://record/{connection_id}/{stream}/{record_id}
//	pdpp://record/{stream}/{record_id}
//
// Anything else (another scheme or host, a query string or fragment, empty
// or extra segments, traversal) is an *mcpkit.ArgError with Code CodeInvalidID. Two
// segments whose second holds a literal ":" are a pasted result id
// (connection "c", stream "s", record_id "r" for pdpp://record/c/s:r); a
// record_id containing ":" in the {stream}/{record_id} form is written
// with the ":" escaped as %3A.
func ParseRecordURI(uri string) (RecordRef, error) {
	if len(uri) > MaxInputBytes {
		return RecordRef{}, idErr("record URI is %d bytes, over the %d-byte limit", len(uri), MaxInputBytes)
	}
	rest, ok := strings.CutPrefix(uri, RecordURIPrefix)
	if !ok {
		return RecordRef{}, idErr("%s is not a pdpp://record/ URI", quote(uri))
	}
	if strings.ContainsAny(rest, "?#") {
		return RecordRef{}, idErr("record URI %s has a query string or fragment, which record URIs never carry", quote(uri))
	}
	raw := strings.Split(rest, "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		if s == "" {
			return RecordRef{}, idErr("record URI %s has an empty path segment", quote(uri))
		}
		dec, err := url.PathUnescape(s)
		if err != nil {
			return RecordRef{}, idErr("record URI %s has malformed percent-encoding", quote(uri))
		}
		segs[i] = unseen.Unspell(dec)
	}
	var ref RecordRef
	switch len(segs) {
	case 1:
		handle := segs[0]
		if strings.HasPrefix(strings.ToLower(handle), "pdpp://") {
			return RecordRef{}, idErr("record URI %s wraps another URI", quote(uri))
		}
		if !strings.Contains(handle, ":") {
			if r, ok := decodeCanonicalRecord(handle); ok {
				return r, nil
			}
			return RecordRef{}, idErr("record URI %s holds neither a result id nor an encoded record reference", quote(uri))
		}
		return parseHandle(handle)
	case 2:
		if head, tail, ok := strings.Cut(raw[1], ":"); ok {
			// A result id pasted after the scheme: {connection_id}/{stream}:{record_id}.
			// Both parts unescape: raw[1] did, and no escape holds ":".
			stream, _ := url.PathUnescape(head)
			recordID, _ := url.PathUnescape(tail)
			ref = RecordRef{ConnectionID: segs[0], Stream: unseen.Unspell(stream), RecordID: unseen.Unspell(recordID)}
			break
		}
		ref = RecordRef{Stream: segs[0], RecordID: segs[1]}
	case 3:
		ref = RecordRef{ConnectionID: segs[0], Stream: segs[1], RecordID: segs[2]} // segments are never empty (checked above)
	default:
		return RecordRef{}, idErr("record URI %s has %d path segments; it takes one (an escaped id), two ({stream}/{record_id}) or three ({connection_id}/{stream}/{record_id})", quote(uri), len(segs))
	}
	if err := ref.Validate(); err != nil {
		return RecordRef{}, err
	}
	return ref, nil
}

// canonicalRecord is the base64url JSON record reference some PDPP
// components put in pdpp://record/ URIs.
type canonicalRecord struct {
	V            int     `json:"v"`
	Kind         string  `json:"kind"`
	ConnectionID *string `json:"connection_id"`
	Stream       string  `json:"stream"`
	RecordID     string  `json:"record_id"`
}

// decodeCanonicalRecord decodes the base64url JSON form; ok is false when
// the segment is not exactly that form or names an invalid record.
func decodeCanonicalRecord(seg string) (RecordRef, bool) {
	data, err := decodeBase64URL(seg, MaxInputBytes, false)
	if err != nil {
		return RecordRef{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c canonicalRecord
	if err := dec.Decode(&c); err != nil || dec.More() {
		return RecordRef{}, false
	}
	if c.V != 1 || c.Kind != "record" {
		return RecordRef{}, false
	}
	ref := RecordRef{Stream: c.Stream, RecordID: c.RecordID}
	if c.ConnectionID != nil {
		ref.ConnectionID = *c.ConnectionID
	}
	if ref.Validate() != nil {
		return RecordRef{}, false
	}
	return ref, true
}

// StreamURI returns "pdpp://stream/{name}".
func StreamURI(name string) string {
	return StreamURIPrefix + url.PathEscape(name)
}

// ParseStreamURI returns the stream named by "pdpp://stream/{name}". The
// name is percent-decoded and must satisfy ValidName; anything else is an
// *mcpkit.ArgError with Code CodeInvalidURI.
func ParseStreamURI(uri string) (string, error) {
	const example = `; stream URIs look like "pdpp://stream/transcripts"`
	if len(uri) > MaxInputBytes {
		return "", uriErr("stream URI is over the %d-byte limit%s", MaxInputBytes, example)
	}
	rest, ok := strings.CutPrefix(uri, StreamURIPrefix)
	if !ok {
		return "", uriErr("%s is not a pdpp://stream/ URI%s", quote(uri), example)
	}
	if strings.ContainsAny(rest, "/?#") {
		return "", uriErr("stream URI %s has extra path segments, a query string or a fragment%s", quote(uri), example)
	}
	name, err := url.PathUnescape(rest)
	if err != nil || !ValidName(name) {
		return "", uriErr("stream URI %s does not name a valid stream%s", quote(uri), example)
	}
	return name, nil
}
