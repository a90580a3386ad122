package handles

import (
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
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

// ValidName reports whether s is an acceptable connection_id, stream or
// blob id: the catalog format "name" (mcptools.FormatName),
// ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ and at most MaxNameBytes bytes.
func ValidName(s string) bool {
	return mcptools.FormatName.Valid(s)
}

// Validate checks every segment of the reference; errors are *mcpkit.ArgError with
// Code CodeInvalidID.
func (r RecordRef) Validate() error {
	if p := r.problem(); p != "" {
		return idErr("%s", p)
	}
	return nil
}

// problem describes the first invalid segment, or returns "". A record_id
// follows the catalog format "record_id" (mcptools.FormatRecordID):
// 1..MaxRecordIDBytes bytes of valid UTF-8 with no control characters, no
// "/" or "\", no leading or trailing white space, not "." or "..", and not
// turning into any of those by percent-decoding.
func (r RecordRef) problem() string {
	rule := mcptools.FormatName.Description
	switch {
	case r.ConnectionID != "" && !ValidName(r.ConnectionID):
		return fmt.Sprintf("connection_id %s is not valid (%s)", quote(r.ConnectionID), rule)
	case r.Stream == "":
		return "stream is empty"
	case !ValidName(r.Stream):
		return fmt.Sprintf("stream %s is not valid (%s)", quote(r.Stream), rule)
	}
	if p := mcptools.FormatRecordID.Problem(r.RecordID); p != "" {
		return "record_id " + quote(r.RecordID) + " " + p + " (allowed: " + mcptools.FormatRecordID.Description + ")"
	}
	return ""
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
// so record ids may contain ":". Errors are *mcpkit.ArgError with Code CodeInvalidID.
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
			if e, ok := err.(*mcpkit.ArgError); ok {
				e.Code, e.Field = CodeInvalidID, ParamID
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
		return RecordRef{}, argErr(CodeInvalidConnectionID, ParamConnectionID, fmt.Sprintf(
			"connection_id %s is not valid; pass a connection_id exactly as the schema or a result listed it, e.g. \"cin_3325c9636dab3a5344743485\"", quote(argConnectionID)))
	}
	if ref.ConnectionID != "" && ref.ConnectionID != argConnectionID {
		other := RecordRef{ConnectionID: argConnectionID, Stream: ref.Stream, RecordID: ref.RecordID}
		return RecordRef{}, argErr(CodeConflictingConnectionID, ParamConnectionID, fmt.Sprintf(
			"id names connection %s but connection_id is %s; drop connection_id (the id already names its connection: %s) or use the id of the record in connection %s, e.g. %s",
			quote(ref.ConnectionID), quote(argConnectionID), quote(ref.ID()), quote(argConnectionID), quote(other.ID())))
	}
	ref.ConnectionID = argConnectionID
	return ref, nil
}

// Error codes returned in the Code of a rejected handle's *mcpkit.ArgError.
const (
	CodeInvalidID               = "invalid_id"
	CodeInvalidConnectionID     = "invalid_connection_id"
	CodeConflictingConnectionID = "conflicting_connection_id"
	CodeInvalidCursor           = "invalid_cursor"
	CodeInvalidURI              = "invalid_uri"
	CodeInvalidArgument         = "invalid_argument"
)

// Argument names returned in the Field of a rejected handle's
// *mcpkit.ArgError.
const (
	ParamID           = "id"
	ParamConnectionID = "connection_id"
	ParamCursor       = "cursor"
	ParamURI          = "uri"
	ParamFieldPath    = "field_path"
	ParamOffsetChars  = "offset_chars"
	ParamLimitChars   = "limit_chars"
	ParamQ            = "q"
	ParamBeforeChars  = "before_chars"
	ParamAfterChars   = "after_chars"
)

// argErr builds the *mcpkit.ArgError of a rejected handle.
func argErr(code, param, msg string) *mcpkit.ArgError {
	return &mcpkit.ArgError{Code: code, Field: param, Message: msg}
}

// withParam makes param the argument named by err, a rejected handle this
// package built, and returns err: a cursor or field-window URI met inside
// another argument is reported against that argument.
func withParam(err error, param string) error {
	if e, ok := err.(*mcpkit.ArgError); ok {
		e.Field = param
	}
	return err
}

// idForms is appended to every invalid_id message.
const idForms = `use "{connection_id}/{stream}:{record_id}" (e.g. "cin_3325c9636dab3a5344743485/transcripts:tr-5"), "{stream}:{record_id}" (e.g. "transcripts:tr-5") or a pdpp://record/... URI exactly as it was returned`

func idErr(format string, args ...any) error {
	return argErr(CodeInvalidID, ParamID, fmt.Sprintf(format, args...)+"; "+idForms)
}

func cursorErr(param, format string, args ...any) error {
	return argErr(CodeInvalidCursor, param, fmt.Sprintf(format, args...)+
		"; pass the cursor exactly as a previous read_record_field result returned it, or read the field again with explicit offsets")
}

func uriErr(format string, args ...any) error {
	return argErr(CodeInvalidURI, ParamURI, fmt.Sprintf(format, args...))
}

// quote renders untrusted text for a message, shortened when long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
