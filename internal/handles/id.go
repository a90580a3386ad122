package handles

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Segment bounds.
const (
	MaxNameBytes     = 128  // connection_id and stream
	MaxRecordIDBytes = 512  // record_id
	MaxInputBytes    = 4096 // any id or URI handed to a parser
)

// RecordRef identifies one record. ConnectionID is empty when the
// connection is not known (legacy ids); Stream and RecordID are required.
type RecordRef struct {
	ConnectionID string
	Stream       string
	RecordID     string
}

// ValidName reports whether s is an acceptable connection_id or stream:
// ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case i > 0 && (c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// recordIDProblem describes why id is not an acceptable record_id, or
// returns "" when it is. A record_id is 1..512 bytes of valid UTF-8 with no
// control characters, no "/" or "\", no leading or trailing white space, is
// not "." or "..", and does not turn into any of those by percent-decoding.
func recordIDProblem(id string) string {
	switch {
	case id == "":
		return "record_id is empty"
	case len(id) > MaxRecordIDBytes:
		return fmt.Sprintf("record_id is %d bytes, over the %d-byte limit", len(id), MaxRecordIDBytes)
	case !utf8.ValidString(id):
		return "record_id is not valid UTF-8"
	}
	if p := unsafeSegment(id); p != "" {
		return "record_id " + p
	}
	first, _ := utf8.DecodeRuneInString(id)
	last, _ := utf8.DecodeLastRuneInString(id)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return "record_id starts or ends with white space"
	}
	if strings.Contains(id, "%") {
		if dec, err := url.PathUnescape(id); err == nil {
			if p := unsafeSegment(dec); p != "" {
				return "record_id, once percent-decoded, " + p
			}
		}
	}
	return ""
}

// unsafeSegment describes why s cannot be one path segment ("" if it can).
func unsafeSegment(s string) string {
	if s == "." || s == ".." {
		return `is "." or ".." (path traversal)`
	}
	if strings.ContainsAny(s, `/\`) {
		return `contains "/" or "\"`
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}

// Validate checks every segment of the reference; errors are *Error with
// Code CodeInvalidID.
func (r RecordRef) Validate() error {
	if p := r.problem(); p != "" {
		return idErr("%s", p)
	}
	return nil
}

// problem describes the first invalid segment, or returns "".
func (r RecordRef) problem() string {
	const rule = `letters, digits, "_", "." and "-", at most 128 bytes, not starting with "." or "-"`
	switch {
	case r.ConnectionID != "" && !ValidName(r.ConnectionID):
		return fmt.Sprintf("connection_id %s is not valid (%s)", quote(r.ConnectionID), rule)
	case r.Stream == "":
		return "stream is empty"
	case !ValidName(r.Stream):
		return fmt.Sprintf("stream %s is not valid (%s)", quote(r.Stream), rule)
	}
	return recordIDProblem(r.RecordID)
}

// ID returns the result id: "{connection_id}/{stream}:{record_id}" when the
// connection is known, else the legacy "{stream}:{record_id}". It does not
// validate; ParseID(r.ID()) returns r for every r that passes Validate.
func (r RecordRef) ID() string {
	if r.ConnectionID != "" {
		return r.ConnectionID + "/" + r.Stream + ":" + r.RecordID
	}
	return r.Stream + ":" + r.RecordID
}

// ParseID parses a record id in any accepted form: the self-contained
// "{connection_id}/{stream}:{record_id}", the legacy "{stream}:{record_id}",
// a record URI (see ParseRecordURI), or a field-window URI (its record; see
// ParseFieldWindowURI). The stream ends at the first ":",
// so record ids may contain ":". Errors are *Error with Code CodeInvalidID.
func ParseID(s string) (RecordRef, error) {
	if len(s) > MaxInputBytes {
		return RecordRef{}, idErr("id is %d bytes, over the %d-byte limit", len(s), MaxInputBytes)
	}
	if s == "" {
		return RecordRef{}, idErr("id is empty")
	}
	if strings.HasPrefix(s, FieldWindowURIPrefix) {
		// A field-window handle names its record too.
		w, err := ParseFieldWindowURI(s)
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.Code, e.Param = CodeInvalidID, ParamID
			}
			return RecordRef{}, err
		}
		return w.Record, nil
	}
	if strings.HasPrefix(strings.ToLower(s), "pdpp://") {
		return ParseRecordURI(s)
	}
	return parseHandle(s)
}

// parseHandle parses the two plain id grammars.
func parseHandle(s string) (RecordRef, error) {
	head, recordID, ok := strings.Cut(s, ":")
	if !ok {
		return RecordRef{}, idErr("id %s has no \":\" between stream and record_id", quote(s))
	}
	var ref RecordRef
	switch parts := strings.Split(head, "/"); len(parts) {
	case 1:
		ref.Stream = parts[0]
	case 2:
		if parts[0] == "" {
			return RecordRef{}, idErr("id %s has an empty connection_id before \"/\"", quote(s))
		}
		ref.ConnectionID, ref.Stream = parts[0], parts[1]
	default:
		return RecordRef{}, idErr("id %s has more than one \"/\" before the stream", quote(s))
	}
	ref.RecordID = recordID
	if err := ref.Validate(); err != nil {
		return RecordRef{}, err
	}
	return ref, nil
}

// ResolveConnection combines the connection named by an id with a separate
// connection_id argument. When both are set they must be equal (else
// CodeConflictingConnectionID); when only the argument is set it is
// validated (CodeInvalidConnectionID) and filled in.
func ResolveConnection(ref RecordRef, argConnectionID string) (RecordRef, error) {
	if argConnectionID == "" {
		return ref, nil
	}
	if !ValidName(argConnectionID) {
		return RecordRef{}, &Error{Code: CodeInvalidConnectionID, Param: ParamConnectionID, Message: fmt.Sprintf(
			"connection_id %s is not valid; pass a connection_id exactly as the schema or a result listed it, e.g. \"cin_3325c9636dab3a5344743485\"", quote(argConnectionID))}
	}
	if ref.ConnectionID != "" && ref.ConnectionID != argConnectionID {
		other := RecordRef{ConnectionID: argConnectionID, Stream: ref.Stream, RecordID: ref.RecordID}
		return RecordRef{}, &Error{Code: CodeConflictingConnectionID, Param: ParamConnectionID, Message: fmt.Sprintf(
			"id names connection %s but connection_id is %s; drop connection_id (the id already names its connection: %s) or use the id of the record in connection %s, e.g. %s",
			quote(ref.ConnectionID), quote(argConnectionID), quote(ref.ID()), quote(argConnectionID), quote(other.ID()))}
	}
	ref.ConnectionID = argConnectionID
	return ref, nil
}
