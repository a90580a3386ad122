package pdpp

import (
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
)

// renewLine is what an error text adds when the RS refused the token itself
// (rs.ClassToken): the credential, not the call, must change.
const renewLine = "fix: the client token is no longer accepted (expired, revoked or unknown); renew the cached credential: run \"pdpp connect <provider-url>\" again " +
	"(a hosted client refreshes its token or authorizes again), then retry\n"

// refusalAdvice is the line an error text adds for a refusal whose class
// calls for one (see rs.ClassOf): the renewal for a token-level refusal, and
// for a scope refusal what the call named that the grant does not cover and
// where to look instead. Other errors add nothing.
func refusalAdvice(e *rs.Error, args map[string]any) string {
	switch rs.ClassOf(e) {
	case rs.ClassToken:
		return renewLine
	case rs.ClassScope:
		what := scopeNamed(args)
		if what == "" {
			what = "this read"
		}
		return "outside the grant: " + what + " is not covered by this grant (the token itself is fine); " +
			"call schema for the granted streams and connections, and read within them\n"
	}
	return ""
}

// maxNamedValue bounds each argument value a scope refusal repeats.
const maxNamedValue = 200

// scopeNamed lists the stream(s), connection and record id the call named,
// from its arguments (a record id names its own stream and connection).
func scopeNamed(args map[string]any) string {
	var parts []string
	str := func(k string) string {
		v, _ := args[k].(string)
		return evidence.Clip(v, maxNamedValue)
	}
	stream, conn := str("stream"), str("connection_id")
	if id := str("id"); id != "" {
		if ref, err := handles.ParseID(id); err == nil {
			stream = ref.Stream
			if conn == "" {
				conn = ref.ConnectionID
			}
		}
		parts = append(parts, fmt.Sprintf("record %q", id))
	}
	if stream != "" {
		parts = append(parts, fmt.Sprintf("stream %q", stream))
	}
	if list, ok := args["streams"].([]any); ok && len(list) > 0 {
		var names []string
		for _, s := range list[:min(len(list), 8)] {
			if n, ok := s.(string); ok {
				names = append(names, fmt.Sprintf("%q", evidence.Clip(n, maxNamedValue)))
			}
		}
		if len(list) > len(names) {
			names = append(names, "…")
		}
		parts = append(parts, "streams "+strings.Join(names, ", "))
	}
	if conn != "" {
		parts = append(parts, fmt.Sprintf("connection_id %q", conn))
	}
	return strings.Join(parts, ", ")
}
