package cli

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testkit"
)

// TestLongURIsCostNoMatching sends resource URIs and a tool name of 1 MiB
// each to the hosted server over HTTP, as an authenticated client would: each
// is refused with JSON-RPC -32602 and a typed too_long error naming the
// member, without echoing it, and three 1 MiB URIs cost the whole process
// (client side included) under 150 ms of CPU, where matching them against
// the resource templates cost seconds.
func TestLongURIsCostNoMatching(t *testing.T) {
	mcpURL := startHTTPWith(t, boundsFlags(demoRS(t), 10*time.Second)) // 4 MiB bodies
	long := strings.Repeat("a", 1<<20)
	uris := []string{"pdpp://record/" + long, "pdpp://stream/" + long, "pdpp://x" + strings.Repeat("/", 1<<20)}
	bodies := make([]string, len(uris))
	for i, u := range uris {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/read", "params": map[string]any{"uri": u}})
		bodies[i] = string(b)
	}
	check := func(t *testing.T, b []byte, param string, limit int) {
		t.Helper()
		var reply struct {
			Error *struct {
				Code int            `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &reply) != nil || reply.Error == nil || reply.Error.Code != -32602 {
			t.Fatalf("want a -32602 error, got %.300s", b)
		}
		if reply.Error.Data["code"] != "too_long" || reply.Error.Data["param"] != param || reply.Error.Data["max_bytes"] != float64(limit) {
			t.Fatalf("typed error %v, want too_long on %s at %d", reply.Error.Data, param, limit)
		}
		if len(b) > 1024 {
			t.Fatalf("a %d-byte reply: the refused member is echoed", len(b))
		}
	}
	// Warm up: the token check and first-use costs are not what is measured.
	if status, b := postMCP(t, mcpURL, `{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"pdpp://stream/`+strings.Repeat("a", 5000)+`"}}`); status != http.StatusOK {
		t.Fatalf("warm-up: %d %s", status, b)
	}
	runtime.GC()
	before, ok := testkit.ProcessCPU()
	if !ok {
		t.Skip("process CPU time is not available on this platform")
	}
	replies := make([][]byte, len(bodies))
	for i, body := range bodies {
		status, b := postMCP(t, mcpURL, body)
		if status != http.StatusOK {
			t.Fatalf("status %d: %.300s", status, b)
		}
		replies[i] = b
	}
	after, _ := testkit.ProcessCPU()
	for i, b := range replies {
		t.Run(uris[i][:16], func(t *testing.T) { check(t, b, "uri", mcptools.MaxResourceURIBytes) })
	}
	t.Logf("three 1 MiB URIs: %v of CPU", after-before)
	if spent := after - before; spent > 150*time.Millisecond {
		t.Errorf("three 1 MiB URIs cost %v of CPU, want under 150ms", spent)
	}

	t.Run("tool name", func(t *testing.T) {
		status, b := postMCP(t, mcpURL, toolCall(9, strings.Repeat("n", 1<<20), map[string]any{}))
		if status != http.StatusOK {
			t.Fatalf("status %d: %.300s", status, b)
		}
		check(t, b, "name", mcptools.MaxToolNameBytes)
	})
	t.Run("URI at the bound still reaches its handler", func(t *testing.T) {
		uri := "pdpp://stream/" + strings.Repeat("a", mcptools.MaxResourceURIBytes-len("pdpp://stream/"))
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": map[string]any{"uri": uri}})
		_, reply := postMCP(t, mcpURL, string(b))
		if !strings.Contains(string(reply), `"invalid_uri"`) && !strings.Contains(string(reply), `"invalid_id"`) {
			t.Fatalf("a URI within the bound did not reach the stream handler's own check: %.300s", reply)
		}
	})
}
