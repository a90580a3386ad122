package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// Bounds of the escaped full-detail check (issue 33): concurrent full
// fetches of a record whose text is Unicode tag characters, 4 bytes each
// raw and 12 as the \u escapes full data writes them as.
const hiddenfullPeakTarget = 160e6 // peak RSS under the calls, without GOMEMLIMIT

// fillTag is one tag character (U+E0061, an invisible "a").
const fillTag = "\U000E0061"

// hiddenfullOptions describe the escaped full-detail check (-hiddenfull).
type hiddenfullOptions struct {
	calls    int    // concurrent full fetches of the record
	bytes    int    // bytes of the record's text (a multiple of 4: tag characters)
	ceilings string // comma-separated --full-max-bytes values (0: the default)
}

// hiddenfullRun is one child measured: a ceiling and what its calls did.
type hiddenfullRun struct {
	ceiling int64
	burst
	err error
}

func (r *hiddenfullRun) ok() bool {
	return r.err == nil && r.peak.Peak <= hiddenfullPeakTarget && r.outcomes["jsonrpc_error"] == 0
}

// hiddenfull serves a LargeRS of one record of tag characters from this
// process and measures the server binary over HTTP without GOMEMLIMIT,
// one child per ceiling: its peak RSS and CPU time while o.calls full
// fetches of the record run at once.
func hiddenfull(ctx context.Context, bin string, o hiddenfullOptions) ([]*hiddenfullRun, error) {
	if o.bytes <= 0 || o.bytes%len(fillTag) != 0 {
		return nil, fmt.Errorf("-hiddenfull-bytes must be a positive multiple of %d", len(fillTag))
	}
	// The check is of what the server bounds itself, not of the collector
	// working harder near a soft limit.
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		return nil, err
	}
	rsURL, stop, err := serveLarge(benchmarks.LargeRS{Records: 1, Chars: o.bytes, Fill: fillTag})
	if err != nil {
		return nil, err
	}
	defer stop()
	var runs []*hiddenfullRun
	for _, c := range strings.Split(o.ceilings, ",") {
		ceiling, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad ceiling %q", c)
		}
		run := &hiddenfullRun{ceiling: ceiling}
		runs = append(runs, run)
		run.err = run.measure(ctx, bin, rsURL, o.calls)
	}
	return runs, nil
}

func (r *hiddenfullRun) measure(ctx context.Context, bin, rsURL string, calls int) error {
	var args []string
	if r.ceiling > 0 {
		args = append(args, "--full-max-bytes", strconv.FormatInt(r.ceiling, 10))
	}
	c, err := startChild(ctx, bin, rsURL, args...)
	if err != nil {
		return err
	}
	defer c.stop()
	fetch := map[string]any{"id": "cin_pages/pages:" + benchmarks.LargeRecordID, "detail": "full"}
	return r.measureBurst(ctx, c, "fetch", fetch, calls) // bounded by -hiddenfull-calls
}

func writeHiddenfull(w io.Writer, o hiddenfullOptions, runs []*hiddenfullRun) {
	fmt.Fprintf(w, "## Escaped full detail: %d full fetches at once of a record of %d tag characters (%d bytes raw, %d escaped), no GOMEMLIMIT\n\n",
		o.calls, o.bytes/len(fillTag), o.bytes, 3*o.bytes)
	fmt.Fprintln(w, "| --full-max-bytes | idle RSS | peak RSS (<= 160 MB) | child CPU for all calls | wall | outcomes | largest reply | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		ceiling := "default"
		if r.ceiling > 0 {
			ceiling = strconv.FormatInt(r.ceiling, 10)
		}
		if r.err != nil {
			fmt.Fprintf(w, "| %s | error: %v | | | | | | **missed** |\n", ceiling, r.err)
			continue
		}
		var outs []string
		for k, n := range r.outcomes {
			outs = append(outs, fmt.Sprintf("%s: %d", k, n))
		}
		sort.Strings(outs)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d bytes | %s |\n", ceiling, mb(r.idle.RSS), mb(r.peak.Peak),
			r.cpu.Round(10*time.Millisecond), r.elapsed.Round(time.Millisecond), strings.Join(outs, ", "), r.replyBytes, verdict(r.ok()))
	}
}

// runHiddenfull runs the check, prints its table and returns the exit code.
func runHiddenfull(ctx context.Context, bin string, o hiddenfullOptions) int {
	runs, err := hiddenfull(ctx, bin, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: hiddenfull: %v\n", err)
		return 1
	}
	writeHiddenfull(os.Stdout, o, runs)
	for _, r := range runs {
		if !r.ok() {
			return 1
		}
	}
	return 0
}
