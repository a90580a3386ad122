package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// Bounds of the full-detail memory check (issue 16): a page of 100
// records of 78,000 characters.
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

// fullcapRun is one child measured: a fill, a ceiling, and what it did.
type fullcapRun struct {
	fill                       string
	ceiling                    int64
	idle, loaded, settled      memory
	recordIdle, recordPeak     memory
	outcomes                   map[string]int // "full ok", "compact ok", "full full_too_large", ...
	replyBytes                 int64          // largest reply received
	loadedAt                   time.Time
	err                        error
	recordOutcome              string
	loadElapsed, recordElapsed time.Duration
	settledAfter               time.Duration
}

func (r *fullcapRun) ok() bool {
	return r.err == nil && r.loaded.Peak <= fullcapPeakTarget &&
		r.recordPeak.Peak-r.recordIdle.RSS <= fullcapRecordTarget &&
		float64(r.settled.RSS) <= fullcapSettleFactor*float64(r.idle.RSS)
}

// fullcap serves LargeRS pages from this process and measures the server
// binary over HTTP, one child per fill and ceiling: its peak RSS under
// fulls concurrent full query_records calls on the page plus compacts
// compact ones, its RSS settle later, and, in a second child, the rise of
// RSS for one full fetch of a record the size of the whole page.
func fullcap(ctx context.Context, bin string, o fullcapOptions) ([]*fullcapRun, error) {
	var runs []*fullcapRun
	fills := map[string]string{"lt": benchmarks.FillLessThan, "html": benchmarks.FillHTML}
	for _, name := range strings.Split(o.fills, ",") {
		fill, ok := fills[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("unknown fill %q (lt, html)", name)
		}
		rsURL, stop, err := serveLarge(benchmarks.LargeRS{Records: o.records, Chars: o.chars, Fill: fill})
		if err != nil {
			return nil, err
		}
		defer stop()
		for _, c := range strings.Split(o.ceilings, ",") {
			ceiling, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad ceiling %q", c)
			}
			run := &fullcapRun{fill: strings.TrimSpace(name), ceiling: ceiling, outcomes: map[string]int{}}
			runs = append(runs, run)
			run.err = run.measure(ctx, bin, rsURL, o)
		}
	}
	// Every child's settled reading comes o.settle after its own load, so
	// the waits overlap.
	for _, r := range runs {
		if r.err == nil {
			r.err = r.settle(ctx, o.settle)
		}
	}
	return runs, nil
}

// serveLarge serves l on a loopback port.
func serveLarge(l benchmarks.LargeRS) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: l.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// child is a running server binary in HTTP mode.
type child struct {
	cmd    *exec.Cmd
	exited chan error
	addr   string
}

// startChild runs bin http against rsURL with args, and waits until it
// listens.
func startChild(ctx context.Context, bin, rsURL string, args ...string) (*child, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"http", "--provider-url", rsURL, "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = os.Environ()
	watch := newListenWatcher()
	cmd.Stderr = watch
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, exited: make(chan error, 1)}
	go func() { c.exited <- cmd.Wait() }()
	addr, err := waitListen(watch, c.exited, 30*time.Second)
	if err != nil {
		stopChild(cmd, c.exited)
		return nil, err
	}
	c.addr = addr
	return c, nil
}

func (c *child) stop() { stopChild(c.cmd, c.exited) }

// settleReadings keeps the children whose settled RSS is still to be read.
var settleReadings sync.Map // *fullcapRun -> *child

func (r *fullcapRun) measure(ctx context.Context, bin, rsURL string, o fullcapOptions) error {
	args := []string{}
	if r.ceiling > 0 {
		args = append(args, "--full-max-bytes", strconv.FormatInt(r.ceiling, 10))
	}
	c, err := startChild(ctx, bin, rsURL, args...)
	if err != nil {
		return err
	}
	pid := c.cmd.Process.Pid
	// A first small call warms the process (token check, first
	// allocations) so idle is what a serving process holds.
	if _, _, err := toolCall(ctx, c.addr, "query_records", map[string]any{"stream": "pages", "limit": 1, "fields": []string{"title"}}); err != nil {
		c.stop()
		return err
	}
	time.Sleep(time.Second)
	if r.idle, err = readMemory(pid); err != nil {
		c.stop()
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	start := time.Now()
	fire := func(kind string, args map[string]any) {
		defer wg.Done()
		n, code, err := toolCall(ctx, c.addr, "query_records", args)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		r.outcomes[kind+" "+code]++
		r.replyBytes = max(r.replyBytes, n)
	}
	for range o.fulls {
		wg.Add(1)
		go fire("full", map[string]any{"stream": "pages", "limit": o.records, "detail": "full"})
	}
	for range o.compacts {
		wg.Add(1)
		go fire("compact", map[string]any{"stream": "pages", "limit": o.records})
	}
	wg.Wait()
	r.loadElapsed = time.Since(start)
	if len(errs) > 0 {
		c.stop()
		return errors.Join(errs...)
	}
	if r.loaded, err = readMemory(pid); err != nil {
		c.stop()
		return err
	}
	r.loadedAt = time.Now()
	settleReadings.Store(r, c)

	// One full fetch of a record the size of the whole page, in a fresh
	// child so its rise is its own.
	rc, err := startChild(ctx, bin, rsURL, args...)
	if err != nil {
		return err
	}
	defer rc.stop()
	if _, _, err := toolCall(ctx, rc.addr, "query_records", map[string]any{"stream": "pages", "limit": 1, "fields": []string{"title"}}); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if r.recordIdle, err = readMemory(rc.cmd.Process.Pid); err != nil {
		return err
	}
	start = time.Now()
	_, code, err := toolCall(ctx, rc.addr, "fetch", map[string]any{"id": "cin_pages/pages:" + benchmarks.LargeRecordID, "detail": "full"})
	if err != nil {
		return err
	}
	r.recordElapsed, r.recordOutcome = time.Since(start), code
	r.recordPeak, err = readMemory(rc.cmd.Process.Pid)
	return err
}

// settle reads the loaded child's RSS d after its load ended, then stops it.
func (r *fullcapRun) settle(ctx context.Context, d time.Duration) error {
	v, ok := settleReadings.LoadAndDelete(r)
	if !ok {
		return nil
	}
	c := v.(*child)
	defer c.stop()
	select {
	case <-time.After(time.Until(r.loadedAt.Add(d))):
	case <-ctx.Done():
		return ctx.Err()
	}
	var err error
	r.settledAfter = time.Since(r.loadedAt)
	r.settled, err = readMemory(c.cmd.Process.Pid)
	return err
}

// toolCall makes one tools/call over HTTP, reads the whole reply and
// returns its size and outcome: "ok", or the error code of a tool error.
func toolCall(ctx context.Context, addr, tool string, args map[string]any) (int64, string, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+benchmarks.ClientToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var r struct {
		Error  *struct{ Message string } `json:"error"`
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error struct{ Code string } `json:"error"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, "", fmt.Errorf("%s: HTTP %d, reply is not JSON: %v", tool, resp.StatusCode, err)
	}
	if r.Error != nil {
		return int64(len(raw)), "jsonrpc_error", nil
	}
	if r.Result.IsError {
		return int64(len(raw)), r.Result.StructuredContent.Error.Code, nil
	}
	return int64(len(raw)), "ok", nil
}

func writeFullcap(w io.Writer, o fullcapOptions, runs []*fullcapRun) {
	fmt.Fprintf(w, "## Full detail and memory: a page of %d records x %d characters, %d full + %d compact query_records calls at once\n\n",
		o.records, o.chars, o.fulls, o.compacts)
	fmt.Fprintln(w, "| fill | --full-max-bytes | idle RSS | peak RSS under the calls (<= 160 MB) | outcomes | largest reply | RSS after settling (<= 2x idle) | full fetch of the whole-page record: outcome, RSS rise (<= 64 MB) | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		ceiling := "default"
		if r.ceiling > 0 {
			ceiling = strconv.FormatInt(r.ceiling, 10)
		}
		if r.err != nil {
			fmt.Fprintf(w, "| %s | %s | error: %v | | | | | | **missed** |\n", r.fill, ceiling, r.err)
			continue
		}
		var outs []string
		for k, n := range r.outcomes {
			outs = append(outs, fmt.Sprintf("%s: %d", k, n))
		}
		sort.Strings(outs)
		fmt.Fprintf(w, "| %s | %s | %s | %s (%s) | %s | %s | %s after %s | %s, %s (%s) | %s |\n",
			r.fill, ceiling, mb(r.idle.RSS), mb(r.loaded.Peak), r.loadElapsed.Round(time.Millisecond), strings.Join(outs, ", "),
			mb(r.replyBytes), mb(r.settled.RSS), r.settledAfter.Round(time.Second),
			r.recordOutcome, mb(r.recordPeak.Peak-r.recordIdle.RSS), r.recordElapsed.Round(time.Millisecond), verdict(r.ok()))
	}
}

// runFullcap builds the server (unless -bin is given), runs the check,
// prints its table and returns the exit code.
func runFullcap(ctx context.Context, bin string, o fullcapOptions) int {
	runs, err := fullcap(ctx, bin, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: fullcap: %v\n", err)
		return 1
	}
	writeFullcap(os.Stdout, o, runs)
	for _, r := range runs {
		if !r.ok() {
			return 1
		}
	}
	return 0
}
