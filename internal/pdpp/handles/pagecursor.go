package handles

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// A page cursor resumes a compact list reply where it stopped: at an item
// of an RS page that the reply did not show. It wraps the RS cursor of
// that page (empty for the first page), so the adapter can read the same
// page again, and says where in it to resume, what the page held before
// that position (to notice a page that changed meanwhile) and which call
// it continues (to refuse arguments that contradict it).
//
// Its form is PageCursorPrefix, the unpadded base64url of a small JSON
// header, "~", then the RS cursor as it is. The prefix holds "~", which
// neither base64 alphabet has, so no base64 RS cursor is ever mistaken
// for a page cursor, and an RS cursor passed back as it was keeps working.
const PageCursorPrefix = "pc1~"

// Page cursor limits.
const (
	// MaxPageCursorBytes is the bound of a cursor argument of a list tool,
	// RS cursors and page cursors alike: the catalog format page_cursor.
	MaxPageCursorBytes = 4096
	// MaxPagePosition bounds the resume position: no RS page this adapter
	// reads holds more items (the RS caps a page at 100).
	MaxPagePosition = 10000
	// pageHeaderBytes bounds the base64url header of a page cursor; the
	// header JSON of the largest position is 55 bytes.
	pageHeaderBytes = 96
	// digestBytes is how many bytes of SHA-256 a digest keeps (72 bits):
	// enough to tell a changed page or other arguments from the ones a
	// cursor was made for, not a security boundary.
	digestBytes = 9
)

// MaxWrappedRSCursorBytes is the longest RS cursor a page cursor can wrap
// and stay within MaxPageCursorBytes.
const MaxWrappedRSCursorBytes = MaxPageCursorBytes - len(PageCursorPrefix) - pageHeaderBytes - 1

// PageCursor is the decoded form of a page cursor.
type PageCursor struct {
	// RS is the RS cursor that reads the page again; "" for the first page.
	RS string
	// Pos is the index in the page of the first item not yet shown:
	// 1..MaxPagePosition.
	Pos int
	// Seen is the Digest of the ids of the page's items before Pos, as
	// the page held them when the cursor was made.
	Seen string
	// Call is the Digest of the call the cursor continues: its other
	// arguments (canonical JSON) and RS.
	Call string
}

// pageHeader is the JSON inside a page cursor, with short keys.
type pageHeader struct {
	P int    `json:"p"`
	S string `json:"s"`
	A string `json:"a"`
}

// Digest is a short fingerprint of parts, in order: the unpadded base64url
// of the first digestBytes bytes of SHA-256 over each part prefixed by its
// length, so no two different lists of parts share an input. It makes one
// pass over the parts (a page's ids: bounded by the page).
func Digest(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:digestBytes])
}

// digestChars is the length of a Digest.
var digestChars = base64.RawURLEncoding.EncodedLen(digestBytes)

// IsPageCursor reports whether s has the page cursor prefix; anything else
// a list tool receives as cursor is an RS cursor.
func IsPageCursor(s string) bool { return strings.HasPrefix(s, PageCursorPrefix) }

// EncodePageCursor returns the page cursor of c, or false when c is not
// valid or its RS cursor is too long to wrap (over
// MaxWrappedRSCursorBytes).
func EncodePageCursor(c PageCursor) (string, bool) {
	if c.problem() != "" || len(c.RS) > MaxWrappedRSCursorBytes {
		return "", false
	}
	return encodePageCursor(c), true
}

func encodePageCursor(c PageCursor) string {
	data, _ := json.Marshal(pageHeader{P: c.Pos, S: c.Seen, A: c.Call}) // strings and an int always encode
	return PageCursorPrefix + base64.RawURLEncoding.EncodeToString(data) + "~" + c.RS
}

// problem says what makes c invalid, or returns "".
func (c PageCursor) problem() string {
	switch {
	case c.Pos < 1 || c.Pos > MaxPagePosition:
		return fmt.Sprintf("position %d is outside 1..%d", c.Pos, MaxPagePosition)
	case !isDigest(c.Seen) || !isDigest(c.Call):
		return "digest is malformed"
	case mcptools.FormatPageCursor.Problem(c.RS) != "" && c.RS != "":
		return "wrapped RS cursor " + mcptools.FormatPageCursor.Problem(c.RS)
	}
	return ""
}

func isDigest(s string) bool { return len(s) == digestChars && isBase64URL(s) }

// DecodePageCursor parses a page cursor made by EncodePageCursor. It is
// strict: the prefix and version must match, the cursor is at most
// MaxPageCursorBytes, the header must be the canonical unpadded base64url
// of the exact JSON EncodePageCursor writes, and every member is checked
// again. Errors are *mcpkit.ArgError with Code CodeInvalidCursor and
// Param "cursor". What the cursor is checked against (the call's other
// arguments, the page read again) is the caller's to compare.
func DecodePageCursor(s string) (PageCursor, error) {
	if len(s) > MaxPageCursorBytes {
		return PageCursor{}, pageCursorErr("cursor is %d bytes, over the %d-byte limit", len(s), MaxPageCursorBytes)
	}
	rest, ok := strings.CutPrefix(s, PageCursorPrefix)
	if !ok {
		return PageCursor{}, pageCursorErr("%s is not a page cursor (they start with %q)", quote(s), PageCursorPrefix)
	}
	header, rs, ok := strings.Cut(rest, "~")
	if !ok || header == "" {
		return PageCursor{}, pageCursorErr("cursor has no header")
	}
	data, err := decodeBase64URL(header, pageHeaderBytes, true)
	if err != nil {
		return PageCursor{}, pageCursorErr("cursor header is not valid base64url of at most %d bytes", pageHeaderBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var h pageHeader
	if err := dec.Decode(&h); err != nil || dec.More() {
		return PageCursor{}, pageCursorErr("cursor header does not hold a page position")
	}
	c := PageCursor{RS: rs, Pos: h.P, Seen: h.S, Call: h.A}
	if p := c.problem(); p != "" {
		return PageCursor{}, pageCursorErr("cursor %s", p)
	}
	if encodePageCursor(c) != s {
		return PageCursor{}, pageCursorErr("cursor is not in canonical form (it was altered)")
	}
	return c, nil
}

// pageCursorErr is the invalid_cursor error of a page cursor argument.
func pageCursorErr(format string, args ...any) *mcpkit.ArgError {
	return argErr(CodeInvalidCursor, ParamCursor, fmt.Sprintf(format, args...)+
		"; pass next.arguments exactly as the previous reply gave them, or drop cursor to read the page from its start")
}
