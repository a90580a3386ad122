package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// Header names.
const (
	HeaderRequestID   = "X-Request-Id"
	HeaderTraceParent = "Traceparent"
	HeaderTraceState  = "Tracestate"
)

// Bounds on accepted incoming values; anything longer is dropped (the id is
// replaced by a generated one, trace context is not forwarded).
const (
	maxIDLen          = 128
	maxTraceParentLen = 256
	// maxTraceStateLen bounds the whole tracestate (all its headers joined)
	// and maxTraceStateMembers its list members, the figures W3C Trace
	// Context sets for what a vendor must propagate.
	maxTraceStateLen     = 512
	maxTraceStateMembers = 32
)

// knownTraceFlags are the trace-flags bits defined for version 00: sampled
// (0x01) and random trace id (0x02). Others are cleared when a traceparent is
// re-encoded, since their meaning in a later version is unknown.
const knownTraceFlags = 0x03

// Info is the correlation data of one call.
type Info struct {
	ID          string // never empty once attached by FromRequest
	TraceParent string // version-00 traceparent re-encoded from a valid incoming one, or ""
	TraceState  string // re-encoded valid tracestate, only alongside TraceParent
}

type ctxKey struct{}

// With returns ctx carrying info.
func With(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, ctxKey{}, info)
}

// From returns the Info in ctx and whether there was one.
func From(ctx context.Context) (Info, bool) {
	info, ok := ctx.Value(ctxKey{}).(Info)
	return info, ok
}

// ID returns the request id in ctx, or "".
func ID(ctx context.Context) string {
	info, _ := From(ctx)
	return info.ID
}

// FromRequest reads the correlation headers of an incoming request: a sane
// X-Request-Id is kept (otherwise a new id is generated). A well-formed
// traceparent (exactly one header) is kept in the version-00 form rebuilt
// from its parsed fields, whatever version it came in, so nothing a client
// appended after them is ever forwarded; a tracestate is kept, re-encoded,
// only with such a traceparent and only when every list member is valid
// and the whole fits maxTraceStateLen (otherwise it is dropped).
func FromRequest(r *http.Request) Info {
	info := Info{ID: strings.TrimSpace(r.Header.Get(HeaderRequestID))}
	if !SaneID(info.ID) {
		info.ID = New()
	}
	parents := r.Header.Values(HeaderTraceParent)
	if len(parents) != 1 {
		return info
	}
	if tp, ok := ParseTraceParent(strings.TrimSpace(parents[0])); ok {
		info.TraceParent = tp.String()
		info.TraceState, _ = cleanTraceState(r.Header.Values(HeaderTraceState))
	}
	return info
}

// Inject sets the correlation headers of ctx on an outgoing request header.
func Inject(ctx context.Context, h http.Header) {
	info, _ := From(ctx) // none: nothing to set
	if info.ID != "" {
		h.Set(HeaderRequestID, info.ID)
	}
	if info.TraceParent != "" {
		h.Set(HeaderTraceParent, info.TraceParent)
		if info.TraceState != "" {
			h.Set(HeaderTraceState, info.TraceState)
		}
	}
}

// New returns a fresh random request id (32 hex digits).
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SaneID reports whether an incoming request id may be reused: 1 to 128
// characters from [A-Za-z0-9._:-], so it cannot break a log line or a header.
func SaneID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// TraceParent holds the fields of a W3C traceparent that version 00 defines.
type TraceParent struct {
	TraceID  string // 32 lower-case hex digits, not all zero
	ParentID string // 16 lower-case hex digits, not all zero
	Flags    byte   // trace-flags, limited to knownTraceFlags
}

// String encodes t in the version-00 form 00-traceid-parentid-flags.
func (t TraceParent) String() string {
	const hexDigits = "0123456789abcdef"
	return "00-" + t.TraceID + "-" + t.ParentID + "-" + string([]byte{hexDigits[t.Flags>>4], hexDigits[t.Flags&0x0f]})
}

// ParseTraceParent reads the W3C trace-context form
// version-traceid-parentid-flags: 2, 32, 16 and 2 lower-case hex digits,
// version not ff, trace id and parent id not all zero. Version 00 has
// exactly these four fields; a later version may append more after a "-",
// which are checked for nothing but length and never kept. At most
// maxTraceParentLen bytes are looked at.
func ParseTraceParent(s string) (TraceParent, bool) {
	if len(s) > maxTraceParentLen {
		return TraceParent{}, false // before splitting: a long header of dashes costs nothing
	}
	parts := strings.SplitN(s, "-", 5)
	if len(parts) < 4 {
		return TraceParent{}, false
	}
	ver, trace, parent, flags := parts[0], parts[1], parts[2], parts[3]
	if !lowerHex(ver, 2) || ver == "ff" || !lowerHex(trace, 32) || !lowerHex(parent, 16) || !lowerHex(flags, 2) ||
		ver == "00" && len(parts) != 4 || strings.Trim(trace, "0") == "" || strings.Trim(parent, "0") == "" {
		return TraceParent{}, false
	}
	f, _ := strconv.ParseUint(flags, 16, 8)
	return TraceParent{TraceID: trace, ParentID: parent, Flags: byte(f) & knownTraceFlags}, true
}

// cleanTraceState joins the tracestate headers of a request and checks them
// as W3C Trace Context does: at most maxTraceStateLen bytes in all, at most
// maxTraceStateMembers list members, each a valid key=value with no key
// repeated; empty members (blank between commas) are skipped. It returns
// the members joined by "," without surrounding white space, or false (and
// "") when any of that fails: the whole tracestate is then dropped.
func cleanTraceState(values []string) (string, bool) {
	joined := strings.Join(values, ",")
	if len(joined) > maxTraceStateLen {
		return "", false
	}
	var members []string
	keys := map[string]bool{}
	for _, m := range strings.Split(joined, ",") {
		m = strings.Trim(m, " \t")
		if m == "" {
			continue
		}
		key, value, ok := strings.Cut(m, "=")
		if !ok || !validTraceStateKey(key) || !validTraceStateValue(value) || keys[key] {
			return "", false
		}
		keys[key] = true
		members = append(members, m)
		if len(members) > maxTraceStateMembers {
			return "", false
		}
	}
	return strings.Join(members, ","), true
}

// validTraceStateKey checks simple-key (lcalpha then up to 255 of lcalpha,
// digit, "_", "-", "*", "/") or multi-tenant-key (tenant-id "@" system-id:
// lcalpha or digit then up to 240 such characters, "@", lcalpha then up to
// 13).
func validTraceStateKey(k string) bool {
	tenant, system, multi := strings.Cut(k, "@")
	if !multi {
		return len(k) >= 1 && len(k) <= 256 && isLCAlpha(k[0]) && keyChars(k[1:])
	}
	return len(tenant) >= 1 && len(tenant) <= 241 && (isLCAlpha(tenant[0]) || isDigit(tenant[0])) && keyChars(tenant[1:]) &&
		len(system) >= 1 && len(system) <= 14 && isLCAlpha(system[0]) && keyChars(system[1:])
}

func keyChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLCAlpha(c) && !isDigit(c) && c != '_' && c != '-' && c != '*' && c != '/' {
			return false
		}
	}
	return true
}

// validTraceStateValue checks 1 to 256 printable ASCII characters other
// than "," and "=", spaces allowed except at the end.
func validTraceStateValue(v string) bool {
	if len(v) < 1 || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

func isLCAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool   { return c >= '0' && c <= '9' }

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
