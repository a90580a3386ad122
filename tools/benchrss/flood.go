package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// floodOptions describe the batch flood: clients concurrent POSTs, each one
// JSON-RPC batch of items read_record_field calls.
type floodOptions struct {
	clients int
	items   int
	maxRSS  int64 // the child's peak resident set must stay below this
}

// floodResult is what the flood measured.
type floodResult struct {
	opt          floodOptions
	idle, after  memory
	rsRequests   int64 // all RS requests, token checks included
	dataRequests int64 // RS requests other than the token check (/v1/schema)
	statuses     map[int]int
	maxPerClient int64
}

// flood serves the demo RS behind a request counter, starts the server
// binary in HTTP mode, sends the batches at once and reads the child's
// memory and the RS request count. It fails when the peak RSS reaches
// maxRSS or the RS saw more than the batch cap of data requests per batch
// (token checks on /v1/schema are counted apart).
func flood(ctx context.Context, bin string, o floodOptions) (*floodResult, error) {
	rsServer, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: benchmarks.ClientToken}})
	if err != nil {
		return nil, fmt.Errorf("demo RS: %w", err)
	}
	defer rsServer.Close()
	var rsRequests, dataRequests atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rsRequests.Add(1)
		if !strings.HasPrefix(r.URL.Path, "/v1/schema") {
			dataRequests.Add(1)
		}
		rsServer.Handler().ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rs.Serve(ln) }()
	defer rs.Close()
	rsURL := "http://" + ln.Addr().String()

	c, err := startChild(ctx, bin, rsURL)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	addr := c.addr
	res := &floodResult{opt: o, statuses: map[int]int{}}
	pid := c.cmd.Process.Pid
	if res.idle, err = readMemory(pid); err != nil {
		return nil, err
	}

	parts := make([]string, o.items)
	for i := range parts {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": map[string]any{
			"name": "read_record_field", "arguments": map[string]any{"id": benchmarks.FetchID, "field_path": "text"}}})
		parts[i] = string(b)
	}
	body := "[" + strings.Join(parts, ",") + "]"
	before, beforeData := rsRequests.Load(), dataRequests.Load()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, o.clients)
	for range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+benchmarks.ClientToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			mu.Lock()
			res.statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, err
	}
	res.rsRequests = rsRequests.Load() - before
	res.dataRequests = dataRequests.Load() - beforeData
	if res.after, err = readMemory(pid); err != nil {
		return nil, err
	}
	res.maxPerClient = int64(transport.DefaultMaxBatchItems)
	return res, nil
}

// ok reports whether the flood stayed within its bounds.
func (r *floodResult) ok() bool {
	return r.after.Peak < r.opt.maxRSS && r.dataRequests <= int64(r.opt.clients)*r.maxPerClient
}

func (r *floodResult) write(w io.Writer) {
	fmt.Fprintf(w, "## Batch flood: %d concurrent batches of %d read_record_field calls\n\n", r.opt.clients, r.opt.items)
	fmt.Fprintln(w, "| measure | value | bound | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	fmt.Fprintf(w, "| child RSS idle | %s | | |\n", mb(r.idle.RSS))
	fmt.Fprintf(w, "| child peak RSS after the flood | %s | < %s | %s |\n", mb(r.after.Peak), mb(r.opt.maxRSS), verdict(r.after.Peak < r.opt.maxRSS))
	fmt.Fprintf(w, "| RS data requests (batch cap %d per batch) | %d | <= %d | %s |\n", r.maxPerClient, r.dataRequests, int64(r.opt.clients)*r.maxPerClient, verdict(r.dataRequests <= int64(r.opt.clients)*r.maxPerClient))
	fmt.Fprintf(w, "| RS requests, token checks included | %d | | |\n", r.rsRequests)
	fmt.Fprintf(w, "| HTTP statuses | %v | | |\n", r.statuses)
}
