package main

import (
	"bytes"
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

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// strangersOptions describe the made-up bearer check: many addresses send
// calls with a fresh made-up bearer each, which the RS takes long to
// reject, beside a token whose verdict is cached.
type strangersOptions struct {
	addrs    int           // source addresses of the flood (loopback 127.x.y.z)
	perAddr  int           // goroutines per address
	reject   time.Duration // how long the RS takes to reject an unknown token
	calls    int           // the verified token's calls, idle and under the flood
	minRatio float64       // answered share of its calls under the flood
	maxSlow  float64       // bound on its p95 under the flood over its idle p95
}

// strangersResult is what the check measured.
type strangersResult struct {
	opt              strangersOptions
	idleP50, idleP95 time.Duration
	p50, p95         time.Duration
	answered         int
	flood            map[int]int // the flood's answers by status (0: transport error)
	floodFor         time.Duration
	serverCPU        time.Duration // the server's CPU time over the flood
	load             string        // the load average when the flood ended
}

// strangersFloor is the least idle p95 the bound is a multiple of: a few
// milliseconds of loopback call would otherwise make a 2x bound measure
// the scheduler's noise.
const strangersFloor = 25 * time.Millisecond

// strangers serves the demo RS behind a rejection delay for unknown
// tokens, starts the server binary in HTTP mode with its default flags,
// times the verified token's calls idle, then under the flood.
func strangers(ctx context.Context, bin string, o strangersOptions) (*strangersResult, error) {
	rsServer, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: benchmarks.ClientToken}})
	if err != nil {
		return nil, fmt.Errorf("demo RS: %w", err)
	}
	defer rsServer.Close()
	demo := rsServer.Handler()
	rsURL, stopRS, err := serveHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+benchmarks.ClientToken {
			select {
			case <-time.After(o.reject):
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`)
			return
		}
		demo.ServeHTTP(w, r)
	}))
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
	post := searchPoster(url)
	honest := clientFromLoopback("127.0.0.250", 4)
	timed := func() (p50, p95 time.Duration, answered int) {
		var times []time.Duration
		for range o.calls {
			start := time.Now()
			if _, ok, _ := post(ctx, honest, benchmarks.ClientToken); ok {
				answered++
			}
			times = append(times, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
		slices.Sort(times)
		return times[len(times)/2], times[max(len(times)*95/100-1, 0)], answered
	}
	if _, ok, err := post(ctx, honest, benchmarks.ClientToken); !ok {
		return nil, fmt.Errorf("first verified call failed: %v", err)
	}
	res := &strangersResult{opt: o}
	res.idleP50, res.idleP95, _ = timed()

	// The flood runs in a child process of its own (this executable with
	// -strangers-flood-child), so its goroutines share the machine's cores
	// with the server and this process but not this process's scheduler:
	// the verified token's calls are timed as a client on another machine
	// would time them, behind the server's own queue.
	flood, err := startFloodChild(ctx, url, o.addrs, o.perAddr)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cpu0, _ := readCPU(c.cmd.Process.Pid)
	time.Sleep(2 * time.Second) // the flood reaches its stride
	res.p50, res.p95, res.answered = timed()
	if res.flood, err = flood.stop(); err != nil {
		return nil, err
	}
	res.floodFor = time.Since(start)
	cpu1, _ := readCPU(c.cmd.Process.Pid)
	res.serverCPU, res.load = cpu1-cpu0, loadAverage()
	return res, nil
}

// maxConnsPerAddr bounds the connections of one flood address: 100
// addresses x 64 stay within a usual file-descriptor limit (20,000) of
// both processes, while each address keeps 64 requests in flight at once.
const maxConnsPerAddr = 64

// clientFromLoopback is an HTTP client whose connections leave from ip, at
// most conns (and maxConnsPerAddr) of them.
func clientFromLoopback(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	conns = min(conns, maxConnsPerAddr)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

func (r *strangersResult) answeredOK() bool {
	return float64(r.answered) >= r.opt.minRatio*float64(r.opt.calls)
}

func (r *strangersResult) fastOK() bool {
	return float64(r.p95) <= r.opt.maxSlow*float64(max(r.idleP95, strangersFloor))
}

func (r *strangersResult) write(w io.Writer) {
	o := r.opt
	fmt.Fprintf(w, "## Made-up bearers: %d addresses x %d goroutines, the RS rejecting each after %s, beside a verified token\n\n", o.addrs, o.perAddr, o.reject)
	fmt.Fprintln(w, "| measure | value | bound | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	fmt.Fprintf(w, "| the verified token's %d searches, idle: p50, p95 | %s, %s | | |\n", o.calls, r.idleP50.Round(time.Millisecond), r.idleP95.Round(time.Millisecond))
	fmt.Fprintf(w, "| the same under the flood: answered | %d of %d | >= %.0f%% | %s |\n", r.answered, o.calls, o.minRatio*100, verdict(r.answeredOK()))
	fmt.Fprintf(w, "| the same under the flood: p50, p95 | %s, %s | p95 <= %.1f x max(idle p95, %s) | %s |\n",
		r.p50.Round(time.Millisecond), r.p95.Round(time.Millisecond), o.maxSlow, strangersFloor, verdict(r.fastOK()))
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

// runStrangers builds the server (unless -bin is given), runs the check,
// prints its table and returns the exit code.
func runStrangers(ctx context.Context, bin string, o strangersOptions) int {
	res, err := strangers(ctx, bin, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: strangers: %v\n", err)
		return 1
	}
	res.write(os.Stdout)
	if !res.answeredOK() || !res.fastOK() {
		return 1
	}
	return 0
}

// searchPoster returns a function that posts one search call to url with
// a bearer, and says its HTTP status and whether it was answered.
func searchPoster(url string) func(ctx context.Context, hc *http.Client, token string) (int, bool, error) {
	return func(ctx context.Context, hc *http.Client, token string) (int, bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(rpcCall(1, "search", map[string]any{"q": "budget", "limit": 3}))))
		if err != nil {
			return 0, false, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, err == nil && resp.StatusCode == http.StatusOK && !strings.Contains(string(b), `"isError":true`), err
	}
}

// strangersFloodChildFlag makes benchrss run the made-up bearer flood
// against the /mcp URL it names until its standard input closes, then print
// the flood's answers by status as JSON and exit.
const strangersFloodChildFlag = "strangers-flood-child"

// floodChild is a running flood child.
type floodChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
}

func startFloodChild(ctx context.Context, url string, addrs, perAddr int) (*floodChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("flood child: %w", err)
	}
	f := &floodChild{cmd: exec.CommandContext(ctx, self, "-"+strangersFloodChildFlag, url,
		"-strangers-addrs", strconv.Itoa(addrs), "-strangers-per-addr", strconv.Itoa(perAddr))}
	f.cmd.Stdout, f.cmd.Stderr = &f.out, os.Stderr
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := f.cmd.Start(); err != nil {
		return nil, fmt.Errorf("flood child: %w", err)
	}
	return f, nil
}

// stop ends the flood and returns its answers by status.
func (f *floodChild) stop() (map[int]int, error) {
	_ = f.stdin.Close()
	if err := f.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("flood child: %w", err)
	}
	counts := map[int]int{}
	if err := json.Unmarshal(f.out.Bytes(), &counts); err != nil {
		return nil, fmt.Errorf("flood child's counts %q: %w", f.out.String(), err)
	}
	return counts, nil
}

// runFloodChild is the flood child: addrs loopback addresses x perAddr
// goroutines, each sending calls with a fresh made-up bearer until stdin
// closes (each loop ends then, after the call in flight), then the answers
// by status (0: a transport error) as JSON on stdout.
func runFloodChild(url string, addrs, perAddr int) int {
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	post := searchPoster(url)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for a := range addrs {
		hc := clientFromLoopback(fmt.Sprintf("127.%d.%d.%d", 1+a/(250*250), 1+a/250%250, 1+a%250), perAddr)
		for g := range perAddr {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					status, _, _ := post(ctx, hc, fmt.Sprintf("made-up-%d-%d-%d", a, g, i))
					mu.Lock()
					counts[status]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(counts); err != nil {
		return 1
	}
	return 0
}
