package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// Targets from the performance issues.
const (
	stdioRatioTarget = 1.10    // adapter call vs direct RS call, per tool
	httpRatioTarget  = 1.15    // adapter p50 vs direct p50 over HTTP
	stdioRSSTarget   = 30e6    // bytes after the stdio calls
	httpRSSTarget    = 60e6    // bytes under the concurrent HTTP load
	growthAbsolute   = 1 << 20 // RSS growth from half to all calls that still counts as flat...
	growthRelative   = 0.05    // ...or this share of the half-way RSS, whichever is larger
)

type report struct {
	opt                   options
	loadBefore, loadAfter string // /proc/loadavg at start and end
	work                  []benchmarks.Call
	stdio                 stdioResult
	http                  httpResult
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func ratio(a, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(a) / float64(d)
}

// flat reports whether RSS stayed flat from the half-way reading to the last.
func flat(mem []memory) (growth int64, ok bool) {
	if len(mem) < 4 {
		return 0, false
	}
	half, last := mem[1].RSS, mem[len(mem)-1].RSS
	growth = last - half
	limit := max(int64(growthAbsolute), int64(float64(half)*growthRelative))
	return growth, growth <= limit
}

// write prints the results as markdown.
func (r *report) write(w io.Writer) {
	s, h := r.stdio, r.http
	fmt.Fprintf(w, "## pdpp-mcp-server process measurements (benchrss)\n\n")
	fmt.Fprintf(w, "MB = 10^6 bytes of VmRSS. Demo RS, direct client and MCP clients run in the benchrss process; the server is a child process. Load average at start: %s; at end: %s (%d CPUs).\n\n",
		r.loadBefore, r.loadAfter, runtime.NumCPU())
	fmt.Fprintf(w, "| measure | value | target | verdict |\n|---|---|---|---|\n")
	fmt.Fprintf(w, "| stdio cold start (spawn to initialize reply) | %s | | |\n", ms(s.coldStart))
	fmt.Fprintf(w, "| stdio RSS after initialize | %s | | |\n", mb(s.idle.RSS))
	var marks []string
	for i, m := range s.mem {
		marks = append(marks, fmt.Sprintf("%d: %s", s.checkpoint[i], mb(m.RSS)))
	}
	last := s.mem[len(s.mem)-1]
	fmt.Fprintf(w, "| stdio RSS by calls made | %s | ≤ 30 MB | %s |\n", strings.Join(marks, ", "), verdict(float64(last.RSS) <= stdioRSSTarget))
	growth, ok := flat(s.mem)
	fmt.Fprintf(w, "| stdio RSS growth, %d to %d calls | %+.2f MB | not growing (≤ max(1 MiB, 5%%)) | %s |\n",
		s.checkpoint[1], s.checkpoint[3], float64(growth)/1e6, verdict(ok))
	fmt.Fprintf(w, "| stdio peak RSS (VmHWM) | %s | | |\n", mb(last.Peak))
	fmt.Fprintf(w, "| http cold start (spawn to listening / to initialize reply) | %s / %s | | |\n", ms(h.listen), ms(h.coldStart))
	fmt.Fprintf(w, "| http RSS after initialize | %s | | |\n", mb(h.idle.RSS))
	fmt.Fprintf(w, "| http RSS under %d clients (max sampled / after / VmHWM) | %s / %s / %s | ≤ 60 MB | %s |\n",
		r.opt.clients, mb(h.loadPeak), mb(h.afterLoad.RSS), mb(h.afterLoad.Peak), verdict(float64(max(h.loadPeak, h.afterLoad.Peak)) <= httpRSSTarget))

	fmt.Fprintf(w, "\n### One client, adapter vs direct RS request (interleaved, p50)\n\n")
	rawHead, rawRule := "", ""
	if r.opt.stdioRaw {
		rawHead, rawRule = " stdio raw | raw/direct |", "---|---|"
	}
	fmt.Fprintf(w, "| call | stdio adapter | direct | ratio (≤ %.2f) |%s server CPU/call | http adapter | direct | ratio (≤ %.2f) |\n|---|---|---|---|%s---|---|---|---|\n",
		stdioRatioTarget, rawHead, httpRatioTarget, rawRule)
	for _, c := range r.work {
		sa, sd := benchmarks.Percentile(s.lat.adapter[c.Name], 50), benchmarks.Percentile(s.lat.direct[c.Name], 50)
		ha, hd := benchmarks.Percentile(h.lat.adapter[c.Name], 50), benchmarks.Percentile(h.lat.direct[c.Name], 50)
		perCall := s.childCPU[c.Name] / time.Duration(max(1, len(s.lat.adapter[c.Name])))
		rawCols := ""
		if r.opt.stdioRaw {
			sr := benchmarks.Percentile(s.lat.raw[c.Name], 50)
			rawCols = fmt.Sprintf(" %s | %.2f |", ms(sr), ratio(sr, sd))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f %s |%s %s | %s | %s | %.2f %s |\n", c.Name,
			ms(sa), ms(sd), ratio(sa, sd), verdict(ratio(sa, sd) <= stdioRatioTarget), rawCols, ms(perCall),
			ms(ha), ms(hd), ratio(ha, hd), verdict(ratio(ha, hd) <= httpRatioTarget))
	}
	fmt.Fprintf(w, "\n(stdio: %d calls per path; http: %d calls per path. Stdio adapter is mcp-go's stdio client (protocol %s), which decodes every reply several times; its ratio is the one the target is judged on. Server CPU/call is that stdio child's user+system time per call, from /proc in 10 ms ticks summed over all calls of the tool.)\n",
		r.opt.calls, r.opt.pairs, s.protocol)
	if r.opt.stdioRaw {
		fmt.Fprintf(w, "\n(Stdio raw is the adapter's own stdio cost with a client that decodes each reply once, lightly: a second child of the same binary, same arguments and environment, driven by a bare newline-delimited JSON-RPC client (protocol %s) that decodes only id, error and result.isError. Its calls are interleaved with the adapter and direct calls, rotating which goes first; raw/direct uses the same direct calls. It is shown next to the mcp-go client's figure, not instead of it.)\n", rawProtocol)
	}

	if r.opt.floor {
		r.writeFloor(w)
	}

	l := h.load
	fmt.Fprintf(w, "\n### %d concurrent HTTP clients × %d calls per path (mixed workload, %d alternating rounds)\n\n", r.opt.clients, r.opt.perClient, r.opt.rounds)
	fmt.Fprintf(w, "| path | calls | calls/s | p50 | p99 |\n|---|---|---|---|---|\n")
	row := func(name string, lat []time.Duration, el time.Duration) {
		fmt.Fprintf(w, "| %s | %d | %.0f | %s | %s |\n", name, len(lat), float64(len(lat))/el.Seconds(),
			ms(benchmarks.Percentile(lat, 50)), ms(benchmarks.Percentile(lat, 99)))
	}
	row("adapter (/mcp)", l.adapter, l.adapterElapsed)
	row("direct RS", l.direct, l.directElapsed)
	p50 := ratio(benchmarks.Percentile(l.adapter, 50), benchmarks.Percentile(l.direct, 50))
	fmt.Fprintf(w, "\nUnder load: adapter p50 / direct p50 = %.2f (target ≤ %.2f: %s); throughput ratio %.2f; server CPU %s per call.\n",
		p50, httpRatioTarget, verdict(p50 <= httpRatioTarget),
		(float64(len(l.adapter))/l.adapterElapsed.Seconds())/(float64(len(l.direct))/l.directElapsed.Seconds()),
		ms(h.loadCPU/time.Duration(max(1, len(l.adapter)))))
}

// writeFloor prints the stdio calls set against the floor (see doc.go).
func (r *report) writeFloor(w io.Writer) {
	s := r.stdio
	fmt.Fprintf(w, "\n### Stdio against the floor (p50)\n\n")
	rawHead, rawRule := "", ""
	if r.opt.stdioRaw {
		rawHead, rawRule = " raw floor | raw floor/direct | raw/raw floor | bare floor | bare floor/direct | raw/bare floor |", "---|---|---|---|---|---|"
	}
	fmt.Fprintf(w, "| call | direct | floor | floor/direct | adapter/floor |%s\n|---|---|---|---|---|%s\n", rawHead, rawRule)
	for _, c := range r.work {
		d := benchmarks.Percentile(s.lat.direct[c.Name], 50)
		a := benchmarks.Percentile(s.lat.adapter[c.Name], 50)
		f := benchmarks.Percentile(s.lat.floor[c.Name], 50)
		rawCols := ""
		if r.opt.stdioRaw {
			ra := benchmarks.Percentile(s.lat.raw[c.Name], 50)
			rf := benchmarks.Percentile(s.lat.rawFloor[c.Name], 50)
			bf := benchmarks.Percentile(s.lat.bareFloor[c.Name], 50)
			rawCols = fmt.Sprintf(" %s | %.2f | %.2f | %s | %.2f | %.2f |", ms(rf), ratio(rf, d), ratio(ra, rf), ms(bf), ratio(bf, d), ratio(ra, bf))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %.2f |%s\n", c.Name, ms(d), ms(f), ratio(f, d), ratio(a, f), rawCols)
	}
	fmt.Fprintf(w, "\n(The floor is benchrss run again as a stdio MCP server with one pass-through tool per call: it makes the call's direct RS request (request, read, decode, as the direct path does) and answers with a one-line text and the RS body verbatim as structuredContent, checking and bounding nothing. Floor is driven by an mcp-go stdio client like the adapter's; raw floor by the bare client like stdio raw. Bare floor is the same work with no MCP library at all (benchrss -bare-floor-child: the request line decoded for id, method and tool name only, the reply concatenated around the RS body), driven by the bare client: the least any stdio server can cost. All calls are interleaved. A floor/direct above %.2f means no adapter can meet the stdio target through that client, whatever it does.)\n", stdioRatioTarget)
}

// checkResult is a check's table and whether it met its bounds.
type checkResult interface {
	write(io.Writer)
	ok() bool
}

// exitCode prints r; check name's exit code is 1 on err or a missed bound.
func exitCode(name string, r checkResult, err error) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: %s: %v\n", name, err)
		return 1
	}
	r.write(os.Stdout)
	if !r.ok() {
		return 1
	}
	return 0
}
