package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// strangersOptions describe the made-up bearer check (-strangers).
type strangersOptions struct {
	addrs    int           // source addresses of the flood (loopback 127.x.y.z)
	perAddr  int           // goroutines per address
	reject   time.Duration // how long the RS takes to reject an unknown token
	calls    int           // the verified token's calls, idle and under the flood
	minRatio float64       // answered share of its calls under the flood
	maxSlow  float64       // bound on its p95 under the flood over its idle p95
}

type strangersResult struct {
	opt         strangersOptions
	idle, under searchTimes // the verified token's searches, idle and under the flood
	flood       map[int]int // the flood's answers by status (0: transport error)
	floodFor    time.Duration
	serverCPU   time.Duration // the server's CPU time over the flood
	load        string        // the load average when the flood ended
}

// strangersFloor is the least idle p95 the bound is a multiple of: a few
// milliseconds of loopback call would otherwise make a 2x bound measure
// the scheduler's noise.
const strangersFloor = 25 * time.Millisecond

// strangers times a verified token's calls (its verdict cached first) to a
// server at default flags idle, then under the flood the RS rejects late.
func strangers(ctx context.Context, bin string, o strangersOptions) (*strangersResult, error) {
	rsURL, stopRS, err := checksRS(o.reject, 0)
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
	honest := clientFromLoopback("127.0.0.250", 4)
	if _, ok, err := postSearch(ctx, honest, url, benchmarks.ClientToken); !ok {
		return nil, fmt.Errorf("first verified call failed: %v", err)
	}
	res := &strangersResult{opt: o}
	res.idle = timedSearches(ctx, honest, url, benchmarks.ClientToken, o.calls, 20*time.Millisecond, nil)

	// The flood runs in a child process of its own (this executable with
	// -strangers-flood-child), so its goroutines share the machine's cores
	// with the server and this process but not this process's scheduler:
	// the verified token's calls are timed as a client on another machine
	// would time them, behind the server's own queue.
	flood, err := startSelf(ctx, "flood child", "-"+strangersFloodChildFlag, url,
		"-strangers-addrs", strconv.Itoa(o.addrs), "-strangers-per-addr", strconv.Itoa(o.perAddr))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cpu0, _ := readCPU(c.cmd.Process.Pid)
	time.Sleep(2 * time.Second) // the flood reaches its stride
	res.under = timedSearches(ctx, honest, url, benchmarks.ClientToken, o.calls, 20*time.Millisecond, nil)
	if err := flood.decode(true, "flood child's counts", &res.flood); err != nil {
		return nil, err
	}
	res.floodFor = time.Since(start)
	cpu1, _ := readCPU(c.cmd.Process.Pid)
	res.serverCPU, res.load = cpu1-cpu0, loadAverage()
	return res, nil
}

// searchTimes are searches' p50, p95, statuses (0: transport error), answered.
type searchTimes struct {
	p50, p95 time.Duration
	statuses map[int]int
	answered int
}

// timedSearches makes n (at least 1) searches with token, one after
// another, each followed by each(i) (when not nil) and a pause.
func timedSearches(ctx context.Context, hc *http.Client, url, token string, n int, pause time.Duration, each func(i int)) searchTimes {
	s := searchTimes{statuses: map[int]int{}}
	var times []time.Duration
	for i := range n {
		start := time.Now()
		status, ok, _ := postSearch(ctx, hc, url, token)
		times = append(times, time.Since(start))
		s.statuses[status]++
		if ok {
			s.answered++
		}
		if each != nil {
			each(i)
		}
		time.Sleep(pause)
	}
	slices.Sort(times)
	s.p50, s.p95 = times[len(times)/2], times[max(len(times)*95/100-1, 0)]
	return s
}

// maxConnsPerAddr bounds the connections of one flood address: 100
// addresses x 64 stay within a usual file-descriptor limit (20,000) of
// both processes, while each address keeps 64 requests in flight at once.
const maxConnsPerAddr = 64

// clientFromLoopback is an HTTP client of <= min(conns, maxConnsPerAddr) conns from ip.
func clientFromLoopback(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	conns = min(conns, maxConnsPerAddr)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

func (r *strangersResult) ok() bool { return r.answeredOK() && r.fastOK() }

func (r *strangersResult) answeredOK() bool {
	return float64(r.under.answered) >= r.opt.minRatio*float64(r.opt.calls)
}

func (r *strangersResult) fastOK() bool {
	return float64(r.under.p95) <= r.opt.maxSlow*float64(max(r.idle.p95, strangersFloor))
}

func (r *strangersResult) write(w io.Writer) {
	o := r.opt
	fmt.Fprintf(w, "## Made-up bearers: %d addresses x %d goroutines, the RS rejecting each after %s, beside a verified token\n\n", o.addrs, o.perAddr, o.reject)
	fmt.Fprint(w, measureHead)
	fmt.Fprintf(w, "| the verified token's %d searches, idle: p50, p95 | %s, %s | | |\n", o.calls, r.idle.p50.Round(time.Millisecond), r.idle.p95.Round(time.Millisecond))
	fmt.Fprintf(w, "| the same under the flood: answered | %d of %d | >= %.0f%% | %s |\n", r.under.answered, o.calls, o.minRatio*100, verdict(r.answeredOK()))
	fmt.Fprintf(w, "| the same under the flood: p50, p95 | %s, %s | p95 <= %.1f x max(idle p95, %s) | %s |\n",
		r.under.p50.Round(time.Millisecond), r.under.p95.Round(time.Millisecond), o.maxSlow, strangersFloor, verdict(r.fastOK()))
	fmt.Fprintf(w, "| the flood's answers by status over %s | %v | | |\n", r.floodFor.Round(100*time.Millisecond), r.flood)
	answers := 0
	for _, n := range r.flood {
		answers += n
	}
	if answers > 0 {
		fmt.Fprintf(w, "| the server's CPU time over the flood, and per flood request answered | %s, %s | | |\n",
			r.serverCPU.Round(10*time.Millisecond), (r.serverCPU / time.Duration(answers)).Round(time.Microsecond))
	}
	fmt.Fprintf(w, "| load average after the flood (the flood's client shares the machine) | %s | | |\n", r.load)
}

// measureHead heads the tables of a measure, its value, bound and verdict.
const measureHead = "| measure | value | bound | verdict |\n|---|---|---|---|\n"

// postSearch posts a search with a bearer: its status, and if answered.
func postSearch(ctx context.Context, hc *http.Client, url, token string) (int, bool, error) {
	status, b, err := postMCP(ctx, hc, url, token, "2025-11-25", rpcCall(1, "search", map[string]any{"q": "budget", "limit": 3}))
	return status, err == nil && status == http.StatusOK && !strings.Contains(string(b), `"isError":true`), err
}

// postMCP posts body to /mcp as an MCP client does: the status and whole reply.
func postMCP(ctx context.Context, hc *http.Client, url, token, version string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

const strangersFloodChildFlag = "strangers-flood-child"

// runFloodChild (-strangers-flood-child URL) runs madeUpFlood from addrs
// loopback addresses, then prints the answers by status as JSON.
func runFloodChild(url string, addrs, perAddr int) int {
	var from []floodSource
	for a := range addrs {
		from = append(from, floodSource{fmt.Sprintf("127.%d.%d.%d", 1+a/(250*250), 1+a/250%250, 1+a%250), fmt.Sprintf("made-up-%d", a)})
	}
	return printJSON(madeUpFlood(url, from, perAddr, 0))
}

// floodSource is a flood's address and its bearers' prefix.
type floodSource struct{ ip, prefix string }

// madeUpFlood sends searches to url with fresh made-up bearers
// (prefix-goroutine-call) from each source, perAddr goroutines over at most
// perAddr connections, until stdin closes (after the call in flight); with
// backoff, a 503 is followed by that pause. Answers by status (0: error).
func madeUpFlood(url string, from []floodSource, perAddr int, backoff time.Duration) map[int]int {
	ctx := stdinContext()
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for _, src := range from {
		hc := clientFromLoopback(src.ip, perAddr)
		for g := range perAddr {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					status, _, _ := postSearch(ctx, hc, url, fmt.Sprintf("%s-%d-%d", src.prefix, g, i))
					mu.Lock()
					counts[status]++
					mu.Unlock()
					if backoff > 0 && status == http.StatusServiceUnavailable {
						time.Sleep(backoff)
					}
				}
			})
		}
	}
	wg.Wait()
	return counts
}

// stdinContext ends when stdin closes: how a parent ends its child.
func stdinContext() context.Context {
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	return ctx
}

// printJSON writes v as JSON on stdout; it returns the exit code.
func printJSON(v any) int {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		return 1
	}
	return 0
}

// selfChild is this executable run again with internal flags, as a flood
// (until its stdin closes) or timing child that reports on stdout.
type selfChild struct {
	name  string // in errors
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startSelf(ctx context.Context, name string, args ...string) (*selfChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &selfChild{name: name, cmd: exec.CommandContext(ctx, self, args...)}
	c.cmd.Stderr = os.Stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.out = bufio.NewReader(out)
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// wait closes stdin first if stop (ending a flood); the rest of the output.
func (c *selfChild) wait(stop bool) ([]byte, error) {
	if stop {
		_ = c.stdin.Close()
	}
	b, _ := io.ReadAll(c.out)
	if err := c.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return b, nil
}

// decode is wait, decoding the output as JSON into v (what: its name).
func (c *selfChild) decode(stop bool, what string, v any) error {
	b, err := c.wait(stop)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %q: %w", what, b, err)
	}
	return nil
}
