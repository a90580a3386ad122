package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// slowRS is a fault-injecting resource server: it counts the requests it
// receives and holds each one for delay (or until the caller gives up,
// which it counts too).
type slowRS struct {
	*httptest.Server
	delay     time.Duration
	calls     atomic.Int64
	cancelled atomic.Int64
}

func newSlowRS(t testing.TB, delay time.Duration) *slowRS {
	rs := &slowRS{delay: delay}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.calls.Add(1)
		select {
		case <-time.After(rs.delay):
		case <-r.Context().Done():
			rs.cancelled.Add(1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(rs.Close)
	return rs
}

// boundsTools adds the tools the bounds tests need to s: rs_read calls the
// RS once with the call's context; big answers with n bytes of text.
func boundsTools(s *server.MCPServer, rsURL string, ran *atomic.Int64) {
	ro := mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), DestructiveHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)}
	s.AddTool(mcp.Tool{Name: "rs_read", Description: "Read the RS once.", Annotations: ro,
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, rsURL+"/v1/streams", nil)
			if err != nil {
				return nil, err
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				return mcp.NewToolResultError("rs: " + err.Error()), nil
			}
			_ = resp.Body.Close()
			return mcp.NewToolResultText("read"), nil
		})
	s.AddTool(mcp.Tool{Name: "big", Description: "Answer with n bytes.", Annotations: ro,
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`)},
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return mcp.NewToolResultText(strings.Repeat("x", req.GetInt("n", 0))), nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("item://{id}", "item"),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			switch strings.TrimPrefix(req.Params.URI, "item://") {
			case "bad":
				return nil, InvalidResourceURI(json.RawMessage(`{"code":"invalid_id","message":"bad is not an item id","param":"uri"}`))
			case "gone":
				return nil, ResourceNotFound(ctx, json.RawMessage(`{"code":"not_found","message":"no such item"}`))
			case "broken":
				return nil, ResourceFailed(json.RawMessage(`{"code":"rs_unreachable","message":"the RS could not be reached"}`))
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "item"}}, nil
		})
}

// boundsStack serves the test server plus boundsTools with cfg.
func boundsStack(t testing.TB, cfg HTTPConfig, rsURL string) (string, *atomic.Int64) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	var ran atomic.Int64
	s := newTestServer(testTools{})
	boundsTools(s, rsURL, &ran)
	h, err := NewHTTPHandler(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", &ran
}

// batchOf is a JSON-RPC batch of n calls of tool with args.
func batchOf(n int, tool string, args map[string]any) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = callBody(i+1, tool, args)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

type limitError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Reason        string `json:"reason"`
		MaxBatchItems int    `json:"max_batch_items"`
		BatchItems    int    `json:"batch_items"`
		MaxReplyBytes int64  `json:"max_reply_bytes"`
	} `json:"data"`
}

func decodeLimit(t *testing.T, body []byte) (json.RawMessage, limitError) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error *limitError     `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Error == nil {
		t.Fatalf("want one JSON-RPC error, got %s", body)
	}
	return r.ID, *r.Error
}

func TestBatchItemCap(t *testing.T) {
	tests := []struct {
		name       string
		items      int
		wantStatus int
		wantRS     int64
	}{
		{"at the cap every item runs", 4, http.StatusOK, 4},
		{"one over the cap runs nothing", 5, http.StatusBadRequest, 0},
		{"5000 items run nothing", 5000, http.StatusBadRequest, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newSlowRS(t, 0)
			url, ran := boundsStack(t, HTTPConfig{MaxBatchItems: 4, MaxBodyBytes: 4 << 20}, rs.URL)
			resp, body := post(t, url, http.MethodPost, batchOf(tc.items, "rs_read", nil), nil)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.wantStatus, body)
			}
			if got := rs.calls.Load(); got != tc.wantRS || ran.Load() != tc.wantRS {
				t.Fatalf("RS calls %d, tool runs %d, want %d", got, ran.Load(), tc.wantRS)
			}
			if tc.wantStatus == http.StatusOK {
				var answers []rpcReply
				if err := json.Unmarshal(body, &answers); err != nil || len(answers) != tc.items {
					t.Fatalf("want %d answers: %v %s", tc.items, err, body)
				}
				return
			}
			id, e := decodeLimit(t, body)
			if string(id) != "null" || e.Code != mcp.INVALID_REQUEST || e.Data.Reason != "batch_too_large" ||
				e.Data.MaxBatchItems != 4 || e.Data.BatchItems != tc.items || !strings.Contains(e.Message, "at most 4") {
				t.Fatalf("batch refusal: %s", body)
			}
		})
	}
}

// TestBatchWaitsForAuthentication: with RequireBearer, a batch without a
// bearer is refused before any of its items runs.
func TestBatchWaitsForAuthentication(t *testing.T) {
	rs := newSlowRS(t, 0)
	url, ran := boundsStack(t, HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"}}, rs.URL)
	for _, h := range []http.Header{nil, hdr("Authorization", "Basic abc")} {
		resp, body := post(t, url, http.MethodPost, batchOf(3, "rs_read", nil), h)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	if rs.calls.Load() != 0 || ran.Load() != 0 {
		t.Fatalf("unauthenticated batch ran: %d RS calls, %d tool runs", rs.calls.Load(), ran.Load())
	}
}

func TestReplyByteCap(t *testing.T) {
	const limit = 4096
	tests := []struct {
		name     string
		body     string
		wantID   string
		wantRuns int64
	}{
		{"one reply over the cap", callBody(7, "big", map[string]any{"n": 8000}), "7", 1},
		{"a batch stops once its reply passes the cap", batchOf(8, "big", map[string]any{"n": 1500}), "null", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, ran := boundsStack(t, HTTPConfig{MaxReplyBytes: limit}, "http://127.0.0.1:1")
			resp, body := post(t, url, http.MethodPost, tc.body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if len(body) > limit {
				t.Fatalf("reply of %d bytes passes the %d cap", len(body), limit)
			}
			id, e := decodeLimit(t, body)
			if string(id) != tc.wantID || e.Code != codeServerLimit || e.Data.Reason != "reply_too_large" || e.Data.MaxReplyBytes != limit {
				t.Fatalf("reply cap error: %s", body)
			}
			if ran.Load() != tc.wantRuns {
				t.Fatalf("%d tool runs, want %d", ran.Load(), tc.wantRuns)
			}
		})
	}
	t.Run("a reply under the cap passes", func(t *testing.T) {
		url, _ := boundsStack(t, HTTPConfig{MaxReplyBytes: limit}, "http://127.0.0.1:1")
		_, body := post(t, url, http.MethodPost, callBody(1, "big", map[string]any{"n": 1000}), nil)
		if text, isErr := toolText(t, decodeReply(t, body).Result); isErr || len(text) != 1000 {
			t.Fatalf("small reply: %.200s", body)
		}
	})
}

// TestRequestDeadlineCancelsRSCalls: when a batch runs out of its request
// deadline, the RS call in flight is cancelled, the items not run yet are
// answered with request_timeout, and nothing calls the RS afterwards.
func TestRequestDeadlineCancelsRSCalls(t *testing.T) {
	rs := newSlowRS(t, time.Minute)
	// The first item must reach the RS before the deadline: 1 s is ample
	// room for that on a loaded machine, and the RS never answers by itself.
	url, ran := boundsStack(t, HTTPConfig{RequestTimeout: time.Second}, rs.URL)
	resp, body := post(t, url, http.MethodPost, batchOf(3, "rs_read", nil), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var answers []rpcReply
	if err := json.Unmarshal(body, &answers); err != nil || len(answers) != 3 {
		t.Fatalf("want 3 answers: %v %s", err, body)
	}
	// The item in flight is answered like the ones that never started.
	for _, a := range answers {
		var data struct{ Reason string }
		if a.Error == nil || a.Error.Code != codeServerLimit || json.Unmarshal(a.Error.Data, &data) != nil || data.Reason != "request_timeout" {
			t.Fatalf("item %s: want request_timeout, got %s", a.ID, body)
		}
	}
	if ran.Load() != 1 {
		t.Fatalf("%d items ran, want 1", ran.Load())
	}
	// The RS sees its request cancelled, and no further request arrives.
	testkit.Eventually(testkit.Patience, func() bool { return rs.cancelled.Load() == 1 })
	time.Sleep(200 * time.Millisecond) // room for a wrong later request to show
	if rs.calls.Load() != 1 || rs.cancelled.Load() != 1 {
		t.Fatalf("RS calls %d (cancelled %d), want 1 (1)", rs.calls.Load(), rs.cancelled.Load())
	}
}

func TestRepeatedProtocolVersionHeader(t *testing.T) {
	url, ran := boundsStack(t, HTTPConfig{}, "http://127.0.0.1:1")
	tests := []struct {
		name   string
		values []string
		status int
	}{
		{"one header", []string{mcp.ProtocolVersion20250618}, http.StatusOK},
		{"two equal headers", []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250618}, http.StatusBadRequest},
		{"two different headers", []string{mcp.ProtocolVersion20250618, "1999-01-01"}, http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Mcp-Protocol-Version": tc.values}
			before := ran.Load()
			resp, body := post(t, url, http.MethodPost, callBody(1, "big", map[string]any{"n": 1}), h)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status != http.StatusOK {
				if r := decodeReply(t, body); r.Error == nil || !strings.Contains(r.Error.Message, "more than one MCP-Protocol-Version") {
					t.Fatalf("refusal: %s", body)
				}
				if ran.Load() != before {
					t.Fatal("the call ran")
				}
			}
		})
	}
}

func TestReadyzHidesTheCause(t *testing.T) {
	var logs testkit.Buffer
	cause := errors.New("upstream unreachable: dial tcp 10.1.2.3:7663: connect: connection refused (http://rs.internal:7663/)")
	srv := newStack(t, HTTPConfig{Logger: slogTo(&logs), ReadyCheck: func(context.Context) error { return cause }}, testTools{})
	resp, body := post(t, srv.URL+"/readyz", http.MethodGet, "", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, leak := range []string{"10.1.2.3", "rs.internal", "dial", "refused"} {
		if bytes.Contains(body, []byte(leak)) {
			t.Fatalf("/readyz body leaks %q: %s", leak, body)
		}
	}
	if !strings.Contains(logs.String(), "rs.internal") || !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("the cause is not logged at warn:\n%s", logs.String())
	}
}

func TestAccessLogTruncatesClientFields(t *testing.T) {
	var logs testkit.Buffer
	srv := newStack(t, HTTPConfig{Logger: slogTo(&logs)}, testTools{})
	method := strings.Repeat("m", 200_000)
	for _, h := range []http.Header{nil, hdr("MCP-Protocol-Version", strings.Repeat("v", 20_000))} {
		post(t, srv.URL+"/mcp", http.MethodPost, rpc(1, method, nil), h)
	}
	// The access log line is written after the reply has been sent.
	out := logs.WaitCount("http request", 2, testkit.Patience)
	if len(out) > 4096 {
		t.Fatalf("two requests grew the log by %d bytes", len(out))
	}
	if !strings.Contains(out, "(200000 bytes)") || !strings.Contains(out, "(20000 bytes)") {
		t.Fatalf("truncated fields do not say their length:\n%s", out)
	}
}

// TestResourceErrorCodes reads failing resources through HTTP and stdio and
// checks the JSON-RPC code and the typed error in data.
func TestResourceErrorCodes(t *testing.T) {
	tests := []struct {
		uri    string
		code   int
		typed  string
		inText string
	}{
		{"item://bad", mcp.INVALID_PARAMS, "invalid_id", "invalid_id: bad is not an item id"},
		{"item://gone", mcp.RESOURCE_NOT_FOUND, "not_found", "not_found: no such item"},
		{"item://broken", mcp.INTERNAL_ERROR, "rs_unreachable", "rs_unreachable: the RS could not be reached"},
	}
	url, _ := boundsStack(t, HTTPConfig{}, "http://127.0.0.1:1")
	stdio := newTestServer(testTools{})
	boundsTools(stdio, "http://127.0.0.1:1", new(atomic.Int64))
	for _, tc := range tests {
		req := rpc(5, "resources/read", map[string]any{"uri": tc.uri})
		check := func(t *testing.T, body []byte) {
			r := decodeReply(t, body)
			if r.Error == nil || r.Error.Code != tc.code || r.Error.Message != tc.inText || string(r.ID) != "5" {
				t.Fatalf("want code %d %q, got %s", tc.code, tc.inText, body)
			}
			var data struct{ Code string }
			if json.Unmarshal(r.Error.Data, &data) != nil || data.Code != tc.typed {
				t.Fatalf("data is not the typed error: %s", body)
			}
		}
		t.Run("http "+tc.uri, func(t *testing.T) {
			resp, body := post(t, url, http.MethodPost, req, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			check(t, body)
		})
		t.Run("stdio "+tc.uri, func(t *testing.T) {
			in := strings.NewReader(initializeBody(1, mcp.ProtocolVersion20250618) + "\n" + req + "\n")
			var out testkit.Buffer
			if err := ServeStdio(context.Background(), stdio, in, &out, discardLogger()); err != nil {
				t.Fatal(err)
			}
			// Answers may come in any order: pick the resource read's.
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if r := decodeReply(t, []byte(line)); string(r.ID) == "5" {
					check(t, []byte(line))
					return
				}
			}
			t.Fatalf("no answer to the resource read:\n%s", out.String())
		})
	}
	t.Run("not found under 2026-07-28 is invalid params", func(t *testing.T) {
		meta := map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{}, mcp.MetaKeyClientInfo: map[string]any{"name": "t", "version": "1"}}
		body := rpc(5, "resources/read", map[string]any{"uri": "item://gone", "_meta": meta})
		resp, b := post(t, url, http.MethodPost, body,
			hdr("MCP-Protocol-Version", mcp.ProtocolVersion20260728, "Mcp-Method", "resources/read", "Mcp-Name", "item://gone"))
		r := decodeReply(t, b)
		if resp.StatusCode != http.StatusOK || r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS || !bytes.Contains(r.Error.Data, []byte(`"not_found"`)) {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})
}

// TestDerivedTimeouts: the request deadline, write timeout and shutdown
// grace are derived from the call budget, each outliving the one inside it;
// a request deadline within the call budget is refused, and explicit
// timeouts out of order are warned about when serving starts.
func TestDerivedTimeouts(t *testing.T) {
	tests := []struct {
		name                        string
		cfg                         HTTPConfig
		wantErr                     string
		request, write, shutdown    time.Duration
		wantWarnWrite, wantWarnStop bool
	}{
		{"from the call budget", HTTPConfig{CallTimeout: 30 * time.Second}, "", 35 * time.Second, 45 * time.Second, 50 * time.Second, false, false},
		{"without a call budget", HTTPConfig{}, "", DefaultRequestTimeout, DefaultRequestTimeout + 10*time.Second, DefaultRequestTimeout + 15*time.Second, false, false},
		{"request deadline within the call budget", HTTPConfig{CallTimeout: 30 * time.Second, RequestTimeout: 30 * time.Second}, "must be longer than the call budget", 0, 0, 0, false, false},
		{"write timeout not above the request deadline", HTTPConfig{RequestTimeout: 2 * time.Second, WriteTimeout: time.Second}, "", 2 * time.Second, time.Second, 6 * time.Second, true, false},
		{"shutdown not above the write timeout", HTTPConfig{ShutdownTimeout: time.Second}, "", DefaultRequestTimeout, DefaultRequestTimeout + 10*time.Second, time.Second, false, true},
		{"negative batch cap", HTTPConfig{MaxBatchItems: -1}, "max batch items", 0, 0, 0, false, false},
		{"tiny reply cap", HTTPConfig{MaxReplyBytes: 10}, "max reply bytes", 0, 0, 0, false, false},
		{"negative concurrency cap", HTTPConfig{MaxConcurrentRequests: -1}, "max concurrent requests", 0, 0, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.cfg.settle()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("settle: %v, want %q", err, tc.wantErr)
				}
				if _, err := NewHTTPHandler(newTestServer(testTools{}), tc.cfg); err == nil {
					t.Fatal("NewHTTPHandler accepted the configuration")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.RequestTimeout != tc.request || st.WriteTimeout != tc.write || st.ShutdownTimeout != tc.shutdown {
				t.Fatalf("request %v write %v shutdown %v, want %v %v %v", st.RequestTimeout, st.WriteTimeout, st.ShutdownTimeout, tc.request, tc.write, tc.shutdown)
			}
			var logs testkit.Buffer
			cfg := tc.cfg
			cfg.Logger = slogTo(&logs)
			_, cancel, served := startServing(t, testTools{}, cfg)
			cancel()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(logs.String(), "is not longer than the request timeout"); got != tc.wantWarnWrite {
				t.Fatalf("write timeout warning %v, want %v:\n%s", got, tc.wantWarnWrite, logs.String())
			}
			if got := strings.Contains(logs.String(), "is not longer than the write timeout"); got != tc.wantWarnStop {
				t.Fatalf("shutdown warning %v, want %v:\n%s", got, tc.wantWarnStop, logs.String())
			}
		})
	}
}

// TestShutdownTurnsReadyzUnavailable: once ServeHTTP's context ends, /readyz
// answers 503 at once while the server keeps serving for DrainDelay, a call
// still running when the drain ends finishes, and then the listener closes.
func TestShutdownTurnsReadyzUnavailable(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	var logs testkit.Buffer
	// The /readyz request after cancel must land within DrainDelay: 2 s
	// leaves a loaded, race-enabled run room (a request takes milliseconds).
	mcpURL, cancel, served := startServing(t, testTools{slowStarted: started, slowRelease: release},
		HTTPConfig{DrainDelay: 2 * time.Second, Logger: slogTo(&logs)})
	defer cancel()
	base := strings.TrimSuffix(mcpURL, "/mcp")
	client := &http.Client{Transport: &http.Transport{}}
	if resp, _, err := rawPost(client, base+"/readyz", http.MethodGet, "", nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %v %v", resp, err)
	}
	calls := make(chan callOutcome, 1)
	go func() {
		resp, b, err := rawPost(&http.Client{Transport: &http.Transport{}}, mcpURL, http.MethodPost, callBody(1, "slow", nil), nil)
		if err != nil {
			calls <- callOutcome{err: err}
			return
		}
		calls <- callOutcome{status: resp.StatusCode, body: b}
	}()
	<-started
	cancel()
	resp, body, err := rawPost(&http.Client{Transport: &http.Transport{}}, base+"/readyz", http.MethodGet, "", nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("draining")) {
		t.Fatalf("/readyz during the drain: %v %v %s", resp, err, body)
	}
	// The call is held until the drain is over and shutdown has begun, so
	// it is one the shutdown must wait for.
	if !strings.Contains(logs.WaitCount("shutting down", 1, testkit.Patience), "shutting down") {
		t.Fatalf("shutdown did not begin after the drain:\n%s", logs.String())
	}
	select {
	case err := <-served:
		t.Fatalf("ServeHTTP returned (%v) while a call was in flight", err)
	default:
	}
	close(release)
	out := <-calls
	if out.err != nil || out.status != http.StatusOK {
		t.Fatalf("in-flight call: %v %d %s", out.err, out.status, out.body)
	}
	if text, isErr := toolText(t, decodeReply(t, out.body).Result); isErr || text != "slow done" {
		t.Fatalf("in-flight call answered %q", text)
	}
	if err := <-served; err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	if _, _, err := rawPost(&http.Client{Transport: &http.Transport{}}, base+"/readyz", http.MethodGet, "", nil); err == nil {
		t.Fatal("still serving after ServeHTTP returned")
	}
}

// TestConcurrentRequestCap: with the cap at 2 and two calls held in flight,
// a third POST is refused at once with 503, Retry-After and a JSON-RPC
// server_busy error, before its bearer is checked; the probes and the
// metadata still answer; the refusal is counted and warned about without
// request data; once one call ends, a new POST is served.
func TestConcurrentRequestCap(t *testing.T) {
	started, release := make(chan struct{}, 2), make(chan struct{}, 2)
	var logs testkit.Buffer
	var checked atomic.Int64
	m := metrics.New()
	srv := newStack(t, HTTPConfig{
		MaxConcurrentRequests: 2, Metrics: m, Logger: slogTo(&logs),
		RequireBearer: true, AuthorizationServers: []string{"https://as.example"},
		Authenticate: func(context.Context, string) AuthVerdict {
			checked.Add(1)
			return AuthVerdict{Outcome: AuthAccept}
		},
	}, testTools{slowStarted: started, slowRelease: release})
	// Registered after newStack, so it runs before the server closes: a
	// failing test does not leave calls held until the server gives up.
	t.Cleanup(func() { close(release) })
	bearer := hdr("Authorization", "Bearer t0k3n")
	calls := make(chan callOutcome, 2)
	for i := range 2 {
		go func() {
			resp, b, err := rawPost(&http.Client{Transport: &http.Transport{}}, srv.URL+"/mcp", http.MethodPost, callBody(i+1, "slow", nil), bearer)
			if err != nil {
				calls <- callOutcome{err: err}
				return
			}
			calls <- callOutcome{status: resp.StatusCode, body: b}
		}()
	}
	// Both calls must reach the slow tool; one answered before it did (a
	// refusal) fails the test here instead of leaving it waiting forever.
	for range 2 {
		select {
		case <-started:
		case out := <-calls:
			t.Fatalf("a call was answered before the slow tool started: %v %d %s", out.err, out.status, out.body)
		}
	}
	// The two calls' checks are made (one, or one each: concurrent
	// requests with the same bearer share one).
	checksBefore := checked.Load()

	secret := callBody(3, "echo", map[string]any{"text": "do-not-log-this"})
	resp, body := post(t, srv.URL+"/mcp", http.MethodPost, secret, bearer)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("over the cap: status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	var refusal struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Reason                string `json:"reason"`
				MaxConcurrentRequests int    `json:"max_concurrent_requests"`
			} `json:"data"`
		} `json:"error"`
	}
	// The body has been read before the slot was asked for, so the refusal
	// answers the request's own id.
	if err := json.Unmarshal(body, &refusal); err != nil || string(refusal.ID) != "3" || refusal.Error.Code != codeServerLimit ||
		refusal.Error.Data.Reason != "server_busy" || refusal.Error.Data.MaxConcurrentRequests != 2 {
		t.Fatalf("refusal body: %s", body)
	}
	if n := checked.Load(); n != checksBefore {
		t.Fatalf("bearer checked %d times, want %d (the refused request must not reach the check)", n, checksBefore)
	}
	for _, path := range []string{"/healthz", "/readyz", wellKnownPRM + "/mcp"} {
		if resp, b := post(t, srv.URL+path, http.MethodGet, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s while the cap is reached: status %d: %s", path, resp.StatusCode, b)
		}
	}
	if got := shedCount(t, m); got != 1 {
		t.Fatalf("%s = %v, want 1", metrics.NameShed, got)
	}
	warned := logs.WaitCount("concurrent request cap reached", 1, testkit.Patience)
	if !strings.Contains(warned, "level=WARN") || strings.Contains(logs.String(), "do-not-log-this") {
		t.Fatalf("refusal log:\n%s", logs.String())
	}

	// One call ends; its slot is freed once its reply is written, so a new
	// POST is served as soon as the server has finished with it.
	release <- struct{}{}
	if out := <-calls; out.err != nil || out.status != http.StatusOK {
		t.Fatalf("released call: %v %d %s", out.err, out.status, out.body)
	}
	var last []byte
	served := testkit.Eventually(testkit.Patience, func() bool {
		resp, b := post(t, srv.URL+"/mcp", http.MethodPost, callBody(4, "echo", map[string]any{"text": "hi"}), bearer)
		last = b
		return resp.StatusCode == http.StatusOK
	})
	if text, isErr := toolText(t, decodeReply(t, last).Result); !served || isErr || text != "echo: hi" {
		t.Fatalf("after a release: %s", last)
	}
	release <- struct{}{}
	if out := <-calls; out.err != nil || out.status != http.StatusOK {
		t.Fatalf("second call: %v %d %s", out.err, out.status, out.body)
	}
}

// shedCount reads the server_busy series of the shed-request counter.
func shedCount(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != metrics.NameShed {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "server_busy" {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
