package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// rsProxy sits between the server and the demo RS: it counts the data
// requests (everything but the token check on /v1/schema) and holds each
// one for delay first.
type rsProxy struct {
	*httptest.Server
	data    atomic.Int64
	started chan struct{} // receives once per data request, when it arrives
}

func newRSProxy(t *testing.T, upstream string, delay time.Duration) *rsProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &rsProxy{started: make(chan struct{}, 64)}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/schema") {
			p.data.Add(1)
			select {
			case p.started <- struct{}{}:
			default:
			}
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// postMCP sends one raw /mcp POST with the client token.
func postMCP(t *testing.T, mcpURL, body string) (int, []byte) {
	t.Helper()
	resp, b := postRPC(t, mcpURL, body, map[string]string{"Authorization": "Bearer " + fixedTokens["client"]})
	return resp.StatusCode, b
}

func toolCall(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

func boundsFlags(provider string, rsTimeout time.Duration) *httpFlags {
	return &httpFlags{
		common:    common{providerURL: provider, serverName: "pdpp", toolsets: "read", rsTimeout: rsTimeout},
		HTTPFlags: cmdkit.HTTPFlags{HTTPConfig: transport.HTTPConfig{Listen: "127.0.0.1:0", MaxBodyBytes: 4 << 20, MaxBatchItems: 16}},
	}
}

// TestBatchOfReadsIsCapped replays the unbounded batch: 5,000
// read_record_field calls in one body make no RS data request at all, and a
// batch at the cap makes at most one per item.
func TestBatchOfReadsIsCapped(t *testing.T) {
	proxy := newRSProxy(t, demoRS(t), 0)
	mcpURL := startHTTPWith(t, boundsFlags(proxy.URL, 10*time.Second))
	read := map[string]any{"id": "cin_demo_loom_main/transcripts:tr-5", "field_path": "text"}
	batch := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = toolCall(i+1, "read_record_field", read)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	tests := []struct {
		items      int
		wantStatus int
	}{
		{5000, http.StatusBadRequest},
		{16, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.items, " items"), func(t *testing.T) {
			proxy.data.Store(0)
			status, body := postMCP(t, mcpURL, batch(tc.items))
			if status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %.300s", status, tc.wantStatus, body)
			}
			if got := proxy.data.Load(); got > 16 || (tc.items > 16 && got != 0) {
				t.Fatalf("%d RS data requests for a batch of %d", got, tc.items)
			}
			if tc.wantStatus == http.StatusBadRequest && !bytes.Contains(body, []byte(`"batch_too_large"`)) {
				t.Fatalf("refusal lacks its reason: %s", body)
			}
		})
	}
}

// TestShutdownDuringSlowRSAnswersTimeout: a shutdown (the SIGTERM context
// ending) while a call waits on a slow RS lets the call finish with its
// typed rs_timeout before the process stops.
func TestShutdownDuringSlowRSAnswersTimeout(t *testing.T) {
	// The RS never answers the data request by itself; the call budget must
	// leave room for the token check and for the data request to reach the
	// proxy on a loaded machine (it took 300 ms, which a slow run could
	// spend before the proxy saw anything).
	proxy := newRSProxy(t, demoRS(t), time.Minute)
	h := boundsFlags(proxy.URL, 1500*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1) // what serveHTTP returned after the shutdown
	addr, _ := testkit.Serve(t, ctx, func(ctx context.Context, onListen, _ func(net.Addr)) error {
		err := serveHTTP(ctx, slog.New(slog.DiscardHandler), h, onListen, nil)
		done <- err
		return err
	})
	mcpURL := "http://" + addr.String() + "/mcp"

	type answer struct {
		status int
		body   []byte
	}
	answers := make(chan answer, 1)
	go func() {
		status, body := postMCP(t, mcpURL, toolCall(1, "fetch", map[string]any{"id": "cin_demo_loom_main/transcripts:tr-5"}))
		answers <- answer{status, body}
	}()
	select {
	case <-proxy.started: // the call now waits on the RS
	case a := <-answers:
		t.Fatalf("the call ended before its data request reached the RS: %d %s", a.status, a.body)
	}
	cancel() // what SIGTERM does

	a := <-answers
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var reply struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error struct{ Code string } `json:"error"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(a.body, &reply); err != nil || !reply.Result.IsError || reply.Result.StructuredContent.Error.Code != "rs_timeout" {
		t.Fatalf("want a typed rs_timeout result, got %s", a.body)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestResourceReadErrorCodes reads failing resources from the real server
// over HTTP against the demo RS.
func TestResourceReadErrorCodes(t *testing.T) {
	mcpURL := startHTTPWith(t, boundsFlags(demoRS(t), 10*time.Second))
	tests := []struct {
		uri   string
		code  int
		typed string
	}{
		{"pdpp://record/no-stream-here", -32602, "invalid_id"},
		{"pdpp://blob/", -32602, "invalid_id"},
		{"pdpp://blob/blob_000000000000000000000000", -32002, "not_found"},
		{handles.RecordURI(handles.RecordRef{ConnectionID: "cin_demo_loom_main", Stream: "transcripts", RecordID: "tr-99"}), -32002, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": map[string]any{"uri": tc.uri}})
			status, b := postMCP(t, mcpURL, string(body))
			var reply struct {
				Error *struct {
					Code    int
					Message string
					Data    map[string]any
				}
			}
			if status != http.StatusOK || json.Unmarshal(b, &reply) != nil || reply.Error == nil {
				t.Fatalf("status %d: %s", status, b)
			}
			if reply.Error.Code != tc.code || reply.Error.Data["code"] == nil || strings.HasPrefix(reply.Error.Message, "{") {
				t.Fatalf("want code %d with the typed error in data, got %s", tc.code, b)
			}
			if tc.typed != "" && reply.Error.Data["code"] != tc.typed {
				t.Fatalf("typed code %v, want %s: %s", reply.Error.Data["code"], tc.typed, b)
			}
		})
	}
}
