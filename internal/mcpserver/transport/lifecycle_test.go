package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// startServing runs ServeHTTP on a free loopback port and returns the /mcp
// URL, a cancel func and the channel ServeHTTP's result arrives on.
func startServing(t *testing.T, tt testTools, cfg HTTPConfig) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	h, err := NewHTTPHandler(newTestServer(tt), cfg)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make(chan net.Addr, 1)
	cfg.OnListen = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeHTTP(ctx, h, cfg) }()
	select {
	case a := <-addrs:
		return "http://" + a.String() + "/mcp", cancel, served
	case err := <-served:
		cancel()
		t.Fatalf("ServeHTTP: %v", err)
	}
	return "", cancel, served
}

type callOutcome struct {
	status int
	body   []byte
	err    error
}

func TestGracefulShutdown(t *testing.T) {
	tests := []struct {
		name            string
		slowFor         time.Duration // 0: the call runs until the test releases it
		shutdownTimeout time.Duration
		wantServeErr    bool
		wantCallOK      bool
	}{
		{"in-flight call completes", 0, 5 * time.Second, false, true},
		{"shutdown timeout bounds a stuck call", 30 * time.Second, 150 * time.Millisecond, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			tt := testTools{slowStarted: started, slowFor: tc.slowFor}
			release := make(chan struct{})
			if tc.slowFor == 0 {
				tt.slowRelease = release
			}
			url, cancel, served := startServing(t, tt, HTTPConfig{ShutdownTimeout: tc.shutdownTimeout})
			defer cancel()
			client := &http.Client{Transport: &http.Transport{}}
			calls := make(chan callOutcome, 1)
			go func() {
				resp, b, err := rawPost(client, url, http.MethodPost, callBody(1, "slow", nil), nil)
				if err != nil {
					calls <- callOutcome{err: err}
					return
				}
				calls <- callOutcome{status: resp.StatusCode, body: b}
			}()
			<-started
			begin := time.Now()
			cancel()

			// The listener closes at once: new connections are refused.
			refused := testkit.Eventually(testkit.Patience, func() bool {
				_, _, err := rawPost(&http.Client{Transport: &http.Transport{}}, url, http.MethodPost, rpc(1, "ping", nil), nil)
				return err != nil
			})
			if !refused {
				t.Fatal("new requests still served after shutdown began")
			}
			if tc.wantCallOK {
				// The call is still held: ServeHTTP must be waiting for it.
				select {
				case err := <-served:
					t.Fatalf("ServeHTTP returned (%v) while a call was in flight", err)
				default:
				}
				close(release)
			}

			out := <-calls
			serveErr := <-served
			if (serveErr != nil) != tc.wantServeErr {
				t.Fatalf("ServeHTTP: %v, want error %v", serveErr, tc.wantServeErr)
			}
			if !tc.wantCallOK {
				if out.err == nil && out.status == http.StatusOK {
					t.Fatalf("stuck call answered %s", out.body)
				}
				// Far below the stuck call's 30 s, far above the 150 ms bound.
				if took := time.Since(begin); took > 10*time.Second {
					t.Fatalf("shutdown took %v", took)
				}
				return
			}
			if out.err != nil || out.status != http.StatusOK {
				t.Fatalf("in-flight call: %v status %d %s", out.err, out.status, out.body)
			}
			if text, isErr := toolText(t, decodeReply(t, out.body).Result); isErr || text != "slow done" {
				t.Fatalf("in-flight call answered %q", text)
			}
		})
	}
}

// settleGoroutines waits until the goroutine count drops to at most want.
func settleGoroutines(want int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConcurrentClients(t *testing.T) {
	const clients, callsEach = 50, 40
	before := runtime.NumGoroutine()
	begin := time.Now()

	url, cancel, served := startServing(t, testTools{}, HTTPConfig{RequireBearer: true})
	httpTransport := &http.Transport{MaxIdleConnsPerHost: clients}
	httpClient := &http.Client{Transport: httpTransport}

	var failures atomic.Int64
	var firstErr sync.Once
	var firstMsg string
	fail := func(format string, args ...any) {
		failures.Add(1)
		firstErr.Do(func() { firstMsg = fmt.Sprintf(format, args...) })
	}
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			token := fmt.Sprintf("client-%02d", i)
			tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(httpClient),
				transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
			if err != nil {
				fail("client %d: %v", i, err)
				return
			}
			var opts []client.ClientOption
			if i%2 == 1 {
				opts = append(opts, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
			}
			c := client.NewClient(tr, opts...)
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				fail("client %d start: %v", i, err)
				return
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				fail("client %d initialize: %v", i, err)
				return
			}
			for j := range callsEach {
				name, args, want := "echo", map[string]any{"text": fmt.Sprintf("%d/%d", i, j)}, fmt.Sprintf("echo: %d/%d", i, j)
				if j%4 == 3 {
					name, args, want = "whoami", nil, "bearer="+token+" authorization-header="
				}
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
				if err != nil {
					fail("client %d call %d: %v", i, j, err)
					return
				}
				if res.IsError || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != want {
					fail("client %d call %d: %+v, want %q", i, j, res.Content, want)
					return
				}
			}
		})
	}
	wg.Wait()
	// Clients hang up first; a connection the client dialled but never
	// used would otherwise hold the server's graceful shutdown for 5 s.
	httpTransport.CloseIdleConnections()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	t.Logf("%d clients x %d calls in %v", clients, callsEach, time.Since(begin))
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d failures; first: %s", n, firstMsg)
	}
	if after := settleGoroutines(before, testkit.Patience); after > before {
		var dump strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Fatalf("goroutines: %d before, %d after shutdown\n%s", before, after, dump.String())
	}
}

func TestServeStdio(t *testing.T) {
	t.Run("requests and EOF", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		defer outR.Close()
		var logs testkit.Buffer
		ctx := WithBearer(context.Background(), "stdio-token")
		done := make(chan error, 1)
		go func() {
			done <- ServeStdio(ctx, newTestServer(testTools{}), inR, outW, slogTo(&logs))
			outW.Close()
		}()

		lines := make(chan []byte, 64)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(outR)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines <- append([]byte(nil), sc.Bytes()...)
			}
		}()
		replies := map[string]json.RawMessage{}
		notifications := 0
		// read consumes stdout until it has the wanted replies and
		// notifications; every line must be a JSON-RPC message.
		read := func(wantReplies, wantNotifications int) {
			t.Helper()
			timeout := time.After(testkit.Patience)
			for len(replies) < wantReplies || notifications < wantNotifications {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatal("stdout closed early")
					}
					var m struct {
						JSONRPC string          `json:"jsonrpc"`
						ID      json.RawMessage `json:"id"`
						Method  string          `json:"method"`
						Result  json.RawMessage `json:"result"`
					}
					if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
						t.Fatalf("stdout carried a non-MCP line: %q", line)
					}
					if m.Method != "" {
						notifications++
					} else {
						replies[string(m.ID)] = m.Result
					}
				case <-timeout:
					t.Fatalf("have %d replies and %d notifications", len(replies), notifications)
				}
			}
		}
		// write runs in its own goroutine (the pipe blocks until read); a
		// failed write shows up as a read timeout.
		write := func(msgs ...string) {
			for _, m := range msgs {
				_, _ = io.WriteString(inW, m+"\n")
			}
		}
		// A client waits for the initialize reply before anything else.
		go write(initializeBody(1, "2025-11-25"))
		read(1, 0)
		go write(
			rpc(nil, "notifications/initialized", nil),
			rpc(2, "tools/list", nil),
			callBody(3, "echo", map[string]any{"text": "over stdio"}),
			callBody(4, "whoami", nil),
			callBody(5, "notify", nil),
		)
		read(5, 6)
		inW.Close()
		if err := <-done; err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
		wants := map[string]string{"3": "echo: over stdio", "4": "bearer=stdio-token authorization-header=", "5": "notified 6"}
		for id, want := range wants {
			if text, isErr := toolText(t, replies[id]); isErr || text != want {
				t.Errorf("reply %s: %q, want %q", id, text, want)
			}
		}
	})

	t.Run("context cancelled", func(t *testing.T) {
		inR, inW := io.Pipe()
		defer inW.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ServeStdio(ctx, newTestServer(testTools{}), inR, io.Discard, discardLogger()) }()
		time.Sleep(20 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("ServeStdio: %v", err)
			}
		case <-time.After(testkit.Patience):
			t.Fatal("ServeStdio ignored cancellation")
		}
	})
}
