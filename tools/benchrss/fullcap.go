package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// Bounds of the full-detail memory check (issue 16): a page of 100 x 78,000 chars.
const (
	fullcapPeakTarget   = 160e6 // peak RSS under 8 full + 4 compact calls on the page
	fullcapRecordTarget = 64e6  // RSS rise for one full fetch of the whole page's size
	fullcapSettleFactor = 2.0   // RSS a while after the load, as a multiple of idle
)

// fullcapOptions describe the full-detail memory check (-fullcap).
type fullcapOptions struct {
	records, chars int           // LargeRS page: records x chars characters
	fulls          int           // concurrent query_records calls at detail full
	compacts       int           // concurrent compact query_records calls beside them
	settle         time.Duration // wait after the load before the settled RSS reading
	ceilings       string        // comma-separated --full-max-bytes values (0: the default)
	fills          string        // comma-separated fills: lt (<), html
}

// fullcapRun is one fill and ceiling: the load's child, a whole-page fetch's second.
type fullcapRun struct {
	fill         string
	ceiling      int64
	load, record burst
	settled      memory
	loaded       *child // the child of the load, until its settled reading
	loadedAt     time.Time
	settledAfter time.Duration
	err          error
}

func (r *fullcapRun) ok() bool {
	return r.err == nil && r.load.peak.Peak <= fullcapPeakTarget &&
		r.record.peak.Peak-r.record.idle.RSS <= fullcapRecordTarget &&
		float64(r.settled.RSS) <= fullcapSettleFactor*float64(r.load.idle.RSS)
}

// fullcap measures per fill and ceiling a child's peak RSS under fulls full
// and compacts compact query_records calls at once, its RSS settle later,
// and in a second child the RSS rise of one full fetch of the page's size.
func fullcap(ctx context.Context, bin string, o fullcapOptions) (*fullcapRuns, error) {
	runs := &fullcapRuns{o: o}
	ceilings, err := parseCeilings(o.ceilings)
	if err != nil {
		return nil, err
	}
	fills := map[string]string{"lt": benchmarks.FillLessThan, "html": benchmarks.FillHTML}
	for _, name := range strings.Split(o.fills, ",") {
		fill, ok := fills[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("unknown fill %q (lt, html)", name)
		}
		rsURL, stop, err := serveHandler(benchmarks.LargeRS{Records: o.records, Chars: o.chars, Fill: fill}.Handler())
		if err != nil {
			return nil, err
		}
		defer stop()
		for _, ceiling := range ceilings {
			run := &fullcapRun{fill: strings.TrimSpace(name), ceiling: ceiling}
			runs.runs = append(runs.runs, run)
			run.err = run.measure(ctx, bin, rsURL, o)
		}
	}
	// Every child's settled reading comes o.settle after its own load, so
	// the waits overlap.
	for _, r := range runs.runs {
		if r.err == nil {
			r.err = r.settle(ctx, o.settle)
		}
	}
	return runs, nil
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

// serveDemoRS serves the demo RS (client token, narrowToken) through any wrap.
func serveDemoRS(wrap func(http.Handler) http.Handler) (string, func(), error) {
	rs, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: benchmarks.ClientToken, demors.GrantNarrow: narrowToken}})
	if err != nil {
		return "", nil, fmt.Errorf("demo RS: %w", err)
	}
	h := rs.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	url, stop, err := serveHandler(h)
	if err != nil {
		rs.Close()
		return "", nil, err
	}
	return url, func() { stop(); rs.Close() }, nil
}

// child is a running server binary in HTTP mode.
type child struct {
	cmd    *exec.Cmd
	exited chan error
	addr   string
}

// startChild runs bin http against rsURL with args until it listens.
func startChild(ctx context.Context, bin, rsURL string, args ...string) (*child, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"http", "--provider-url", rsURL, "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, exited: make(chan error, 1)}
	go func() { c.exited <- cmd.Wait() }()
	addr, err := waitListen(watchListen(stderr), c.exited, 30*time.Second)
	if err != nil {
		stopChild(cmd, c.exited)
		return nil, err
	}
	c.addr = addr
	return c, nil
}

func (c *child) stop() { stopChild(c.cmd, c.exited) }

func (r *fullcapRun) measure(ctx context.Context, bin, rsURL string, o fullcapOptions) error {
	// A first small call warms the process (token check, first
	// allocations) so idle is what a serving process holds.
	warm := toolReq{tool: "query_records", args: map[string]any{"stream": "pages", "limit": 1, "fields": []string{"title"}}}
	full := toolReq{"full ", "query_records", map[string]any{"stream": "pages", "limit": o.records, "detail": "full"}}
	compact := toolReq{"compact ", "query_records", map[string]any{"stream": "pages", "limit": o.records}}
	c, err := startChild(ctx, bin, rsURL, ceilingArgs(r.ceiling)...)
	if err != nil {
		return err
	}
	if err := r.load.measure(ctx, c, warm, append(slices.Repeat([]toolReq{full}, max(o.fulls, 0)), slices.Repeat([]toolReq{compact}, max(o.compacts, 0))...)); err != nil {
		c.stop()
		return err
	}
	r.loaded, r.loadedAt = c, time.Now()

	// One full fetch of a record the size of the whole page, in a fresh
	// child so its rise is its own.
	rc, err := startChild(ctx, bin, rsURL, ceilingArgs(r.ceiling)...)
	if err != nil {
		return err
	}
	defer rc.stop()
	return r.record.measure(ctx, rc, warm, []toolReq{{tool: "fetch", args: map[string]any{"id": "cin_pages/pages:" + benchmarks.LargeRecordID, "detail": "full"}}})
}

// settle reads the loaded child's RSS d after its load ended, then stops it.
func (r *fullcapRun) settle(ctx context.Context, d time.Duration) error {
	defer r.loaded.stop()
	if !sleepCtx(ctx, time.Until(r.loadedAt.Add(d))) {
		return ctx.Err()
	}
	var err error
	r.settledAfter = time.Since(r.loadedAt)
	r.settled, err = readMemory(r.loaded.cmd.Process.Pid)
	return err
}

// toolCall makes one tools/call over HTTP, reads the whole reply and
// returns its size and outcome: "ok", or the error code of a tool error.
func toolCall(ctx context.Context, addr, tool string, args map[string]any) (int64, string, error) {
	status, raw, err := postMCP(ctx, http.DefaultClient, "http://"+addr+"/mcp", benchmarks.ClientToken, "", rpcCall(1, tool, args))
	if err != nil {
		return 0, "", err
	}
	var r rpcAnswer
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, "", fmt.Errorf("%s: HTTP %d, reply is not JSON: %v", tool, status, err)
	}
	if r.Error != nil {
		return int64(len(raw)), "jsonrpc_error", nil
	}
	return int64(len(raw)), r.outcome(), nil
}

type fullcapRuns struct {
	o    fullcapOptions
	runs []*fullcapRun
}

func (f *fullcapRuns) ok() bool {
	return !slices.ContainsFunc(f.runs, func(r *fullcapRun) bool { return !r.ok() })
}

func (f *fullcapRuns) write(w io.Writer) {
	o := f.o
	fmt.Fprintf(w, "## Full detail and memory: a page of %d records x %d characters, %d full + %d compact query_records calls at once\n\n",
		o.records, o.chars, o.fulls, o.compacts)
	fmt.Fprintln(w, "| fill | --full-max-bytes | idle RSS | peak RSS under the calls (<= 160 MB) | outcomes | largest reply | RSS after settling (<= 2x idle) | full fetch of the whole-page record: outcome, RSS rise (<= 64 MB) | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range f.runs {
		if r.err != nil {
			fmt.Fprintf(w, "| %s | %s | error: %v | | | | | | **missed** |\n", r.fill, ceilingText(r.ceiling), r.err)
			continue
		}
		l, rec := r.load, r.record
		fmt.Fprintf(w, "| %s | %s | %s | %s (%s) | %s | %s | %s after %s | %s, %s (%s) | %s |\n",
			r.fill, ceilingText(r.ceiling), mb(l.idle.RSS), mb(l.peak.Peak), l.elapsed.Round(time.Millisecond), outcomeList(l.outcomes),
			mb(l.replyBytes), mb(r.settled.RSS), r.settledAfter.Round(time.Second),
			strings.Join(slices.Collect(maps.Keys(rec.outcomes)), ""), mb(rec.peak.Peak-rec.idle.RSS), rec.elapsed.Round(time.Millisecond), verdict(r.ok()))
	}
}
