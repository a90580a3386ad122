package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// Bounds of the decoded-size check (issue 27): a record whose field is a
// 7.8 MB array of 2.6 million empty objects.
const (
	hostilePeakTarget = 160e6           // peak RSS under the concurrent calls
	hostileCPUTarget  = 3 * time.Second // the child's CPU time for all of them
)

// hostileOptions describe the decoded-size check (-hostile).
type hostileOptions struct {
	calls    int    // concurrent calls of each tool
	elements int    // empty objects in the array (or members of the object)
	members  bool   // an object of elements members instead of an array
	tools    string // comma-separated tools measured, each in a fresh child
}

// hostileRun is one child measured: a tool and what its calls did.
type hostileRun struct {
	tool string
	burst
	err error
}

func (r *hostileRun) ok() bool {
	return r.err == nil && r.peak.Peak <= hostilePeakTarget && r.cpu <= hostileCPUTarget &&
		len(r.outcomes) == 1 && r.outcomes["ok"] > 0
}

// hostile serves a HostileRS from this process and measures the server
// binary over HTTP, one child per tool: its peak RSS and CPU time while
// o.calls calls of the tool read the record at once.
func hostile(ctx context.Context, bin string, o hostileOptions) ([]*hostileRun, int, error) {
	rs := benchmarks.HostileRS{Elements: o.elements, Members: o.members}
	blobBytes := len(rs.Blob())
	rsURL, stop, err := serveHandler(rs.Handler())
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	var runs []*hostileRun
	for _, tool := range strings.Split(o.tools, ",") {
		run := &hostileRun{tool: strings.TrimSpace(tool)}
		runs = append(runs, run)
		run.err = run.measure(ctx, bin, rsURL, o.calls)
	}
	return runs, blobBytes, nil
}

// serveHandler serves h on a loopback port.
func serveHandler(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// hostileArgs are the arguments of one call of tool on the record.
func hostileArgs(tool string) (map[string]any, error) {
	switch tool {
	case "query_records":
		return map[string]any{"stream": "pages"}, nil
	case "fetch":
		return map[string]any{"id": "cin_pages/pages:" + benchmarks.HostileRecordID}, nil
	}
	return nil, fmt.Errorf("unknown tool %q (query_records, fetch)", tool)
}

func (r *hostileRun) measure(ctx context.Context, bin, rsURL string, calls int) error {
	args, err := hostileArgs(r.tool)
	if err != nil {
		return err
	}
	c, err := startChild(ctx, bin, rsURL)
	if err != nil {
		return err
	}
	defer c.stop()
	return r.measureBurst(ctx, c, r.tool, args, calls) // bounded by -hostile-calls
}

func writeHostile(w io.Writer, o hostileOptions, blobBytes int, runs []*hostileRun) {
	shape := fmt.Sprintf("an array of %d empty objects", o.elements)
	if o.members {
		shape = fmt.Sprintf("an object of %d members", o.elements)
	}
	fmt.Fprintf(w, "## Decoded size: a record whose field is %s (%d bytes), %d calls at once\n\n", shape, blobBytes, o.calls)
	fmt.Fprintln(w, "| tool | idle RSS | peak RSS (<= 160 MB) | child CPU for all calls (<= 3 s) | wall | outcomes | largest reply | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		if r.err != nil {
			fmt.Fprintf(w, "| %s | error: %v | | | | | | **missed** |\n", r.tool, r.err)
			continue
		}
		var outs []string
		for k, n := range r.outcomes {
			outs = append(outs, fmt.Sprintf("%s: %d", k, n))
		}
		sort.Strings(outs)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d bytes | %s |\n", r.tool, mb(r.idle.RSS), mb(r.peak.Peak),
			r.cpu.Round(10*time.Millisecond), r.elapsed.Round(time.Millisecond), strings.Join(outs, ", "), r.replyBytes, verdict(r.ok()))
	}
}

// runHostile runs the check, prints its table and returns the exit code.
func runHostile(ctx context.Context, bin string, o hostileOptions) int {
	runs, blobBytes, err := hostile(ctx, bin, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: hostile: %v\n", err)
		return 1
	}
	writeHostile(os.Stdout, o, blobBytes, runs)
	for _, r := range runs {
		if !r.ok() {
			return 1
		}
	}
	return 0
}
