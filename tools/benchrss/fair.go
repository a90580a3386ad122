package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// fairOptions describe the fairness check (-fair).
type fairOptions struct {
	batches   int           // concurrent batches of full calls
	items     int           // full calls per batch
	loopConns int           // connections looping full calls
	searches  int           // the other token's searches beside the loop
	maxSearch time.Duration // bound on the search beside the batches
	maxP95    time.Duration // bound on the p95 of the searches beside the loop
}

type fairResult struct {
	opt          fairOptions
	codes        map[string]int // batch items by outcome: ok or an error reason/code
	batchTime    time.Duration
	searchBeside time.Duration // the search beside the batches (p50 of one)
	directBeside time.Duration // the same search made to the RS directly, just after
	searchOK     bool
	loop         searchTimes // the searches beside the loop
	loopFailed   int         // of which failed
}

// narrowToken is the other tenant's bearer: the demo's narrow grant.
const narrowToken = "bench-narrow-token"

// fullPage asks for a "full" page of the demo transcripts (1.1 MB, in the reply).
var fullPage = map[string]any{"stream": "transcripts", "detail": "full", "limit": 50}

func rpcCall(id int, tool string, args map[string]any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return b
}

// rpcBatch is a JSON-RPC batch of n calls of tool with args, ids 1 to n.
func rpcBatch(n int, tool string, args map[string]any) []byte {
	items := make([]json.RawMessage, n)
	for i := range items {
		items[i] = rpcCall(i+1, tool, args)
	}
	b, _ := json.Marshal(items)
	return b
}

// fair runs the two phases against a server at its default flags.
func fair(ctx context.Context, bin string, o fairOptions) (*fairResult, error) {
	rsURL, stopRS, err := serveDemoRS(nil)
	if err != nil {
		return nil, err
	}
	defer stopRS()
	c, err := startChild(ctx, bin, rsURL)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	url := "http://" + c.addr + "/mcp"
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.loopConns + 8}}
	res := &fairResult{opt: o, codes: map[string]int{}}

	// Phase 1: concurrent batches of full calls, and one search beside them.
	batch := rpcBatch(o.items, "query_records", fullPage)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range o.batches {
		wg.Go(func() {
			status, b, err := postMCP(ctx, hc, url, benchmarks.ClientToken, "2025-03-26", batch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || status != http.StatusOK {
				res.codes[fmt.Sprintf("batch failed: %d %v", status, err)]++
				return
			}
			for code, n := range batchOutcomes(b) {
				res.codes[code] += n
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	beside := timedSearches(ctx, hc, url, narrowToken, 1, 0, nil)
	res.searchBeside, res.searchOK = beside.p50, beside.answered == 1
	// The RS's own answer to the search, for comparison: the demo RS serves
	// the batches' pages in this process too.
	direct := time.Now()
	getStatus(ctx, hc, rsURL+"/v1/search?q=budget&limit=3", narrowToken)
	res.directBeside = time.Since(direct)
	wg.Wait()
	res.batchTime = time.Since(start)

	// Phase 2: full calls looping on many connections, searches beside.
	loopCtx, stop := context.WithCancel(ctx)
	for range o.loopConns {
		wg.Go(func() {
			for loopCtx.Err() == nil {
				status, _, err := postMCP(loopCtx, hc, url, benchmarks.ClientToken, "2025-11-25", rpcCall(1, "query_records", fullPage))
				if err == nil && status == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond) // over its share: again soon
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	res.loop = timedSearches(ctx, hc, url, narrowToken, o.searches, 50*time.Millisecond, nil)
	stop()
	wg.Wait()
	res.loopFailed = o.searches - res.loop.answered
	return res, nil
}

// rpcAnswer is what the checks read of a JSON-RPC answer to a tools/call.
type rpcAnswer struct {
	Error *struct {
		Data struct{ Reason string } `json:"data"`
	} `json:"error"`
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"result"`
}

// outcome is the answer's result's outcome: "ok", or a tool error's code.
func (a *rpcAnswer) outcome() string {
	if a.Result == nil || !a.Result.IsError {
		return "ok"
	}
	var e struct{ Error struct{ Code string } }
	_ = json.Unmarshal(a.Result.StructuredContent, &e)
	return e.Error.Code
}

// batchOutcomes counts a batch's items by outcome: ok, data.reason, tool code.
func batchOutcomes(b []byte) map[string]int {
	var answers []rpcAnswer
	out := map[string]int{}
	if err := json.Unmarshal(b, &answers); err != nil {
		out["unreadable reply"]++
		return out
	}
	for _, a := range answers {
		if a.Error != nil {
			out[a.Error.Data.Reason]++
		} else {
			out[a.outcome()]++
		}
	}
	return out
}

func (r *fairResult) ok() bool {
	return r.batchesOK() && r.searchOK && r.searchBeside <= r.opt.maxSearch && r.loopFailed == 0 && r.loop.p95 <= r.opt.maxP95
}

// batchesOK: every batch answered, no item busy or out of time.
func (r *fairResult) batchesOK() bool {
	for code := range r.codes {
		if code != "ok" && code != "reply_too_large" {
			return false
		}
	}
	return r.codes["ok"] > 0
}

func (r *fairResult) write(w io.Writer) {
	o := r.opt
	fmt.Fprintf(w, "## Fair shares: one token's full calls beside another token's small searches\n\n")
	fmt.Fprint(w, measureHead)
	fmt.Fprintf(w, "| %d concurrent %d-item batches of full calls: items by outcome | %v in %s | no server_busy, request_timeout | %s |\n",
		o.batches, o.items, r.codes, r.batchTime.Round(10*time.Millisecond), verdict(r.batchesOK()))
	fmt.Fprintf(w, "| the other token's search beside them | %s (ok: %v) | <= %s | %s |\n",
		r.searchBeside.Round(time.Millisecond), r.searchOK, o.maxSearch, verdict(r.searchOK && r.searchBeside <= o.maxSearch))
	fmt.Fprintf(w, "| the same search made to the demo RS directly, just after (the RS serves the batches too) | %s | | |\n", r.directBeside.Round(time.Millisecond))
	fmt.Fprintf(w, "| its %d searches beside full calls looping on %d connections: p50, p95 | %s, %s (%d failed) | p95 <= %s | %s |\n",
		o.searches, o.loopConns, r.loop.p50.Round(time.Millisecond), r.loop.p95.Round(time.Millisecond), r.loopFailed, o.maxP95,
		verdict(r.loopFailed == 0 && r.loop.p95 <= o.maxP95))
}
