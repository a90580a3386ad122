package mcpkit

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestCacheHints: at 2026-07-28 the fixed lists and server/discover carry
// FixedListTTLMs.
func TestCacheHints(t *testing.T) {
	s := server.NewMCPServer("kit", "1", append(CacheHints(), server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false))...)
	s.AddTool(mcp.NewTool("t"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	meta := `"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.ProtocolVersion20260728 + `","` + mcp.MetaKeyClientCapabilities + `":{}}`
	for _, method := range []string{"tools/list", "resources/templates/list", "resources/list", "server/discover"} {
		t.Run(method, func(t *testing.T) {
			reply, _ := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+meta+`}}`)))
			var msg struct {
				Result struct {
					TTLMs *int64 `json:"ttlMs"`
				} `json:"result"`
			}
			if err := json.Unmarshal(reply, &msg); err != nil || msg.Result.TTLMs == nil || *msg.Result.TTLMs != FixedListTTLMs {
				t.Fatalf("ttlMs %v, want %d: %s", msg.Result.TTLMs, FixedListTTLMs, reply)
			}
		})
	}
}
