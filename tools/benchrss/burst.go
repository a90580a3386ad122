package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// Bounds of the decoded-size check (issue 27): a field of 2.6 million {} (7.8 MB).
const (
	hostilePeakTarget = 160e6           // peak RSS under the concurrent calls
	hostileCPUTarget  = 3 * time.Second // the child's CPU time for all of them
)

// Bounds of the escaped full-detail check (issue 33): concurrent full
// fetches of a record whose text is Unicode tag characters, 4 bytes each
// raw and 12 as the \u escapes full data writes them as.
const hiddenfullPeakTarget = 160e6 // peak RSS under the calls, without GOMEMLIMIT

// fillTag is one tag character (U+E0061, an invisible "a").
const fillTag = "\U000E0061"

// hostileOptions describe the decoded-size check (-hostile).
type hostileOptions struct {
	calls    int    // concurrent calls of each tool
	elements int    // empty objects in the array (or members of its object)
	members  bool   // an object of elements members instead of an array
	tools    string // comma-separated tools measured, each in a fresh child
}

// hiddenfullOptions describe the escaped full-detail check (-hiddenfull).
type hiddenfullOptions struct {
	calls    int    // concurrent full fetches of the record
	bytes    int    // bytes of the record's text (a multiple of 4: tag characters)
	ceilings string // comma-separated --full-max-bytes values (0: the default)
}

// burst is what one child did under concurrent calls.
type burst struct {
	idle, peak   memory
	cpu, elapsed time.Duration
	outcomes     map[string]int
	replyBytes   int64
}

// toolReq is one tools/call; label prefixes the code of its outcome.
type toolReq struct {
	label, tool string
	args        map[string]any
}

// schemaCall warms a child (token check, first allocations), not reading the record.
var schemaCall = toolReq{tool: "schema", args: map[string]any{}}

// measure makes the warm call in c, reads its idle memory a second later,
// then makes calls at once (bounded by the caller's flags): CPU and peak.
func (b *burst) measure(ctx context.Context, c *child, warm toolReq, calls []toolReq) error {
	pid := c.cmd.Process.Pid
	if _, _, err := toolCall(ctx, c.addr, warm.tool, warm.args); err != nil {
		return err
	}
	time.Sleep(time.Second)
	var err error
	if b.idle, err = readMemory(pid); err != nil {
		return err
	}
	cpuBefore, err := readCPU(pid)
	if err != nil {
		return err
	}
	b.outcomes = map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	start := time.Now()
	for _, call := range calls {
		wg.Go(func() {
			n, code, err := toolCall(ctx, c.addr, call.tool, call.args)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			b.outcomes[call.label+code]++
			b.replyBytes = max(b.replyBytes, n)
		})
	}
	wg.Wait()
	b.elapsed = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	cpuAfter, err := readCPU(pid)
	if err != nil {
		return err
	}
	b.cpu = cpuAfter - cpuBefore
	b.peak, err = readMemory(pid)
	return err
}

// burstRun is one child (one table row) of a burst check.
type burstRun struct {
	name string
	burst
	err error
}

// run measures calls calls of tool at once in a child started with args.
func (r *burstRun) run(ctx context.Context, bin, rsURL string, args []string, tool string, targs map[string]any, calls int) error {
	c, err := startChild(ctx, bin, rsURL, args...)
	if err != nil {
		return err
	}
	defer c.stop()
	return r.measure(ctx, c, schemaCall, slices.Repeat([]toolReq{{tool: tool, args: targs}}, max(calls, 0)))
}

// burstCheck is the runs of one burst check, its table and its bound.
type burstCheck struct {
	title, head string // the table's heading and column names
	runs        []*burstRun
	runOK       func(*burstRun) bool
}

func (c *burstCheck) ok() bool {
	return !slices.ContainsFunc(c.runs, func(r *burstRun) bool { return !c.runOK(r) })
}

func (c *burstCheck) write(w io.Writer) {
	fmt.Fprint(w, c.title, c.head, "|---|---|---|---|---|---|---|---|\n")
	for _, r := range c.runs {
		if r.err != nil {
			fmt.Fprintf(w, "| %s | error: %v | | | | | | **missed** |\n", r.name, r.err)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d bytes | %s |\n", r.name, mb(r.idle.RSS), mb(r.peak.Peak),
			r.cpu.Round(10*time.Millisecond), r.elapsed.Round(time.Millisecond), outcomeList(r.outcomes), r.replyBytes, verdict(c.runOK(r)))
	}
}

// outcomeList is outcomes as "code: count", sorted, comma-separated.
func outcomeList(outcomes map[string]int) string {
	var outs []string
	for k, n := range outcomes {
		outs = append(outs, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(outs)
	return strings.Join(outs, ", ")
}

// hostile measures, one child per tool, the peak RSS and CPU time of
// o.calls calls at once of the tool reading a HostileRS record.
func hostile(ctx context.Context, bin string, o hostileOptions) (*burstCheck, error) {
	rs := benchmarks.HostileRS{Elements: o.elements, Members: o.members}
	shape := fmt.Sprintf("an array of %d empty objects", o.elements)
	if o.members {
		shape = fmt.Sprintf("an object of %d members", o.elements)
	}
	chk := &burstCheck{
		title: fmt.Sprintf("## Decoded size: a record whose field is %s (%d bytes), %d calls at once\n\n", shape, len(rs.Blob()), o.calls),
		head:  "| tool | idle RSS | peak RSS (<= 160 MB) | child CPU for all calls (<= 3 s) | wall | outcomes | largest reply | verdict |\n",
		runOK: func(r *burstRun) bool {
			return r.err == nil && r.peak.Peak <= hostilePeakTarget && r.cpu <= hostileCPUTarget &&
				len(r.outcomes) == 1 && r.outcomes["ok"] > 0
		},
	}
	rsURL, stop, err := serveHandler(rs.Handler())
	if err != nil {
		return nil, err
	}
	defer stop()
	toolArgs := map[string]map[string]any{"query_records": {"stream": "pages"}, "fetch": {"id": "cin_pages/pages:" + benchmarks.HostileRecordID}}
	for _, tool := range strings.Split(o.tools, ",") {
		run := &burstRun{name: strings.TrimSpace(tool)}
		chk.runs = append(chk.runs, run)
		if args, ok := toolArgs[run.name]; ok {
			run.err = run.run(ctx, bin, rsURL, nil, run.name, args, o.calls) // bounded by -hostile-calls
		} else {
			run.err = fmt.Errorf("unknown tool %q (query_records, fetch)", run.name)
		}
	}
	return chk, nil
}

// hiddenfull measures, one child per ceiling without GOMEMLIMIT, the peak RSS
// and CPU time of o.calls full fetches at once of a record of tag characters.
func hiddenfull(ctx context.Context, bin string, o hiddenfullOptions) (*burstCheck, error) {
	if o.bytes <= 0 || o.bytes%len(fillTag) != 0 {
		return nil, fmt.Errorf("-hiddenfull-bytes must be a positive multiple of %d", len(fillTag))
	}
	ceilings, err := parseCeilings(o.ceilings)
	if err != nil {
		return nil, err
	}
	// The check is of what the server bounds itself, not of the collector
	// working harder near a soft limit.
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		return nil, err
	}
	rsURL, stop, err := serveHandler(benchmarks.LargeRS{Records: 1, Chars: o.bytes, Fill: fillTag}.Handler())
	if err != nil {
		return nil, err
	}
	defer stop()
	chk := &burstCheck{
		title: fmt.Sprintf("## Escaped full detail: %d full fetches at once of a record of %d tag characters (%d bytes raw, %d escaped), no GOMEMLIMIT\n\n",
			o.calls, o.bytes/len(fillTag), o.bytes, 3*o.bytes),
		head: "| --full-max-bytes | idle RSS | peak RSS (<= 160 MB) | child CPU for all calls | wall | outcomes | largest reply | verdict |\n",
		runOK: func(r *burstRun) bool {
			return r.err == nil && r.peak.Peak <= hiddenfullPeakTarget && r.outcomes["jsonrpc_error"] == 0
		},
	}
	fetch := map[string]any{"id": "cin_pages/pages:" + benchmarks.LargeRecordID, "detail": "full"}
	for _, ceiling := range ceilings {
		run := &burstRun{name: ceilingText(ceiling)}
		chk.runs = append(chk.runs, run)
		run.err = run.run(ctx, bin, rsURL, ceilingArgs(ceiling), "fetch", fetch, o.calls) // bounded by -hiddenfull-calls
	}
	return chk, nil
}

// parseCeilings reads comma-separated --full-max-bytes values.
func parseCeilings(s string) ([]int64, error) {
	var out []int64
	for _, c := range strings.Split(s, ",") {
		ceiling, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad ceiling %q", c)
		}
		out = append(out, ceiling)
	}
	return out, nil
}

// ceilingArgs are the server's flags for a ceiling (0: its default).
func ceilingArgs(ceiling int64) []string {
	if ceiling > 0 {
		return []string{"--full-max-bytes", strconv.FormatInt(ceiling, 10)}
	}
	return nil
}

func ceilingText(ceiling int64) string {
	if ceiling > 0 {
		return strconv.FormatInt(ceiling, 10)
	}
	return "default"
}
