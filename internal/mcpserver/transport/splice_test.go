package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/splice"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// splicedBody is the pass-through value of the spliced tool: characters
// encoding/json would escape as six bytes each, and a pretty-printed member
// (a raw line break between tokens).
func splicedBody(n int) []byte {
	return []byte("{\"html\":\"" + strings.Repeat("<p>a&b</p>", n) + "\",\n \"n\": 1}")
}

// spliceServer is a test server whose "spliced" tool returns splicedBody(n)
// by reference in structuredContent.data; released counts the values given
// back.
func spliceServer(n int, released *atomic.Int64) *server.MCPServer {
	s := newTestServer(testTools{})
	s.AddTool(mcp.Tool{Name: "spliced", Title: "Spliced", Description: "Return a body by reference.",
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{mcp.NewTextContent("body by reference")},
				StructuredContent: map[string]any{"data": splice.Value(ctx, splicedBody(n), func() { released.Add(1) })},
			}, nil
		})
	return s
}

// checkSpliced checks one reply as sent: the value stands verbatim
// (compacted) where the placeholder was, no < is escaped, no placeholder is
// left, and the reply decodes to the value.
func checkSpliced(t *testing.T, reply []byte, n int) {
	t.Helper()
	want := `{"html":"` + strings.Repeat("<p>a&b</p>", n) + `","n":1}`
	if !bytes.Contains(reply, []byte(want)) {
		t.Fatalf("reply lacks the value verbatim:\n%.300s", reply)
	}
	if bytes.Contains(reply, []byte(`splice:`)) {
		t.Fatalf("a placeholder reached the client:\n%.300s", reply)
	}
	var r struct {
		Result struct {
			StructuredContent struct {
				Data struct {
					HTML string `json:"html"`
				} `json:"data"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		t.Fatalf("reply is not JSON: %v", err)
	}
	if r.Result.StructuredContent.Data.HTML != strings.Repeat("<p>a&b</p>", n) {
		t.Fatalf("decoded value differs")
	}
}

func TestSplicedValuesOverHTTP(t *testing.T) {
	cases := []struct {
		name      string
		n         int
		maxReply  int64
		batch     bool
		wantLimit bool
	}{
		{"one call", 1000, 0, false, false},
		{"a batch of two", 100, 0, true, false},
		{"over the reply cap, counted at the value's own size", 1000, 4096, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var released atomic.Int64
			h, err := NewHTTPHandler(spliceServer(tc.n, &released), HTTPConfig{Logger: discardLogger(), MaxReplyBytes: tc.maxReply})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			body := callBody(1, "spliced", nil)
			if tc.batch {
				body = "[" + callBody(1, "spliced", nil) + "," + callBody(2, "spliced", nil) + "]"
			}
			resp, reply := post(t, srv.URL+"/mcp", http.MethodPost, body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, reply)
			}
			calls := int64(1)
			switch {
			case tc.wantLimit:
				if _, e := decodeLimit(t, reply); e.Data.Reason != "reply_too_large" {
					t.Fatalf("want reply_too_large, got %s", reply)
				}
			case tc.batch:
				calls = 2
				var items []json.RawMessage
				if err := json.Unmarshal(reply, &items); err != nil || len(items) != 2 {
					t.Fatalf("batch reply: %v %s", err, reply)
				}
				for _, it := range items {
					checkSpliced(t, it, tc.n)
				}
			default:
				if resp.ContentLength != int64(len(reply)) {
					t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(reply))
				}
				checkSpliced(t, reply, tc.n)
			}
			if got := released.Load(); got != calls {
				t.Errorf("%d values given back after the reply, want %d", got, calls)
			}
		})
	}
	t.Run("mcp-go Streamable HTTP client", func(t *testing.T) {
		var released atomic.Int64
		h, _ := NewHTTPHandler(spliceServer(50, &released), HTTPConfig{Logger: discardLogger()})
		srv := httptest.NewServer(h)
		defer srv.Close()
		c, err := client.NewStreamableHttpClient(srv.URL + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "splice-test", Version: "0"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = "spliced"
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := res.StructuredContent.(map[string]any)["data"].(map[string]any)
		if data["html"] != strings.Repeat("<p>a&b</p>", 50) {
			t.Fatalf("client decoded %v", res.StructuredContent)
		}
	})
}

func TestSplicedValuesOverStdio(t *testing.T) {
	var released atomic.Int64
	in := strings.NewReader(initializeBody(1, mcp.ProtocolVersion20250618) + "\n" + callBody(7, "spliced", nil) + "\n")
	var out testkit.Buffer
	if err := ServeStdio(context.Background(), spliceServer(500, &released), in, &out, discardLogger()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines on stdout, want 2:\n%.500s", len(lines), out.String())
	}
	for _, line := range lines {
		if r := decodeReply(t, []byte(line)); string(r.ID) == "7" {
			checkSpliced(t, []byte(line), 500)
			if released.Load() != 1 {
				t.Errorf("%d values given back, want 1", released.Load())
			}
			return
		}
	}
	t.Fatalf("no answer to the call:\n%.500s", out.String())
}
