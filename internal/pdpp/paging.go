package pdpp

import (
	"encoding/json"
	"maps"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// stepReserve is kept free in a compact step besides the result's own
// envelope (resultOverhead): what a protocol revision adds around a
// result (2026-07-28 adds about 103 bytes) and the JSON-RPC envelope, so
// a step fits its budget on the wire at every revision served.
const stepReserve = 256

// stepBudget is the room a compact step of tool has for its text and
// structured output, for a reply rendering an RS body of rsBodyBytes.
func stepBudget(tool string, rsBodyBytes int) (limit, room int) {
	limit = replyBudget(tool, rsBodyBytes)
	return limit, limit - resultOverhead - stepReserve
}

// pageCall is where a call of a list tool reads its RS page from: the
// cursor argument resolved into the RS cursor to send and, for a page
// cursor, the position it resumes at.
type pageCall struct {
	tool string
	// rsCursor is the RS cursor of the page: the cursor argument itself,
	// or the one a page cursor wraps; "" for the first page.
	rsCursor string
	// resume is the decoded page cursor, nil for a call that starts its
	// page at the first item.
	resume *handles.PageCursor
	// same are the call's arguments as the continuations repeat them:
	// without cursor, and without detail at its default.
	same map[string]any
	// digest is the handles.Digest of the call's arguments (same, detail
	// left out) and rsCursor: what a page cursor of this call carries.
	digest string
}

// resolvePage reads the cursor argument of tool, whose typed arguments are
// args. A page cursor must have been made for the same other arguments
// (conflicting_arguments, naming cursor, when not); anything else is the
// RS's cursor and goes to the RS as it is. With rsPages false (a route
// without paging of its own) only page cursors are taken, wrapping no RS
// cursor.
func resolvePage(tool, cursor string, args any, rsPages bool) (pageCall, error) {
	same := argsMap(args)
	delete(same, "cursor")
	pc := pageCall{tool: tool, same: same}
	if !handles.IsPageCursor(cursor) {
		if cursor != "" && !rsPages {
			return pc, rs.AdapterError(handles.CodeInvalidCursor,
				"this list has no cursor of its own: pass only the cursor of a previous reply's next, or none for the whole list from its start", "cursor")
		}
		pc.rsCursor, pc.digest = cursor, callDigest(same, cursor)
		return pc, nil
	}
	c, err := handles.DecodePageCursor(cursor)
	if err != nil {
		return pc, err
	}
	if c.RS != "" && !rsPages {
		return pc, rs.AdapterError(handles.CodeInvalidCursor, "the cursor wraps an RS cursor, which this list does not have; call the tool without cursor", "cursor")
	}
	pc.rsCursor, pc.digest = c.RS, callDigest(same, c.RS)
	if pc.digest != c.Call {
		return pc, rs.AdapterError("conflicting_arguments",
			"the cursor continues a call with other arguments; repeat next.arguments exactly as the reply gave them, or drop cursor to read the page from its start", "cursor")
	}
	pc.resume = &c
	return pc, nil
}

// callDigest fingerprints a call's arguments (detail left out: it changes
// how a page is shown, not which page) and the RS cursor of its page. The
// arguments are encoded as canonical JSON: json.Marshal of decoded JSON
// sorts object keys.
func callDigest(same map[string]any, rsCursor string) string {
	args := maps.Clone(same)
	delete(args, "detail")
	b, _ := json.Marshal(args)
	return handles.Digest(string(b), rsCursor)
}

// sameArgs returns the call's arguments with cursor set to cursor (left
// out when ""), for a continuation of the call.
func (p pageCall) sameArgs(cursor string) map[string]any {
	out := maps.Clone(p.same) // not nil: argsMap of a struct
	if cursor != "" {
		out["cursor"] = cursor
	}
	return out
}

// Full is the call that returns the page at detail "full".
func (p pageCall) Full() evidence.Continuation {
	return fullDetailCall(p.tool, p.sameArgs(p.rsCursor))
}

// Step places a compact reply on its page, whose items have the ids ids in
// the RS's order: at the page cursor's position when the page still holds
// there what it held when the cursor was made, else at the first item,
// reporting the restart. fullBytes estimates the reply of full.
func (p pageCall) Step(ids []string, fullBytes func() int) evidence.Step {
	st := evidence.Step{Full: p.Full(), FullBytes: fullBytes}
	if c := p.resume; c != nil {
		if c.Pos <= len(ids) && handles.Digest(ids[:c.Pos]...) == c.Seen {
			st.Pos = c.Pos
		} else {
			st.Restarted, st.ResumedAt = true, c.Pos
		}
	}
	st.Resume = func(end int) (evidence.Continuation, bool) {
		if end <= 0 || end > len(ids) {
			return evidence.Continuation{}, false
		}
		cursor, ok := handles.EncodePageCursor(handles.PageCursor{RS: p.rsCursor, Pos: end, Seen: handles.Digest(ids[:end]...), Call: p.digest})
		if !ok {
			return evidence.Continuation{}, false
		}
		args := p.sameArgs(cursor)
		delete(args, "detail")
		return evidence.Continuation{Tool: p.tool, Arguments: args}, true
	}
	return st
}
