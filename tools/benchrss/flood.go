package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// floodOptions describe the batch flood (-flood): clients POSTs at once.
type floodOptions struct {
	clients int
	items   int
	maxRSS  int64 // the child's peak resident set must stay below this
}

type floodResult struct {
	opt          floodOptions
	idle, after  memory
	rsRequests   int64 // all RS requests, token checks included
	dataRequests int64 // RS requests other than the token check (/v1/schema)
	statuses     map[int]int
}

// flood sends the batches at once to a server whose demo RS counts its
// requests (token checks on /v1/schema apart), then reads its memory and them.
func flood(ctx context.Context, bin string, o floodOptions) (*floodResult, error) {
	var rsRequests, dataRequests atomic.Int64
	rsURL, stopRS, err := serveDemoRS(func(demo http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rsRequests.Add(1)
			if !strings.HasPrefix(r.URL.Path, "/v1/schema") {
				dataRequests.Add(1)
			}
			demo.ServeHTTP(w, r)
		})
	})
	if err != nil {
		return nil, err
	}
	defer stopRS()

	c, err := startChild(ctx, bin, rsURL)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	res := &floodResult{opt: o, statuses: map[int]int{}}
	pid := c.cmd.Process.Pid
	if res.idle, err = readMemory(pid); err != nil {
		return nil, err
	}

	body := rpcBatch(o.items, "read_record_field", map[string]any{"id": benchmarks.FetchID, "field_path": "text"})
	before, beforeData := rsRequests.Load(), dataRequests.Load()
	var mu sync.Mutex
	var g errgroup.Group
	for range o.clients {
		g.Go(func() error {
			status, _, err := postMCP(ctx, http.DefaultClient, "http://"+c.addr+"/mcp", benchmarks.ClientToken, "", body)
			mu.Lock()
			defer mu.Unlock()
			res.statuses[status]++
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	res.rsRequests = rsRequests.Load() - before
	res.dataRequests = dataRequests.Load() - beforeData
	res.after, err = readMemory(pid)
	return res, err
}

// maxPerBatch is the most RS data requests one batch may cause (its cap).
const maxPerBatch = int64(transport.DefaultMaxBatchItems)

func (r *floodResult) ok() bool { return r.after.Peak < r.opt.maxRSS && r.capOK() }

func (r *floodResult) capOK() bool { return r.dataRequests <= int64(r.opt.clients)*maxPerBatch }

func (r *floodResult) write(w io.Writer) {
	fmt.Fprintf(w, "## Batch flood: %d concurrent batches of %d read_record_field calls\n\n", r.opt.clients, r.opt.items)
	fmt.Fprint(w, measureHead)
	fmt.Fprintf(w, "| child RSS idle | %s | | |\n", mb(r.idle.RSS))
	fmt.Fprintf(w, "| child peak RSS after the flood | %s | < %s | %s |\n", mb(r.after.Peak), mb(r.opt.maxRSS), verdict(r.after.Peak < r.opt.maxRSS))
	fmt.Fprintf(w, "| RS data requests (batch cap %d per batch) | %d | <= %d | %s |\n", maxPerBatch, r.dataRequests, int64(r.opt.clients)*maxPerBatch, verdict(r.capOK()))
	fmt.Fprintf(w, "| RS requests, token checks included | %d | | |\n", r.rsRequests)
	fmt.Fprintf(w, "| HTTP statuses | %v | | |\n", r.statuses)
}
