package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
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
	maxTraceStateLen  = 512
)

// Info is the correlation data of one call.
type Info struct {
	ID          string // never empty once attached by FromRequest
	TraceParent string // validated W3C traceparent, or ""
	TraceState  string // forwarded only alongside a valid TraceParent
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
// X-Request-Id is kept (otherwise a new id is generated), a well-formed
// traceparent and its tracestate are kept (otherwise both are dropped).
func FromRequest(r *http.Request) Info {
	info := Info{ID: strings.TrimSpace(r.Header.Get(HeaderRequestID))}
	if !SaneID(info.ID) {
		info.ID = New()
	}
	if tp := strings.TrimSpace(r.Header.Get(HeaderTraceParent)); ValidTraceParent(tp) {
		info.TraceParent = tp
		ts := strings.Join(r.Header.Values(HeaderTraceState), ",")
		if len(ts) <= maxTraceStateLen && printableASCII(ts) {
			info.TraceState = ts
		}
	}
	return info
}

// Inject sets the correlation headers of ctx on an outgoing request header.
func Inject(ctx context.Context, h http.Header) {
	info, ok := From(ctx)
	if !ok {
		return
	}
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

// ValidTraceParent checks the W3C trace-context form
// version-traceid-parentid-flags: 2, 32, 16 and 2 lower-case hex digits,
// version not ff, trace id and parent id not all zero. Future versions may
// append fields after the flags, which are accepted.
func ValidTraceParent(s string) bool {
	if len(s) > maxTraceParentLen {
		return false // before splitting: a long header of dashes costs nothing
	}
	parts := strings.Split(s, "-")
	if len(parts) < 4 {
		return false
	}
	ver, trace, parent, flags := parts[0], parts[1], parts[2], parts[3]
	if !lowerHex(ver, 2) || ver == "ff" || !lowerHex(trace, 32) || !lowerHex(parent, 16) || !lowerHex(flags, 2) {
		return false
	}
	if ver == "00" && len(parts) != 4 {
		return false
	}
	return strings.Trim(trace, "0") != "" && strings.Trim(parent, "0") != ""
}

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

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
