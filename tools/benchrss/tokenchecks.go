package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// The token-check floods of -strangers: what an honest user sees of the
// server's checks of new tokens while strangers send made-up bearers, each
// on a fresh server. First burst: burst parallel calls from one address
// with an unchecked token, the RS answering the check after checkSlow (aim:
// minBurst answered 200). Per flood size: an honest address shows a good
// token; a child sends made-up bearers from that many loopback /24s (4
// addresses each, rejected after reject); after warmup another child times
// never-seen honest tokens' first calls from that address, one after
// another (aims: minRatio answered, p95 <= maxP95), and, without an aim,
// never-seen tokens each from a network of its own that never showed a
// good token (strangers to the server, waiting their network's turn).

// tokenCheckOptions are the settings of the token-check floods.
type tokenCheckOptions struct {
	networks  string        // comma-separated flood sizes, in /24s
	perNet    int           // flood goroutines per network (over 4 addresses)
	reject    time.Duration // how long the RS takes to reject a made-up bearer
	honest    int           // never-seen honest tokens timed per flood
	burst     int           // parallel calls of the first burst
	checkSlow time.Duration // how long the RS takes to answer the burst's check
	minRatio  float64
	maxP95    time.Duration
	minBurst  int
	warmup    time.Duration // the flood runs this long before the honest calls
}

// checksOpt holds the flags below; the others are the children's flags.
var (
	checksOpt   tokenCheckOptions
	checksChild string
	checksURL   string
	checksAddr  string
	checksRun   string
	checksOnly  bool
)

func init() {
	o := &checksOpt
	flag.StringVar(&o.networks, "checks-networks", "40,100", "with -strangers: comma-separated sizes, in loopback /24 networks, of the made-up bearer floods the token-check aims are measured under")
	flag.IntVar(&o.perNet, "checks-per-net", 16, "flood goroutines per network (over 4 addresses)")
	flag.DurationVar(&o.reject, "checks-reject", time.Second, "how long the RS takes to reject a made-up bearer in the token-check floods")
	flag.IntVar(&o.honest, "checks-honest", 20, "honest never-seen tokens timed under each flood")
	flag.IntVar(&o.burst, "checks-burst", 50, "parallel calls of the first burst with a new token")
	flag.DurationVar(&o.checkSlow, "checks-slow", time.Second, "how long the RS takes to answer the first burst's token check")
	flag.Float64Var(&o.minRatio, "checks-min-answered", 0.9, "least share of honest never-seen tokens' first calls answered under each flood")
	flag.DurationVar(&o.maxP95, "checks-max-p95", 5*time.Second, "bound on their p95 under each flood")
	flag.IntVar(&o.minBurst, "checks-min-burst", 48, "least calls of the first burst answered 200")
	flag.DurationVar(&o.warmup, "checks-warmup", 10*time.Second, "how long each flood runs before the honest calls: long enough for every flooding network's first check to have had its turn (the first check of a network that waits for none takes the next turn)")
	flag.BoolVar(&checksOnly, "checks-only", false, "with -strangers: only the token-check floods, not the cached token's check")
	flag.StringVar(&checksChild, "checks-child", "", "internal: run as a token-check child (flood or honest) against -checks-url")
	flag.StringVar(&checksURL, "checks-url", "", "internal: the /mcp URL of a token-check child")
	flag.StringVar(&checksAddr, "checks-addr", "", "internal: the honest child's known address")
	flag.StringVar(&checksRun, "checks-run", "", "internal: the honest child's token prefix")
}

// Token prefixes the bench's RS knows: honest ones are the client grant (slow
// ones' schema read after checkSlow), made-up ones rejected after reject.
const (
	honestPrefix = "honest-"
	slowPrefix   = "slow-"
	madeUpPrefix = "made-up-"
)

// Loopback addresses of the token-check floods: flood network n is
// 127.100+n/200.(n%200).0/24; the honest known address and the honest
// strangers' networks (127.98.i.0/24) are apart from every flood network.
const (
	honestKnownAddr = "127.99.0.10"
	honestFreshNets = "127.98.%d.1"
)

type checkFloodResult struct {
	o            tokenCheckOptions
	networks     int
	known, fresh honestTimes
	flood        map[int]int
	floodFor     time.Duration
	serverCPU    time.Duration
	serverPeak   int64
	load         string
}

type honestTimes struct {
	Answered int             `json:"answered"`
	Statuses map[int]int     `json:"statuses"`
	Times    []time.Duration `json:"times"`
	Connects []time.Duration `json:"connects"` // of each call, until its connection was had
}

func (r *checkFloodResult) answeredOK() bool {
	return float64(r.known.Answered) >= r.o.minRatio*float64(r.o.honest)
}

func (r *checkFloodResult) ok() bool {
	return r.answeredOK() && benchmarks.Percentile(r.known.Times, 95) <= r.o.maxP95
}

type burstResult struct {
	o        tokenCheckOptions
	statuses map[int]int
	took     time.Duration
}

func (b *burstResult) ok() bool { return b.statuses[http.StatusOK] >= b.o.minBurst }

func (b *burstResult) write(w io.Writer) {
	fmt.Fprintf(w, "\n## First burst: %d parallel calls with a new token from one address, a fresh server, the RS answering the check after %s\n\n", b.o.burst, b.o.checkSlow)
	fmt.Fprint(w, measureHead)
	fmt.Fprintf(w, "| answers by status (-1: a tool error) | %v | 200 >= %d | %s |\n", b.statuses, b.o.minBurst, verdict(b.ok()))
	fmt.Fprintf(w, "| the burst's time | %s | | |\n", b.took.Round(10*time.Millisecond))
}

// checksRS serves the demo RS behind the bench's tokens (see honestPrefix).
func checksRS(reject, checkSlow time.Duration) (string, func(), error) {
	return serveDemoRS(func(demo http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			wait := time.Duration(0)
			switch {
			case strings.HasPrefix(tok, madeUpPrefix):
				wait = reject
			case strings.HasPrefix(tok, slowPrefix) && r.URL.Path == "/v1/schema":
				wait = checkSlow
			}
			if wait > 0 && !sleepCtx(r.Context(), wait) {
				return
			}
			if strings.HasPrefix(tok, madeUpPrefix) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`)
				return
			}
			if strings.HasPrefix(tok, honestPrefix) || strings.HasPrefix(tok, slowPrefix) {
				r.Header.Set("Authorization", "Bearer "+benchmarks.ClientToken)
			}
			demo.ServeHTTP(w, r)
		})
	})
}

// firstBurst sends the first burst to a fresh server.
func firstBurst(ctx context.Context, bin, rsURL string, o tokenCheckOptions) (*burstResult, error) {
	c, err := startChild(ctx, bin, rsURL)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	url := "http://" + c.addr + "/mcp"
	hc := clientFromLoopback("127.97.0.5", o.burst)
	res := &burstResult{o: o, statuses: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range o.burst {
		wg.Go(func() {
			status, ok, _ := postSearch(ctx, hc, url, slowPrefix+"burst")
			if status == http.StatusOK && !ok {
				status = -1 // a tool error
			}
			mu.Lock()
			res.statuses[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	return res, nil
}

// checkFlood runs one flood from networks /24s beside the honest child.
func checkFlood(ctx context.Context, bin, rsURL string, networks int, o tokenCheckOptions) (*checkFloodResult, error) {
	c, err := startChild(ctx, bin, rsURL)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	url := "http://" + c.addr + "/mcp"
	// The honest address shows a good token first, as a client that had
	// one and now brings a refreshed or new one.
	if _, ok, err := postSearch(ctx, clientFromLoopback(honestKnownAddr, 1), url, benchmarks.ClientToken); !ok {
		return nil, fmt.Errorf("the honest address's first call failed: %v", err)
	}
	res := &checkFloodResult{o: o, networks: networks}
	flood, err := startChecksChild(ctx, "flood", url, strconv.Itoa(networks))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cpu0, _ := readCPU(c.cmd.Process.Pid)
	time.Sleep(o.warmup) // the flood reaches its steady state
	honest, err := startChecksChild(ctx, "honest", url, fmt.Sprintf("%s%d-", honestPrefix, networks))
	if err != nil {
		_, _ = flood.wait(true)
		return nil, err
	}
	var both struct{ Known, Fresh honestTimes }
	herr := honest.decode(false, "honest child's timings", &both)
	ferr := flood.decode(true, "flood child's counts", &res.flood)
	res.floodFor = time.Since(start)
	cpu1, _ := readCPU(c.cmd.Process.Pid)
	res.serverCPU, res.load = cpu1-cpu0, loadAverage()
	if m, err := readMemory(c.cmd.Process.Pid); err == nil {
		res.serverPeak = m.Peak
	}
	if err := cmp.Or(herr, ferr); err != nil {
		return nil, err
	}
	res.known, res.fresh = both.Known, both.Fresh
	return res, nil
}

// startChecksChild runs a token-check child of role (flood, until its stdin
// closes, or honest) with arg (its networks, or the tokens' prefix).
func startChecksChild(ctx context.Context, role, url, arg string) (*selfChild, error) {
	o := checksOpt
	args := []string{"-checks-child", role, "-checks-url", url, "-checks-per-net", strconv.Itoa(o.perNet),
		"-checks-honest", strconv.Itoa(o.honest), "-checks-addr", honestKnownAddr}
	if role == "flood" {
		args = append(args, "-checks-networks", arg)
	} else {
		args = append(args, "-checks-run", arg)
	}
	c, err := startSelf(ctx, role+" child", args...)
	if err == nil {
		c.name = fmt.Sprint("child ", args[:2])
	}
	return c, err
}

// runChecksChild is a token-check child: its JSON result on stdout.
func runChecksChild() int {
	switch checksChild {
	case "flood":
		n, err := strconv.Atoi(checksOpt.networks)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchrss: flood child: %v\n", err)
			return 2
		}
		// Made-up bearers from n /24s x 4 addresses, perNet goroutines
		// per network; a refused call is sent again after 50 ms.
		var from []floodSource
		for nw := range n {
			for a := range 4 {
				from = append(from, floodSource{fmt.Sprintf("127.%d.%d.%d", 100+nw/200, nw%200, 1+a), fmt.Sprintf("%s%d-%d", madeUpPrefix, nw, a)})
			}
		}
		return printJSON(madeUpFlood(checksURL, from, max(1, checksOpt.perNet/4), 50*time.Millisecond))
	case "honest":
		return printJSON(checkHonestChild(checksURL, checksAddr, checksRun, checksOpt.honest))
	}
	fmt.Fprintf(os.Stderr, "benchrss: unknown -checks-child %q\n", checksChild)
	return 2
}

// checkHonestChild times count never-seen tokens from the known address
// and, beside them, half as many strangers' (see the top of this file).
func checkHonestChild(url, known, prefix string, count int) map[string]honestTimes {
	// seq times count first calls of the tokens prefix+kind+"-"+i.
	seq := func(count int, kind string, client func(i int) *http.Client) honestTimes {
		h := honestTimes{Statuses: map[int]int{}}
		for i := range count {
			start := time.Now()
			var conn time.Duration
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(httptrace.GotConnInfo) { conn = time.Since(start) }})
			status, ok, _ := postSearch(ctx, client(i), url, fmt.Sprintf("%s%s-%d", prefix, kind, i))
			h.Times = append(h.Times, time.Since(start))
			h.Connects = append(h.Connects, conn)
			h.Statuses[status]++
			if ok {
				h.Answered++
			}
			time.Sleep(100 * time.Millisecond)
		}
		return h
	}
	knownClient := clientFromLoopback(known, 1)
	var fresh honestTimes
	var wg sync.WaitGroup
	wg.Go(func() {
		fresh = seq(max(1, count/2), "fresh", func(i int) *http.Client { return clientFromLoopback(fmt.Sprintf(honestFreshNets, 1+i), 1) })
	})
	k := seq(count, "known", func(int) *http.Client { return knownClient })
	wg.Wait()
	return map[string]honestTimes{"Known": k, "Fresh": fresh}
}

// runTokenChecks runs the first burst and the floods: the exit code.
func runTokenChecks(ctx context.Context, bin string, o tokenCheckOptions) int {
	rsURL, stopRS, err := checksRS(o.reject, o.checkSlow)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: token checks: %v\n", err)
		return 1
	}
	defer stopRS()
	b, err := firstBurst(ctx, bin, rsURL, o)
	code := exitCode("first burst", b, err)
	if err != nil {
		return 1
	}
	for _, f := range strings.Split(o.networks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1000 {
			fmt.Fprintf(os.Stderr, "benchrss: -checks-networks %q: want sizes from 1 to 1000\n", f)
			return 2
		}
		r, err := checkFlood(ctx, bin, rsURL, n, o)
		code = max(code, exitCode(fmt.Sprintf("token-check flood from %d networks", n), r, err))
		if err != nil {
			return 1
		}
	}
	return code
}

func (r *checkFloodResult) write(w io.Writer) {
	o, k, f := r.o, r.known, r.fresh
	pct := func(ts []time.Duration, p float64) time.Duration {
		return benchmarks.Percentile(ts, p).Round(time.Millisecond)
	}
	fmt.Fprintf(w, "\n## Made-up bearers from %d /24s (4 addresses and %d goroutines each, the RS rejecting each after %s), honest never-seen tokens beside them from %s on\n\n", r.networks, o.perNet, o.reject, o.warmup)
	fmt.Fprint(w, measureHead)
	fmt.Fprintf(w, "| never-seen tokens from an address that showed a good token: first calls answered | %d of %d | >= %.0f%% | %s |\n",
		k.Answered, o.honest, o.minRatio*100, verdict(r.answeredOK()))
	fmt.Fprintf(w, "| the same: p50, p95, max | %s, %s, %s | p95 <= %s | %s |\n",
		pct(k.Times, 50), pct(k.Times, 95), pct(k.Times, 100), o.maxP95, verdict(benchmarks.Percentile(k.Times, 95) <= o.maxP95))
	fmt.Fprintf(w, "| never-seen tokens, each from a network that never showed one (strangers to the server): answered; p50, p95 | %d of %d; %s, %s | | |\n",
		f.Answered, len(f.Times), pct(f.Times, 50), pct(f.Times, 95))
	fmt.Fprintf(w, "| of which connecting (new connections from the other networks): p95 known; p50, p95 strangers | %s; %s, %s | | |\n",
		pct(k.Connects, 95), pct(f.Connects, 50), pct(f.Connects, 95))
	fmt.Fprintf(w, "| honest answers by status (known; strangers) | %v; %v | | |\n", k.Statuses, f.Statuses)
	fmt.Fprintf(w, "| the flood's answers by status over %s | %v | | |\n", r.floodFor.Round(100*time.Millisecond), r.flood)
	fmt.Fprintf(w, "| the server's CPU time over the flood; its peak RSS | %s; %.0f MB | | |\n", r.serverCPU.Round(10*time.Millisecond), float64(r.serverPeak)/1e6)
	fmt.Fprintf(w, "| load average after the flood (the children share the machine) | %s | | |\n", r.load)
}
