package papercli

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testkit"
)

// TestLongURIsCostNoMatching sends paper:// URIs and a tool name of 1 MiB
// each to the hosted paper server over HTTP, without a bearer as its
// default allows: each is refused with JSON-RPC -32602 and a typed too_long
// error naming the member, without echoing it, and three 1 MiB URIs cost
// the whole process (client side included) under 150 ms of CPU.
func TestLongURIsCostNoMatching(t *testing.T) {
	h := httpFlags{}
	h.MaxBody = 4 << 20
	url := startHTTP(t, h)
	long := strings.Repeat("a", 1<<20)
	uris := []string{"paper://" + long + "/metadata", "paper://p/summary/" + long, "paper://" + strings.Repeat("/", 1<<20)}
	bodies := make([]string, len(uris))
	for i, u := range uris {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/read", "params": map[string]any{"uri": u}})
		bodies[i] = string(b)
	}
	check := func(t *testing.T, body, param string, limit int) {
		t.Helper()
		var reply struct {
			Error *struct {
				Code int            `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(body), &reply) != nil || reply.Error == nil || reply.Error.Code != -32602 {
			t.Fatalf("want a -32602 error, got %.300s", body)
		}
		if reply.Error.Data["code"] != "too_long" || reply.Error.Data["param"] != param || reply.Error.Data["max_bytes"] != float64(limit) {
			t.Fatalf("typed error %v, want too_long on %s at %d", reply.Error.Data, param, limit)
		}
		if len(body) > 1024 {
			t.Fatalf("a %d-byte reply: the refused member is echoed", len(body))
		}
	}
	if resp, body := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"paper://x/metadata"}}`, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, body)
	}
	runtime.GC()
	before, ok := testkit.ProcessCPU()
	if !ok {
		t.Skip("process CPU time is not available on this platform")
	}
	replies := make([]string, len(bodies))
	for i, body := range bodies {
		resp, b := do(t, http.MethodPost, url, body, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %.300s", resp.StatusCode, b)
		}
		replies[i] = b
	}
	after, _ := testkit.ProcessCPU()
	for i, b := range replies {
		t.Run(uris[i][:16], func(t *testing.T) { check(t, b, "uri", papertools.MaxResourceURIBytes) })
	}
	t.Logf("three 1 MiB URIs: %v of CPU", after-before)
	if spent := after - before; spent > 150*time.Millisecond {
		t.Errorf("three 1 MiB URIs cost %v of CPU, want under 150ms", spent)
	}
	t.Run("tool name", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": strings.Repeat("n", 1<<20), "arguments": map[string]any{}}})
		resp, body := do(t, http.MethodPost, url, string(b), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %.300s", resp.StatusCode, body)
		}
		check(t, body, "name", papertools.MaxToolNameBytes)
	})
}
