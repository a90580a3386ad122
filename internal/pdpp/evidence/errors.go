package evidence

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// ErrorBody is the `error` object of an RS error envelope (other members
// kept verbatim by the caller), read through the generated model (so a
// member renamed in the spec stops the build where it is read), or an
// adapter error of the same shape.
type ErrorBody struct {
	rsclient.ErrorObject
	// Next is the call that reads what the failed one meant to (an
	// adapter error's own continuation, e.g. the last window of a field
	// read past its end), kept raw: it is decoded and shown for adapter
	// errors only, never an RS's (a stranger's value, not one of our calls).
	Next jsontext.Value `json:"next"`
}

// adapterErrorType is the type of the errors the adapter makes itself.
const adapterErrorType = "adapter_error"

// maxConnectionLines bounds the available connections an error text lists.
const maxConnectionLines = 20

// ErrorText renders a short, actionable text for an error object (RS envelope
// member `error` or an adapter error of the same shape). tool and args, when
// given, let the text show the exact retry call for ambiguous_connection.
func ErrorText(errObj json.RawMessage, tool string, args map[string]any) string {
	var e ErrorBody
	_ = json.Unmarshal(errObj, &e)
	var b strings.Builder
	fmt.Fprintf(&b, "error %s: %s", cmp.Or(e.Code, e.Type), Clip(oneLine(e.Message), 600))
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	b.WriteString("\n")
	if len(e.AvailableConnections) > 0 {
		b.WriteString("available connections:\n")
		shown := e.AvailableConnections[:min(len(e.AvailableConnections), maxConnectionLines)]
		for _, c := range shown {
			name := ""
			if c.DisplayName != "" {
				name = " (" + c.DisplayName + ")"
			}
			fmt.Fprintf(&b, "  connection_id=%s%s\n", Clip(c.ConnectionId, 200), Clip(name, 200))
		}
		if more := len(e.AvailableConnections) - len(shown); more > 0 {
			fmt.Fprintf(&b, "  … and %d more\n", more)
		}
		if tool != "" && e.AvailableConnections[0].ConnectionId != "" {
			retry := map[string]any{}
			maps.Copy(retry, args)
			retry["connection_id"] = e.AvailableConnections[0].ConnectionId
			fmt.Fprintf(&b, "retry with one of them, e.g. %s\n", Continuation{Tool: tool, Arguments: retry}.Call())
		}
	}
	if e.NextStep != "" {
		fmt.Fprintf(&b, "next step: %s\n", Clip(oneLine(e.NextStep), 400))
	}
	var next Continuation
	if e.Type == adapterErrorType && json.Unmarshal(e.Next, &next) == nil && next.Tool != "" && next.Arguments != nil {
		fmt.Fprintf(&b, "next: %s\n", next.Call())
	}
	return b.String()
}

// errorSmallMember is the largest member of an oversized error object that
// FitError keeps verbatim.
const errorSmallMember = 256

// ErrorMembers bounds the members an error result keeps from an RS error
// object: one with more (or larger than its room) is cut to at most this
// many of its own members, besides the ones the cut adds.
const ErrorMembers = 24

// errorFirstKeys are the members a cut error object keeps first, in this
// order, when they are small: what identifies the error and what to do.
var errorFirstKeys = []string{"type", "code", "param", "next", "total_chars", "retry_with", "request_id", "resource_metadata"}

// errorOwnKeys are the members FitError writes itself on a cut; the RS's
// members of these names are not kept, so an envelope cannot hide the cut.
var errorOwnKeys = map[string]bool{
	"truncated": true, "error_bytes": true, "message": true, "next_step": true,
	"available_connections": true, "available_connections_total": true,
}

// FitError returns the error object obj (the `error` member of an RS
// envelope) as it is when it takes at most room bytes on the wire
// (WireLen) and has at most ErrorMembers members. Otherwise it keeps, in
// this order and while they fit in room: type and code and truncated and
// error_bytes (the object's full size; these four always, so only they
// may exceed a smaller room), message and next_step clipped to 600 and
// 400 characters, the other errorFirstKeys of at most errorSmallMember
// bytes, the leading available_connections (with their total), then the
// RS's other small members in order, ErrorMembers of the RS's in all. obj
// is read in one pass, never decoded into a map, so an envelope of
// hundreds of thousands of members costs no more than its size.
func FitError(obj json.RawMessage, room int) json.RawMessage {
	fits := WireLen(obj) <= room
	if fits && validJSON(obj) && firstByte(obj) == '{' {
		_, more := countItems(obj, ErrorMembers) // stops counting past ErrorMembers
		fits = !more
	}
	if fits {
		return obj
	}
	var e ErrorBody
	_ = json.Unmarshal(obj, &e)
	small := map[string]json.RawMessage{}
	var others []string // small members not in errorFirstKeys, RS order
	if validJSON(obj) {
		// One pass over obj; it keeps at most len(errorFirstKeys) plus
		// ErrorMembers small members.
		_ = eachMember(obj, func(key string, val []byte) error {
			if _, seen := small[key]; seen || errorOwnKeys[key] || len(val) > errorSmallMember {
				return nil
			}
			if !slices.Contains(errorFirstKeys, key) {
				if len(others) >= ErrorMembers {
					return nil
				}
				others = append(others, key)
			}
			small[key] = val
			return nil
		})
	}
	var w objectWriter
	// closed is the object's size on the wire once closed (see WireLen).
	closed := func() int { return max(2, WireLen(w.buf)+1) }
	kept := 0
	for _, k := range []string{"type", "code"} {
		if v, ok := small[k]; ok {
			w.member(k, v)
			kept++
		}
	}
	w.member("truncated", json.RawMessage("true"))
	w.member("error_bytes", json.RawMessage(strconv.Itoa(len(obj))))
	add := func(key string, val []byte) {
		if kept < ErrorMembers && closed()+memberBytes(key, val) <= room {
			w.member(key, val)
			kept++
		}
	}
	if e.Message != "" {
		add("message", mustMarshal(Clip(oneLine(e.Message), 600)))
	}
	if e.NextStep != "" {
		add("next_step", mustMarshal(Clip(oneLine(e.NextStep), 400)))
	}
	for _, k := range errorFirstKeys[2:] {
		if v, ok := small[k]; ok {
			add(k, v)
		}
	}
	if n := len(e.AvailableConnections); n > 0 && kept < ErrorMembers {
		total := json.RawMessage(strconv.Itoa(n))
		used := closed() + memberBytes("available_connections_total", total) + memberBytes("available_connections", nil) + 2
		var list [][]byte
		// At most n iterations; stops at the first connection that does
		// not fit.
		for _, c := range e.AvailableConnections {
			item := map[string]string{"connection_id": Clip(c.ConnectionId, 200)}
			if c.DisplayName != "" {
				item["display_name"] = Clip(c.DisplayName, 200)
			}
			enc := mustMarshal(item)
			size := WireLen(enc) + min(len(list), 1) // and its comma
			if used+size > room {
				break
			}
			list = append(list, enc)
			used += size
		}
		w.member("available_connections", joinArray(list))
		w.member("available_connections_total", total)
		kept++
	}
	for _, k := range others {
		add(k, small[k])
	}
	return w.bytes()
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// memberBytes is what one member adds to an object on the wire: its
// separator ({ or ,), key, colon and value (see WireLen).
func memberBytes(key string, val []byte) int {
	return 1 + JSONStringLen(key) + 1 + WireLen(val)
}
