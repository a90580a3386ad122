package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// maxSamples bounds the failure messages kept for the report.
const maxSamples = 5

// report collects the outcome of the run; record is safe for concurrent use.
type report struct {
	opt options

	mu        sync.Mutex
	latencies []time.Duration // one per successful call; bounded by the run length
	failed    int
	samples   []string

	elapsed      time.Duration
	drain        time.Duration // SIGTERM to exit of the stopped replica
	victimExit   error
	restartReady time.Duration
	cpu          time.Duration // replica CPU time, all runs
	maxRSSKiB    int64
}

func (r *report) record(d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		if len(r.samples) < maxSamples {
			r.samples = append(r.samples, strings.Join(strings.Fields(err.Error()), " "))
		}
		return
	}
	r.latencies = append(r.latencies, d)
}

func (r *report) write(w io.Writer) {
	ok := len(r.latencies)
	total := ok + r.failed
	retries := "off"
	if r.opt.retry {
		retries = "on"
	}
	fmt.Fprintf(w, "scale test: %d replicas behind HAProxy (proxy retries %s), %d clients, %s\n",
		r.opt.replicas, retries, r.opt.clients, r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  calls:            %d (%d ok, %d failed)\n", total, ok, r.failed)
	if r.elapsed > 0 {
		fmt.Fprintf(w, "  throughput:       %.0f calls/s\n", float64(total)/r.elapsed.Seconds())
	}
	if ok > 0 {
		fmt.Fprintf(w, "  latency:          p50 %s, p95 %s, p99 %s\n",
			benchmarks.Percentile(r.latencies, 50).Round(10*time.Microsecond),
			benchmarks.Percentile(r.latencies, 95).Round(10*time.Microsecond),
			benchmarks.Percentile(r.latencies, 99).Round(10*time.Microsecond))
	}
	if total > 0 {
		fmt.Fprintf(w, "  replica CPU:      %s in all, %.2f ms per call\n", r.cpu.Round(10*time.Millisecond), float64(r.cpu.Microseconds())/1000/float64(total))
	}
	fmt.Fprintf(w, "  replica peak RSS: %.1f MiB\n", float64(r.maxRSSKiB)/1024)
	if r.opt.restart {
		exit := "clean"
		if r.victimExit != nil {
			exit = r.victimExit.Error()
		}
		fmt.Fprintf(w, "  restart:          SIGTERM to exit %s (exit: %v), restarted and ready in %s\n",
			r.drain.Round(time.Millisecond), exit, r.restartReady.Round(time.Millisecond))
	}
	for _, s := range r.samples {
		fmt.Fprintf(w, "  failure: %s\n", s)
	}
}
