package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ErrorBody is the `error` object of an RS error envelope (other members kept
// verbatim by the caller).
type ErrorBody struct {
	Type                 string `json:"type"`
	Code                 string `json:"code"`
	Message              string `json:"message"`
	Param                string `json:"param"`
	NextStep             string `json:"next_step"`
	RetryWith            string `json:"retry_with"`
	AvailableConnections []struct {
		ConnectionID string `json:"connection_id"`
		DisplayName  string `json:"display_name"`
	} `json:"available_connections"`
}

// maxConnectionLines bounds the available connections an error text lists.
const maxConnectionLines = 20

// ErrorText renders a short, actionable text for an error object (RS envelope
// member `error` or an adapter error of the same shape). tool and args, when
// given, let the text show the exact retry call for ambiguous_connection.
func ErrorText(errObj json.RawMessage, tool string, args map[string]any) string {
	var e ErrorBody
	_ = json.Unmarshal(errObj, &e)
	var b strings.Builder
	code := e.Code
	if code == "" {
		code = e.Type
	}
	fmt.Fprintf(&b, "error %s: %s", code, Clip(oneLine(e.Message), 600))
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
			fmt.Fprintf(&b, "  connection_id=%s%s\n", Clip(c.ConnectionID, 200), Clip(name, 200))
		}
		if more := len(e.AvailableConnections) - len(shown); more > 0 {
			fmt.Fprintf(&b, "  … and %d more\n", more)
		}
		if tool != "" && e.AvailableConnections[0].ConnectionID != "" {
			retry := map[string]any{}
			for k, v := range args {
				retry[k] = v
			}
			retry["connection_id"] = e.AvailableConnections[0].ConnectionID
			fmt.Fprintf(&b, "retry with one of them, e.g. %s\n", Continuation{Tool: tool, Arguments: retry}.Call())
		}
	}
	if e.NextStep != "" {
		fmt.Fprintf(&b, "next step: %s\n", Clip(oneLine(e.NextStep), 400))
	}
	return b.String()
}

// errorSmallMember is the largest member of an oversized error object that
// FitError keeps verbatim.
const errorSmallMember = 256

// FitError returns the error object obj (the `error` member of an RS
// envelope) as it is when it encodes to at most room bytes. Otherwise it
// keeps the members whose encoded value is at most errorSmallMember bytes,
// message and next_step clipped to 600 and 400 characters, and the leading
// available_connections that still fit, and adds truncated, error_bytes (the
// object's full size) and, when connections were dropped,
// available_connections_total. The result may exceed room only by those few
// members when room is smaller than they are.
func FitError(obj json.RawMessage, room int) json.RawMessage {
	if len(obj) <= room {
		return obj
	}
	out := map[string]any{}
	for k, v := range SmallMembers(obj, errorSmallMember) {
		out[k] = v
	}
	// Set after the RS's own members, so an envelope cannot hide the cut.
	out["truncated"], out["error_bytes"] = true, len(obj)
	var e ErrorBody
	_ = json.Unmarshal(obj, &e)
	if e.Message != "" {
		out["message"] = Clip(oneLine(e.Message), 600)
	}
	if e.NextStep != "" {
		out["next_step"] = Clip(oneLine(e.NextStep), 400)
	}
	base, _ := json.Marshal(out)
	if n := len(e.AvailableConnections); n > 0 {
		out["available_connections_total"] = n
		used := len(base) + len(`,"available_connections_total":,"available_connections":[]`) + 12
		var kept []any
		// At most n iterations; stops at the first connection that does not fit.
		for _, c := range e.AvailableConnections {
			item := map[string]string{"connection_id": Clip(c.ConnectionID, 200)}
			if c.DisplayName != "" {
				item["display_name"] = Clip(c.DisplayName, 200)
			}
			enc, _ := json.Marshal(item)
			if used+len(enc)+1 > room {
				break
			}
			used += len(enc) + 1
			kept = append(kept, item)
		}
		out["available_connections"] = kept
		if kept == nil {
			out["available_connections"] = []any{}
		}
	}
	b, _ := json.Marshal(out)
	return b
}
