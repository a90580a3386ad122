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

// CodeTokenInactive is the RS error code for a token that is no longer
// active (a stale credential).
const CodeTokenInactive = "context.active_false"

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
		for _, c := range e.AvailableConnections {
			name := ""
			if c.DisplayName != "" {
				name = " (" + c.DisplayName + ")"
			}
			fmt.Fprintf(&b, "  connection_id=%s%s\n", c.ConnectionID, name)
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
	if code == CodeTokenInactive {
		b.WriteString("fix: the client token is no longer active (expired, revoked or unknown); run \"pdpp connect <provider-url>\" again for a new one, then retry\n")
	}
	if e.NextStep != "" {
		fmt.Fprintf(&b, "next step: %s\n", Clip(oneLine(e.NextStep), 400))
	}
	return b.String()
}
