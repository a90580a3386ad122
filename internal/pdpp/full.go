package pdpp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/splice"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// DefaultFullMaxBytes is the default ceiling of one detail "full" reply. It
// is far above every compact budget (at most 32 KiB), so full still shows
// a whole page or record of ordinary size, and far below what a host
// accepts in one tool result and what a pod of 256 MiB can hold for a few
// such calls at once.
const DefaultFullMaxBytes = 4 << 20

// MinFullMaxBytes is the lowest ceiling accepted: full is never smaller
// than compact.
const MinFullMaxBytes = 64 << 10

// FullBodyMargin is what an RS body may pass the full ceiling by before its
// read stops: the envelope members a full reply does not repeat (links,
// meta) are allowed for; a body that long cannot fit a reply anyway.
const FullBodyMargin = 64 << 10

// CodeFullTooLarge is the code of a detail "full" call whose reply would
// pass the operator's ceiling.
const CodeFullTooLarge = "full_too_large"

// fullTooLarge is the typed refusal of a detail "full" reply over the
// ceiling of max bytes (size: the reply's size when known, else 0). It
// names the same call without detail, which is within the tool's budget,
// and the bounded ways that tool has to read the rest.
func fullTooLarge(tool string, args map[string]any, max, size int64) *rs.Error {
	how := cmp.Or(boundedReads[tool], "call it without detail")
	over := fmt.Sprintf("more than %d bytes", max)
	if size > 0 {
		over = fmt.Sprintf("%d bytes, more than %d", size, max)
	}
	extra := map[string]any{"max_full_bytes": max}
	if size > 0 {
		extra["full_bytes"] = size
	}
	return fullRefusal(tool, args, CodeFullTooLarge, fmt.Sprintf(`detail "full" would return %s, this server's ceiling for one reply (--full-max-bytes); read the same data in bounded steps instead: %s`, over, how), extra)
}

// boundedReads says, by tool, how to read a full reply's data in bounded
// steps instead.
var boundedReads = map[string]string{
	"fetch":                    "call it without detail: long fields come as previews, each with the read_record_field call that reads it in windows; or project with fields",
	"read_record_field":        "read smaller windows (limit_chars) without detail",
	"query_records":            "call it without detail and follow structuredContent.next step by step; narrow with fields or a smaller limit",
	"search":                   "call it without detail and follow structuredContent.next step by step, or ask for a smaller limit",
	"list_event_subscriptions": "call it without detail and follow structuredContent.next step by step, or ask for a smaller limit",
}

// fullRefusal is the typed refusal (code, naming detail) of a detail
// "full" call of tool with args, with message and the members extra; it
// names the same call without detail as next_step and bounded_read.
func fullRefusal(tool string, args map[string]any, code, message string, extra map[string]any) *rs.Error {
	compact := maps.Clone(args)
	delete(compact, "detail")
	if compact == nil {
		compact = map[string]any{}
	}
	call := evidence.Continuation{Tool: tool, Arguments: compact}
	obj := map[string]any{"type": "adapter_error", "code": code, "param": "detail", "message": message,
		"next_step": call.Call(), "bounded_read": call}
	maps.Copy(obj, extra)
	env, _ := json.Marshal(map[string]any{"error": obj})
	return &rs.Error{Envelope: env}
}

// fullReply finishes a detail "full" result: text, the structured members
// in head (anything that encodes to a JSON object) and, when body is not
// nil, the RS body verbatim as member key. Its size as the transports send
// it is checked against the ceiling first (past it: full_too_large). The
// members are encoded once, without HTML escaping, and reserved as bytes
// in flight; the body, reserved by its read, is passed by reference
// (package splice), neither copied nor re-encoded, and stays reserved
// until the reply carrying it is written.
//
// Full data stays exact, but a character a person cannot see is written
// as a longer \u escape (package unseen; a tag character: 4 bytes raw, 12
// escaped). One walk of each part counts the escaped size
// (unseen.EscapedLen) before any copy is built: a reply over the ceiling
// once escaped is refused without one, and the growth of one that fits is
// reserved before it is built. Where such characters are is said in the
// member "hidden" (evidence.HiddenReport) and a line of text. An RS body
// that is not UTF-8 is refused (full_not_utf8): the RS body exactly or nothing.
func (a *Adapter) fullReply(ctx context.Context, tool string, args map[string]any, text string, head any, key string, body []byte) *mcp.CallToolResult {
	members, err := evidence.MarshalNoEscape(head)
	if err != nil || len(members) < 2 || members[0] != '{' {
		return errorResult(rs.AdapterError("internal_error", "full reply members are not an object", ""), tool, args)
	}
	if body != nil && !utf8.Valid(body) {
		return errorResult(fullNotUTF8(tool, args, body), tool, args)
	}
	var hidden evidence.HiddenReport // the RS data first, then the members beside it
	if body != nil {
		hidden.Find(body, "/"+evidence.PointerEscaper.Replace(key))
	}
	hidden.Find(members, "")
	if hidden.Count > 0 {
		more := len(members) > 2
		members = hidden.AppendJSON(members[:len(members)-1:len(members)-1], more)
		members = append(members, '}')
		text += hidden.Text()
	}
	// Escaping only lengthens: the sizes once escaped, counted, not built.
	escMembers, escBody := unseen.EscapedLen(members), unseen.EscapedLen(body)
	grown := escMembers - len(members) + escBody - len(body)
	size := int64(resultOverhead + evidence.JSONStringLen(text) + escMembers)
	if body != nil {
		size += int64(len(key) + 4 + escBody)
	}
	if size > a.fullMax {
		return errorResult(fullTooLarge(tool, args, a.fullMax, size), tool, args)
	}
	acct := inflight.FromContext(ctx)
	built := int64(escMembers + len(text))
	if body == nil {
		// The reply is built from the RS body, not carried with it: what
		// the call read is no longer needed, so its reservation is given
		// back before the members' is waited for. A call never waits while
		// it holds bytes, so calls cannot wait on one another.
		acct.Release(acct.Held())
		if err := acct.Reserve(ctx, built); err != nil {
			return errorResult(busyError(err), tool, args)
		}
		return okResult(text, json.RawMessage(unseen.EscapeJSON(members)), grown > 0)
	}
	if escBody > len(body) {
		// The escaped copy of the body is reserved, beside the body, before
		// it is built (both are held while it is built, and the body is
		// reserved until the reply is written). When that is not free at
		// once, the call gives back what it holds and waits for all of it,
		// so it never waits while holding bytes. The copy is at most the
		// ceiling, and so is the body, which is shorter: the bound on
		// bytes in flight holds both (cli checks it at start).
		need := built + int64(escBody)
		if !acct.TryReserve(need) {
			held := acct.Held()
			acct.Release(held)
			if err := acct.Reserve(ctx, held+need); err != nil {
				return errorResult(busyError(err), tool, args)
			}
		}
		body = unseen.EscapeJSON(body)
	} else {
		// The members beside the body are small (ids, flags, a bounded
		// text) and are reserved only if free at once, for a call that
		// holds its body must not wait behind calls waiting for bodies.
		acct.TryReserve(built + int64(grown))
	}
	members = unseen.EscapeJSON(members)
	v := splice.Value(ctx, body, acct.Retain())
	value, ok := v.(json.RawMessage) // no splice store (an in-process client): the library encodes it
	if !ok {
		value, _ = json.Marshal(v)
	}
	keyJSON, _ := json.Marshal(key)
	out := append(make([]byte, 0, len(members)+len(keyJSON)+len(value)+2), members[:len(members)-1]...)
	if len(members) > 2 {
		out = append(out, ',')
	}
	out = append(append(append(out, keyJSON...), ':'), value...)
	return okResult(text, json.RawMessage(append(out, '}')), grown > 0)
}

// fullBodyOver refuses (full_too_large) a detail "full" call whose RS body
// alone, once its hidden characters are escaped, passes the ceiling, so
// that its reply would: checked as soon as the body is read, before
// anything is rendered from it, in one scan (unseen.EscapedLen). A body
// without hidden characters passes; fullReply measures its reply.
func (a *Adapter) fullBodyOver(tool string, args map[string]any, body []byte) error {
	if n := unseen.EscapedLen(body); n > len(body) && int64(n) > a.fullMax {
		return fullTooLarge(tool, args, a.fullMax, 0)
	}
	return nil
}

// CodeFullNotUTF8 is the code of a detail "full" call whose RS body is not
// UTF-8: full data is the body exactly, and JSON holds only UTF-8.
const CodeFullNotUTF8 = "full_not_utf8"

// fullNotUTF8 is the typed refusal of a detail "full" reply whose RS body
// is not UTF-8. It names where the first bad byte is and the same call
// without detail, whose text and structured output show each bad byte as
// U+FFFD.
func fullNotUTF8(tool string, args map[string]any, body []byte) *rs.Error {
	at := 0
	for at < len(body) {
		r, n := utf8.DecodeRune(body[at:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		at += n
	}
	return fullRefusal(tool, args, CodeFullNotUTF8, fmt.Sprintf(`detail "full" returns the RS data exactly, and the RS answer is not UTF-8 (first bad byte at offset %d), which JSON cannot carry; refused rather than changed. The same call without detail shows each bad byte as U+FFFD`, at), nil)
}

// busyError is the typed error of a reservation of bytes in flight that
// failed (any other error is passed on as it is).
func busyError(err error) error {
	if be, ok := err.(*inflight.BusyError); ok {
		return rs.BusyError(be)
	}
	return err
}
