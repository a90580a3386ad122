package testkit

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startWait bounds how long Serve waits for a server to listen.
const startWait = 10 * time.Second

// ServeFunc runs a server until ctx ends. It calls onListen with the bound
// address once it serves, and onMetrics with the metrics listener's address
// (before onListen) when it has one.
type ServeFunc func(ctx context.Context, onListen, onMetrics func(net.Addr)) error

// Serve runs serve in a goroutine under a child of ctx and returns its
// address and metrics address (nil if none was reported first). The test
// fails if serve returns first or does not listen within 10 s. Cleanup
// cancels the context and waits for serve: no server outlives its test.
func Serve(t testing.TB, ctx context.Context, serve ServeFunc) (addr, metricsAddr net.Addr) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	// Each channel takes the one address a server reports, so serve never
	// blocks on a test that stopped waiting.
	bound, metricsAt := make(chan net.Addr, 1), make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, func(a net.Addr) { bound <- a }, func(a net.Addr) { metricsAt <- a })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case addr = <-bound:
	case err := <-done:
		t.Fatalf("server stopped before listening: %v", err)
	case <-time.After(startWait):
		t.Fatal("server did not start")
	}
	select {
	case metricsAddr = <-metricsAt:
	default:
	}
	return addr, metricsAddr
}

// Do sends one HTTP request and returns the answer and body. A body goes as
// JSON with an MCP client's Accept header; header values are set after.
func Do(t testing.TB, method, url, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
