package pdpp_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/evidence"
)

// errorMembersRS answers every data request with an RS 400 whose error
// object has the given members after its type, code and message.
func errorMembersRS(extra string) http.Handler {
	body := `{"error":{"type":"invalid_request_error","code":"too_wide","message":"wide <error>"` + extra + `}}`
	return faultyRS(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(body))
	})
}

// TestRSErrorMembersAreCapped: an RS error envelope of hundreds of
// thousands of small members (5 MB, past the bound of an error body read,
// and 900 KB, within it) becomes a tool error of at most
// evidence.ErrorMembers of the RS's members, within the tool's budget,
// keeping the RS's type, code and message and saying it was cut.
func TestRSErrorMembersAreCapped(t *testing.T) {
	members := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"m%06d":%d`, i, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		members int
	}{{"400,000 members", 400_000}, {"70,000 members", 70_000}, {"100 members", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, errorMembersRS(members(tc.members)), tokClient)
			for _, c := range readCalls {
				raw := h.rawRequest("tools/call", map[string]any{"name": c.tool, "arguments": c.args})
				r := h.call(t, c.tool, c.args)
				if !r.Res.IsError || r.errorCode() != "too_wide" {
					t.Fatalf("%s: want the RS's too_wide error, got isError=%v code=%q", c.tool, r.Res.IsError, r.errorCode())
				}
				if budget, _ := mcptools.ResultBudgetOf(c.tool); len(raw) > budget.Limit(0) {
					t.Errorf("%s: error result is %d bytes, budget %d", c.tool, len(raw), budget.Limit(0))
				}
				e := r.errorObject()
				own := 0
				for k := range e {
					switch k {
					case "truncated", "error_bytes", "error_body_cut_at":
					default:
						own++
					}
				}
				if own > evidence.ErrorMembers || e["truncated"] != true {
					t.Errorf("%s: keeps %d of the RS's members (at most %d), truncated %v", c.tool, own, evidence.ErrorMembers, e["truncated"])
				}
				if e["type"] != "invalid_request_error" || e["message"] != "wide <error>" || !strings.Contains(r.Text, "error too_wide: wide <error>") {
					t.Errorf("%s: lost the RS's type or message: %v\n%s", c.tool, e, r.Text)
				}
			}
		})
	}
}
