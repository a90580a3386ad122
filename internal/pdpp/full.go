package pdpp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"

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
	compact := maps.Clone(args)
	delete(compact, "detail")
	call := evidence.Continuation{Tool: tool, Arguments: compact}
	if compact == nil {
		call.Arguments = map[string]any{}
	}
	var how string
	switch tool {
	case "fetch":
		how = "call it without detail: long fields come as previews, each with the read_record_field call that reads it in windows; or project with fields"
	case "read_record_field":
		how = "read smaller windows (limit_chars) without detail"
	case "query_records":
		how = "call it without detail and follow structuredContent.next step by step; narrow with fields or a smaller limit"
	case "search", "list_event_subscriptions":
		how = "call it without detail and follow structuredContent.next step by step, or ask for a smaller limit"
	default:
		how = "call it without detail"
	}
	over := fmt.Sprintf("more than %d bytes", max)
	if size > 0 {
		over = fmt.Sprintf("%d bytes, more than %d", size, max)
	}
	obj := map[string]any{
		"type": "adapter_error", "code": CodeFullTooLarge, "param": "detail",
		"message":        fmt.Sprintf(`detail "full" would return %s, this server's ceiling for one reply (--full-max-bytes); read the same data in bounded steps instead: %s`, over, how),
		"next_step":      call.Call(),
		"max_full_bytes": max,
		"bounded_read":   call,
	}
	if size > 0 {
		obj["full_bytes"] = size
	}
	env, _ := json.Marshal(map[string]any{"error": obj})
	return &rs.Error{Envelope: env}
}

// isFull reports whether a tool call's arguments ask for detail "full".
func isFull(args map[string]any) bool {
	d, _ := args["detail"].(string)
	return d == evidence.DetailFull
}

// fullReply finishes a detail "full" result: text, the structured members
// in head (any value that encodes to a JSON object), and, when body is
// not nil, the RS body verbatim as member key. The reply's size (text,
// members and body as the transports send them) is checked against the
// ceiling before anything is handed on; past it the call is refused with
// full_too_large. The members are encoded here once, without HTML
// escaping, and reserved as bytes in flight (see below); the body, already
// reserved by its read, is passed by reference (package splice) so it is
// neither copied nor re-encoded, and stays reserved until the reply
// carrying it is written.
func (a *Adapter) fullReply(ctx context.Context, tool string, args map[string]any, text string, head any, key string, body []byte) *mcp.CallToolResult {
	members, err := evidence.MarshalNoEscape(head)
	if err != nil || len(members) < 2 || members[0] != '{' {
		return errorResult(rs.AdapterError("internal_error", "full reply members are not an object", ""), tool, args)
	}
	// Full data stays exact, but a character a person cannot see is written
	// as a \u escape (package unseen): the members and the RS body are
	// scanned once each and copied only when they hold one. Escaping only
	// lengthens, so a longer body or members were escaped.
	before := len(members) + len(body)
	members = unseen.EscapeJSON(members)
	if body != nil {
		body = unseen.EscapeJSON(body)
	}
	grown := len(members) + len(body) - before
	size := int64(resultOverhead + evidence.JSONStringLen(text) + len(members))
	if body != nil {
		size += int64(len(key) + 4 + len(body))
	}
	if size > a.fullMax {
		return errorResult(fullTooLarge(tool, args, a.fullMax, size), tool, args)
	}
	acct := inflight.FromContext(ctx)
	built := int64(len(members) + len(text))
	if body == nil {
		// The reply is built from the RS body, not carried with it: what
		// the call read is no longer needed, so its reservation is given
		// back before the members' is waited for. A call never waits while
		// it holds bytes, so calls cannot wait on one another.
		acct.Release(acct.Held())
		if err := acct.Reserve(ctx, built); err != nil {
			return errorResult(busyError(err), tool, args)
		}
		return okResult(text, json.RawMessage(members), grown > 0)
	}
	// The body stays (it is the reply); the members beside it are small
	// (ids, flags, a bounded text) and are reserved only if free at once,
	// for a call that holds its body must not wait behind calls waiting
	// for bodies.
	acct.TryReserve(built + int64(grown))
	var value []byte
	switch v := splice.Value(ctx, body, acct.Retain()).(type) {
	case json.RawMessage:
		value = v // no splice store (an in-process client): the library encodes it
	default:
		value, _ = json.Marshal(v)
	}
	var b bytes.Buffer
	b.Grow(len(members) + len(key) + len(value) + 5)
	b.Write(members[:len(members)-1])
	if len(members) > 2 {
		b.WriteByte(',')
	}
	keyJSON, _ := json.Marshal(key)
	b.Write(keyJSON)
	b.WriteByte(':')
	b.Write(value)
	b.WriteByte('}')
	return okResult(text, json.RawMessage(b.Bytes()), grown > 0)
}

// busyError is the typed error of a reservation of bytes in flight that
// failed (any other error is passed on as it is).
func busyError(err error) error {
	if be, ok := err.(*inflight.BusyError); ok {
		return rs.BusyError(be)
	}
	return err
}
