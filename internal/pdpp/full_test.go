package pdpp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// withLimits rebuilds the adapter's RS client under a limiter of
// inFlight bytes (0: the default) with call budget timeout (0: 10 s), and
// sets the full ceiling (0: the default).
func withLimits(inFlight *inflight.Limiter, timeout time.Duration, fullMax int64) func(*pdpp.Config) {
	return func(c *pdpp.Config) {
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		client, err := rs.New(c.RS.BaseURL(), c.Token, rs.Options{Timeout: timeout, InFlight: inFlight})
		if err != nil {
			panic(err)
		}
		c.RS, c.FullMaxBytes = client, fullMax
	}
}

// fullPageRS is a LargeRS of records x chars characters of fill.
func fullPageRS(records, chars int, fill string) http.Handler {
	return benchmarks.LargeRS{Records: records, Chars: chars, Fill: fill}.Handler()
}

// boundedRead checks a full_too_large refusal: typed, naming detail, the
// ceiling, and a bounded read of the same data (the same call without
// detail) that answers within the tool's budget.
func boundedRead(t *testing.T, h *harness, r callResult, ceiling int64) {
	t.Helper()
	if !r.Res.IsError || r.errorCode() != pdpp.CodeFullTooLarge {
		t.Fatalf("want %s, got isError=%v code=%q:\n%.400s", pdpp.CodeFullTooLarge, r.Res.IsError, r.errorCode(), r.Text)
	}
	e := r.errorObject()
	if e["param"] != "detail" || e["max_full_bytes"] != float64(ceiling) {
		t.Errorf("refusal names param %v and ceiling %v, want detail and %d", e["param"], e["max_full_bytes"], ceiling)
	}
	tool, args, ok := continuation(e["bounded_read"])
	if !ok || tool != r.Tool || args["detail"] != nil {
		t.Fatalf("refusal names no bounded read of the same tool: %v", e["bounded_read"])
	}
	if !strings.Contains(r.Text, "--full-max-bytes") || !strings.Contains(r.Text, tool+" {") {
		t.Errorf("refusal text names neither the flag nor the bounded call:\n%s", r.Text)
	}
	h.mustOK(t, tool, args)
}

// TestCompactFetchCountsEscapedBytes fetches records of HTML, whose <, >
// and & the MCP library writes as six bytes each, at the default detail:
// the reply as encoded stays within fetch's budget.
func TestCompactFetchCountsEscapedBytes(t *testing.T) {
	budget, _ := mcptools.ResultBudgetOf("fetch")
	for _, fill := range []string{benchmarks.FillHTML, benchmarks.FillLessThan} {
		h := newHarness(t, fullPageRS(10, 30_000, fill), tokClient)
		for _, id := range []string{"p1", benchmarks.LargeRecordID} {
			r := h.mustOK(t, "fetch", map[string]any{"id": "cin_pages/pages:" + id})
			if n := len(mustJSON(r.Res)); n > budget.Limit(0) {
				t.Errorf("fill %q, record %s: compact fetch answered %d bytes, over its budget of %d", fill, id, n, budget.Limit(0))
			}
		}
	}
}

func TestFullIsCappedWhileBuilt(t *testing.T) {
	const ceiling = pdpp.MinFullMaxBytes
	cases := []struct {
		name    string
		rs      http.Handler
		tool    string
		args    map[string]any
		refused bool
		sized   bool // refused after the reply was built (its size known), not at the read
	}{
		{"page far over the ceiling stops at the read", fullPageRS(20, 20_000, benchmarks.FillLessThan),
			"query_records", map[string]any{"stream": "pages", "detail": "full"}, true, false},
		{"record far over the ceiling stops at the read", fullPageRS(10, 30_000, benchmarks.FillHTML),
			"fetch", map[string]any{"id": "cin_pages/pages:" + benchmarks.LargeRecordID, "detail": "full"}, true, false},
		{"page just over the ceiling is refused once measured", fullPageRS(5, 20_000, benchmarks.FillLessThan),
			"query_records", map[string]any{"stream": "pages", "detail": "full"}, true, true},
		{"page within the ceiling is served", fullPageRS(4, 10_000, benchmarks.FillLessThan),
			"query_records", map[string]any{"stream": "pages", "detail": "full"}, false, false},
		{"record within the ceiling is served", fullPageRS(4, 10_000, benchmarks.FillHTML),
			"fetch", map[string]any{"id": "cin_pages/pages:p1", "detail": "full"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := inflight.New(rs.DefaultMaxInFlightBytes)
			var mu sync.Mutex
			var peak int64
			lim.OnIdle(func(p int64) { mu.Lock(); peak = max(peak, p); mu.Unlock() })
			h := newHarnessWith(t, tc.rs, tokClient, withLimits(lim, 0, ceiling))
			r := h.call(t, tc.tool, tc.args)
			ex, _ := h.log.last(isRecordsPath)
			if !tc.refused {
				if r.Res.IsError {
					t.Fatalf("refused:\n%s", r.Text)
				}
				if !jsonEqual(t, mustRaw(r.Structured["data"]), ex.Body) {
					t.Errorf("full data differs from the RS body")
				}
				return
			}
			mu.Lock()
			callPeak := peak
			mu.Unlock()
			// The reads of the refused call held at most the ceiling and
			// its envelope margin (plus the token check's schema), however
			// long the body.
			if limit := int64(ceiling) + 64<<10 + 16<<10; callPeak > limit {
				t.Errorf("bytes in flight peaked at %d for a ceiling of %d", callPeak, ceiling)
			}
			_, sized := r.errorObject()["full_bytes"]
			if sized != tc.sized {
				t.Errorf("refusal carries full_bytes=%v, want %v (body of %d bytes)", sized, tc.sized, len(ex.Body))
			}
			boundedRead(t, h, r, ceiling)
		})
	}
}

func TestInFlightBoundRefusesTyped(t *testing.T) {
	cases := []struct {
		name    string
		limit   int64
		hold    int64 // held by another call during this one
		timeout time.Duration
	}{
		{"a body over the whole bound", 256 << 10, 0, 0},
		{"no room before the call's deadline", 1 << 20, 900 << 10, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := inflight.New(tc.limit)
			if tc.hold > 0 {
				other := lim.Open()
				if err := other.Reserve(context.Background(), tc.hold); err != nil {
					t.Fatal(err)
				}
				defer other.Close()
			}
			h := newHarnessWith(t, fullPageRS(10, 40_000, benchmarks.FillLessThan), tokClient, withLimits(lim, tc.timeout, 0))
			r := h.call(t, "query_records", map[string]any{"stream": "pages"})
			if !r.Res.IsError || r.errorCode() != rs.CodeServerBusy {
				t.Fatalf("want %s, got isError=%v code=%q:\n%.300s", rs.CodeServerBusy, r.Res.IsError, r.errorCode(), r.Text)
			}
			if lim.Held() != tc.hold {
				t.Errorf("limiter holds %d after the call, want %d", lim.Held(), tc.hold)
			}
		})
	}
}

// serveAdapterHTTP serves an adapter over rsHandler at /mcp through the
// hosted transport, as pdpp-mcp-server http does.
func serveAdapterHTTP(t *testing.T, rsHandler http.Handler, fullMax int64) (mcpURL string, log *reqLog) {
	t.Helper()
	log = &reqLog{next: rsHandler}
	rsSrv := httptest.NewServer(log)
	t.Cleanup(rsSrv.Close)
	source := func(context.Context) (string, error) { return tokClient, nil }
	client, err := rs.New(rsSrv.URL, source, rs.Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := pdpp.NewServer(pdpp.New(pdpp.Config{RS: client, Token: source, FullMaxBytes: fullMax}), pdpp.ServerOptions{})
	h, err := transport.NewHTTPHandler(s, transport.HTTPConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", log
}

func TestFullRepliesOverHTTPCarryTheBodyAsSent(t *testing.T) {
	cases := []struct {
		name string
		fill string
		tool string
		args map[string]any
	}{
		{"query_records, a page of <", benchmarks.FillLessThan, "query_records", map[string]any{"stream": "pages", "detail": "full"}},
		{"query_records, a page of HTML", benchmarks.FillHTML, "query_records", map[string]any{"stream": "pages", "detail": "full"}},
		{"fetch, a record of <", benchmarks.FillLessThan, "fetch", map[string]any{"id": "cin_pages/pages:" + benchmarks.LargeRecordID, "detail": "full"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, log := serveAdapterHTTP(t, fullPageRS(10, 30_000, tc.fill), 0)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tc.tool, mustJSON(tc.args))
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			reply, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ex, ok := log.last(isRecordsPath)
			if !ok {
				t.Fatal("RS not read")
			}
			// The RS body is on the wire as the RS sent it: not one < of it
			// became \u003c, and the reply is the body plus a few KiB.
			if !bytes.Contains(reply, ex.Body) {
				t.Fatalf("the reply does not carry the RS body verbatim (%d bytes of reply for a %d-byte body)", len(reply), len(ex.Body))
			}
			if extra := len(reply) - len(ex.Body); extra > 32<<10 {
				t.Errorf("the reply is %d bytes over the RS body", extra)
			}
			var r struct {
				Result struct {
					IsError           bool            `json:"isError"`
					StructuredContent json.RawMessage `json:"structuredContent"`
				} `json:"result"`
			}
			if err := json.Unmarshal(reply, &r); err != nil || r.Result.IsError {
				t.Fatalf("reply: %v %.300s", err, reply)
			}
			var sc struct {
				Data json.RawMessage `json:"data"`
			}
			_ = json.Unmarshal(r.Result.StructuredContent, &sc)
			if !bytes.Equal(sc.Data, ex.Body) {
				t.Errorf("structuredContent.data is not the RS body byte for byte")
			}
		})
	}
	t.Run("clients decode and validate it", func(t *testing.T) {
		url, _ := serveAdapterHTTP(t, fullPageRS(4, 20_000, benchmarks.FillHTML), 0)
		ctx := context.Background()
		c, err := client.NewStreamableHttpClient(url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "full-http-test", Version: "0"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "fetch", map[string]any{"id": "cin_pages/pages:p2", "detail": "full"}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("mcp-go client: %v %v", err, res)
		}
		data, _ := res.StructuredContent.(map[string]any)["data"].(map[string]any)
		fields, _ := data["data"].(map[string]any)
		if text, _ := fields["text"].(string); len(text) != 20_000 || !strings.HasPrefix(text, benchmarks.FillHTML) {
			t.Errorf("mcp-go client decoded a text of %d bytes", len(text))
		}

		// The official SDK client validates structuredContent against the
		// outputSchema it listed, and refuses a result that does not.
		cl := sdk.NewClient(&sdk.Implementation{Name: "full-http-sdk", Version: "0"}, nil)
		cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"fetch", map[string]any{"id": "cin_pages/pages:p1", "detail": "full"}},
			{"query_records", map[string]any{"stream": "pages", "detail": "full"}},
			{"read_record_field", map[string]any{"id": "cin_pages/pages:p1", "field_path": "text", "detail": "full"}},
		} {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: call.tool, Arguments: call.args})
			if err != nil || res.IsError {
				t.Errorf("official SDK client, %s: %v %v", call.tool, err, res)
			}
		}
	})
}

// TestFullCallsTakeTurnsUnderTheBound fires more full calls at once than
// the bound on bytes in flight holds bodies for: they wait for each other
// in turn, and every one is answered (none waits while holding a body, so
// none waits out its budget).
func TestFullCallsTakeTurnsUnderTheBound(t *testing.T) {
	const calls = 6
	// Two 60 KB pages at a time: the turns do not depend on the pages'
	// size, only on how many fit the bound.
	lim := inflight.New(130 << 10)
	h := newHarnessWith(t, fullPageRS(10, 6_000, benchmarks.FillLessThan), tokClient, withLimits(lim, 8*time.Second, 1<<20))
	var wg sync.WaitGroup
	results := make([]callResult, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.call(t, "query_records", map[string]any{"stream": "pages", "detail": "full"})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Res.IsError {
			t.Errorf("call %d: %s", i, r.errorCode())
		}
	}
	if lim.Held() != 0 {
		t.Errorf("limiter holds %d after every call", lim.Held())
	}
}
