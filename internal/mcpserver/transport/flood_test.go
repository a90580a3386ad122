package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/splice"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// paddedCall is an echo call whose body is size bytes (padded in _meta).
func paddedCall(id, size int) string {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"pad":"`, id)
	tail := `"}}}`
	return head + strings.Repeat("x", max(size-len(head)-len(tail), 0)) + tail
}

// dialFrom returns a dialer whose connections leave from the loopback
// address ip (127.0.0.0/8 is all loopback on Linux).
func dialFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
}

// stallLoop opens a connection from ip, sends headers declaring a body of
// 100,000 bytes and 10 of them, waits for the answer (or the close), and
// starts again a moment later, until ctx ends. It counts the connections it opened.
func stallLoop(ctx context.Context, addr, ip string, opened *atomic.Int64) {
	d := dialFrom(ip)
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		opened.Add(1)
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\"", addr)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		_, _ = io.Copy(io.Discard, bufio.NewReader(conn)) // until the server closes it
		stop()
		conn.Close()
		time.Sleep(500 * time.Millisecond) // then again: each keeps its place held most of the time
	}
}

// TestStalledBodiesFromManyNetworks: 8 addresses in 8 different /24
// prefixes each keep 32 connections that send 10 body bytes and stall
// (reconnecting as soon as one is cut), against the default bounds. An
// honest client from a ninth prefix gets at least 95% of its 100 KB and
// chunked requests answered: the stalled bodies are cut by the minimum
// rate after about a second, and the prefixes' shares leave it places.
func TestStalledBodiesFromManyNetworks(t *testing.T) {
	m := metrics.New()
	srv := newStack(t, HTTPConfig{Metrics: m}, testTools{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var opened atomic.Int64
	for p := range 8 {
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stallLoop(ctx, addr, fmt.Sprintf("127.0.%d.1", 10+p), &opened)
			}()
		}
	}
	defer func() { cancel(); wg.Wait() }()
	testkit.Eventually(testkit.Patience, func() bool { return opened.Load() >= 256 })
	time.Sleep(200 * time.Millisecond) // the stalled bodies hold their places

	honest := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialFrom("127.0.99.1").DialContext}}
	perKind := 20 // requests of each kind, spread over about 2 s
	if testkit.RaceEnabled {
		perKind = 8 // each 100 KB body costs the race detector a few hundred ms
	}
	answered, total := 0, 0
	var failures []string
	for i := range perKind {
		for _, chunked := range []bool{false, true} {
			total++
			if failure := postLargeEcho(honest, srv.URL+"/mcp", i+1, chunked, nil); failure == "" {
				answered++
			} else {
				failures = append(failures, failure)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if answered*100 < total*95 {
		t.Fatalf("%d of %d honest requests answered, want at least 95%%: %v", answered, total, failures)
	}
	// The stalled bodies were cut by rate, and reconnected.
	gathered, _ := m.Registry().Gather()
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	if n, _ := testkit.Sample(fams, metrics.NameShed, map[string]string{"reason": reasonBodyTooSlow}); n < 100 {
		t.Errorf("%s{body_too_slow} = %v, want the stalled bodies cut (at least 100)", metrics.NameShed, n)
	}
	t.Logf("%d/%d honest answered; %d stalled connections opened", answered, total, opened.Load())
}

// TestMinimumBodyRate: a body that stalls is answered 408 body_too_slow
// after about a second (bodyRateGrace), long before the body read timeout;
// one that trickles above the rate is read whole and served; with the rate
// off the stalled body waits for the timeout.
func TestMinimumBodyRate(t *testing.T) {
	tests := []struct {
		name       string
		rate       int64
		chunk      int           // bytes sent per tick; 0: 10 bytes, then nothing
		wantStatus int           // of the answer
		within     time.Duration // the answer comes before this
		after      time.Duration // and not before this
	}{
		{"a stalled body is cut by rate", 0, 0, http.StatusRequestTimeout, 2500 * time.Millisecond, 900 * time.Millisecond},
		{"a body above the rate is served", 0, 300, http.StatusOK, 5 * time.Second, 0},
		{"with no minimum a stalled body waits for the timeout", -1, 0, http.StatusRequestTimeout, 5 * time.Second, 2900 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStack(t, HTTPConfig{BodyReadTimeout: 3 * time.Second, MinBodyRate: tc.rate}, testTools{})
			addr := strings.TrimPrefix(srv.URL, "http://")
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := paddedCall(1, 3000)
			start := time.Now()
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, len(body))
			answer := make(chan *http.Response, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					resp = nil
				}
				answer <- resp
			}()
			if tc.chunk == 0 {
				_, _ = conn.Write([]byte(body[:10]))
			} else {
				// 300 bytes every 100 ms: 3,000 B/s, three times the rate.
				for sent := 0; sent < len(body); sent += tc.chunk {
					_, _ = conn.Write([]byte(body[sent:min(sent+tc.chunk, len(body))]))
					time.Sleep(100 * time.Millisecond)
				}
			}
			select {
			case resp := <-answer:
				elapsed := time.Since(start)
				if resp == nil || resp.StatusCode != tc.wantStatus || elapsed < tc.after {
					t.Fatalf("answer %+v after %v, want %d after at least %v", resp, elapsed, tc.wantStatus, tc.after)
				}
				if tc.wantStatus == http.StatusRequestTimeout {
					b, _ := io.ReadAll(resp.Body)
					want := reasonBodyTooSlow
					if tc.rate < 0 {
						want = reasonBodyReadTimeout
					}
					if !strings.Contains(string(b), `"reason":"`+want+`"`) {
						t.Fatalf("408 body %s, want reason %s", b, want)
					}
				}
			case <-time.After(tc.within):
				t.Fatalf("no answer within %v", tc.within)
			}
		})
	}
}

// TestReadyzIgnoresStrangersBodies: /readyz stays 200 while every
// reading place is taken by stalled bodies: any sender can take them, on
// every replica at once, so they say nothing a load balancer can act on.
func TestReadyzIgnoresStrangersBodies(t *testing.T) {
	srv := newStack(t, HTTPConfig{MaxBodyReaders: 2, MaxBodyReadersPerClient: 2, BodyReadTimeout: 5 * time.Second, MinBodyRate: -1}, testTools{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	ready := func() int { resp, _ := post(t, srv.URL+"/readyz", http.MethodGet, "", nil); return resp.StatusCode }
	answers := make(chan int, 3)
	for range 3 { // two take the places, the third is refused
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
		go func() {
			status := 0
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				status = resp.StatusCode
			}
			answers <- status
		}()
	}
	select {
	case status := <-answers:
		if status != http.StatusServiceUnavailable {
			t.Fatalf("the first answer to three stalled bodies with two places: %d, want 503", status)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no stalled body was refused with two places for three")
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if s := ready(); s != http.StatusOK {
			t.Fatalf("/readyz %d while strangers hold every reading place", s)
		}
	}
}

func TestReaderPlacesShareBetweenPrefixes(t *testing.T) {
	key := func(s string) netip.Prefix { return clientKey(s + ":1") }
	p := newReaderPlaces(12, 8, 8)
	// One prefix alone takes up to its cap.
	for i := range 8 {
		if r := p.take(key(fmt.Sprintf("10.0.0.%d", i))); r != "" {
			t.Fatalf("place %d of a lone prefix: %s", i, r)
		}
	}
	if r := p.take(key("10.0.0.9")); r != reasonPrefixReadersBusy {
		t.Fatalf("over the prefix cap: %q", r)
	}
	// A second prefix finds room; while two hold places, neither takes one
	// at or past 12/3 = 4, so a third finds a place too.
	for i := range 4 {
		if r := p.take(key(fmt.Sprintf("10.0.1.%d", i))); r != "" {
			t.Fatalf("place %d of the second prefix: %s", i, r)
		}
	}
	if r := p.take(key("10.0.1.9")); r != reasonReadersBusy {
		t.Fatalf("with every place taken: %q", r)
	}
	p.release(key("10.0.0.1"))
	p.release(key("10.0.0.2"))
	if r := p.take(key("10.0.1.8")); r != reasonPrefixReadersBusy {
		t.Fatalf("the second prefix at its share of 4: %q", r)
	}
	if r := p.take(key("10.0.2.1")); r != "" {
		t.Fatalf("a third prefix: %q", r)
	}
}

func TestSlotShares(t *testing.T) {
	g := newSlotGate(4, 4)
	for i := range 4 {
		if r := g.take("a"); r != "" {
			t.Fatalf("slot %d of a lone tenant: %s", i, r)
		}
	}
	if r := g.take("b"); r != reasonServerBusy {
		t.Fatalf("every slot taken: %q", r)
	}
	g.release("a")
	if r := g.take("b"); r != "" {
		t.Fatalf("a freed slot for another tenant: %q", r)
	}
	g.release("a")
	// Two tenants: a holds 2, its share of 4; b holds 1.
	if r := g.take("a"); r != reasonShareBusy {
		t.Fatalf("a at its share: %q", r)
	}
	if r := g.take("b"); r != "" {
		t.Fatalf("b under its share: %q", r)
	}
	g.release("a")
	g.release("a")
	g.release("b")
	g.release("b")
	if g.inUse != 0 || len(g.byTenant) != 0 {
		t.Fatalf("left: %d in use, %v", g.inUse, g.byTenant)
	}
	// The contended cap: with others served, a token holds 2 of 12; an
	// address (perhaps a proxy for many) only its share of 12/k.
	g = newSlotGate(12, 2)
	a, b, addr := tokenTenant+"a", tokenTenant+"b", "a:192.0.2.1/32"
	_, _ = g.take(a), g.take(a)
	if r := g.take(a); r != "" {
		t.Fatalf("a alone: %q", r)
	}
	if r := g.take(b); r != "" {
		t.Fatalf("b: %q", r)
	}
	g.release(a)
	if r := g.take(a); r != reasonShareBusy {
		t.Fatalf("token a at the contended cap with b served: %q", r)
	}
	for i := range 2 {
		if r := g.take(addr); r != "" {
			t.Fatalf("address place %d: %q", i, r)
		}
	}
	if r := g.take(addr); r != "" {
		t.Fatalf("an address past the token cap, within 12/3: %q", r)
	}
}

// TestBatchGivesBackEachAnswerBeforeItsNextItem: a batch whose items each
// hold budget bytes in their reply (a spliced value, as a full reply's RS
// body) gives them back once the answer is written, before its next item
// runs, so items that each need most of the budget all succeed: the batch
// never waits for bytes while it holds bytes. Every item starts with the
// budget empty.
func TestBatchGivesBackEachAnswerBeforeItsNextItem(t *testing.T) {
	const value = 1000
	lim := inflight.New(value * 3 / 2) // room for one item's bytes at a time
	var heldAtStart []int64
	var mu sync.Mutex
	s := newTestServer(testTools{})
	s.AddTool(mcp.Tool{Name: "held", Title: "Held", Description: "Return budget bytes by reference.",
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			heldAtStart = append(heldAtStart, lim.Held())
			mu.Unlock()
			acct := lim.OpenFor(ctx)
			defer acct.Close()
			wait, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := acct.Reserve(wait, value); err != nil {
				return mcp.NewToolResultError("busy: " + err.Error()), nil
			}
			return &mcp.CallToolResult{
				Content:           []mcp.Content{mcp.NewTextContent("held")},
				StructuredContent: map[string]any{"data": splice.Value(ctx, splicedBody(value/10), acct.Retain())},
			}, nil
		})
	h, err := NewHTTPHandler(s, HTTPConfig{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, body := post(t, srv.URL+"/mcp", http.MethodPost, batchOf(3, "held", nil), nil)
	var answers []rpcReply
	if err := json.Unmarshal(body, &answers); err != nil || resp.StatusCode != http.StatusOK || len(answers) != 3 {
		t.Fatalf("batch: %d %v %.300s", resp.StatusCode, err, body)
	}
	for _, a := range answers {
		if text, isErr := toolText(t, a.Result); isErr || text != "held" {
			t.Fatalf("item %s: %s", a.ID, text)
		}
	}
	if !slices.Equal(heldAtStart, []int64{0, 0, 0}) || lim.Held() != 0 {
		t.Fatalf("budget held when each item started: %v (after: %d), want all 0", heldAtStart, lim.Held())
	}
}

// countingWriter counts the bytes of a reply the client has read so far.
type countingWriter struct {
	n   atomic.Int64
	buf strings.Builder // written by the reading goroutine only
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.buf.Write(p)
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// TestBatchHoldsAtMostOneCompactReply: a batch gathers at most
// BatchHeldBytes of its answers; past that its reply is streamed, each
// answer written as it comes. Sixteen compact answers of 30 KiB once all
// waited in the request's memory (480 KiB, outside the worst-case heap of
// docs/deploy.md). Each item here starts only once the client has read
// every answer but the last one before it (or 5 s have passed, which fails
// the test), so a batch that held two answers or more would fail. Small
// answers are still gathered into one reply with its Content-Length.
func TestBatchHoldsAtMostOneCompactReply(t *testing.T) {
	const items, wait = 16, 5 * time.Second
	tests := []struct {
		name     string
		size     int // bytes of each answer's text
		streamed bool
	}{
		{"16 answers of 30 KiB are streamed as they come", 30 << 10, true},
		{"16 answers of 100 bytes are gathered", 100, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var (
				read    countingWriter
				item    atomic.Int64
				stalled atomic.Int64 // 1 + the first item that found its predecessors unread
			)
			deadline := time.Now().Add(wait)
			s := newTestServer(testTools{})
			s.AddTool(mcp.Tool{Name: "answer", Title: "Answer", Description: "Answer with text of a fixed size.",
				RawInputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
				func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					i := item.Add(1) - 1
					// Items 0..i-1 are answered; all but the last must have reached the client.
					for tc.streamed && i >= 2 && stalled.Load() == 0 && read.n.Load() < (i-1)*int64(tc.size) {
						if time.Now().After(deadline) {
							stalled.Store(i + 1)
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
					return mcp.NewToolResultText(strings.Repeat("x", tc.size)), nil
				})
			h, err := NewHTTPHandler(s, HTTPConfig{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(batchOf(items, "answer", nil)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(&read, resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if n := stalled.Load(); n != 0 {
				t.Fatalf("item %d started before the client had read the answers before its predecessor (%d bytes read): the batch held them", n-1, read.n.Load())
			}
			if streamed := resp.ContentLength < 0; streamed != tc.streamed {
				t.Fatalf("Content-Length %d, want streamed %v", resp.ContentLength, tc.streamed)
			}
			var answers []rpcReply
			if err := json.Unmarshal([]byte(read.buf.String()), &answers); err != nil || resp.StatusCode != http.StatusOK || len(answers) != items {
				t.Fatalf("batch: %d %v, %d answers", resp.StatusCode, err, len(answers))
			}
			for i, a := range answers {
				if text, isErr := toolText(t, a.Result); isErr || len(text) != tc.size || string(a.ID) != fmt.Sprint(i+1) {
					t.Fatalf("answer %d: id %s, %d bytes, error %v", i, a.ID, len(text), isErr)
				}
			}
		})
	}
}

// postLargeEcho sends the echo call padded to 100 KB (paddedCall), whole
// or chunked in two parts, from c with header, and returns "" when it was
// answered, else why not.
func postLargeEcho(c *http.Client, url string, id int, chunked bool, header http.Header) string {
	body := paddedCall(id, 100_000)
	var rd io.Reader = strings.NewReader(body)
	if chunked {
		rd = io.MultiReader(strings.NewReader(body[:50_000]), strings.NewReader(body[50_000:]))
	}
	req, _ := http.NewRequest(http.MethodPost, url, rd)
	if chunked {
		req.ContentLength = -1
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "echo: hi") {
		return ""
	}
	return fmt.Sprintf("%d %.120s", resp.StatusCode, b)
}
