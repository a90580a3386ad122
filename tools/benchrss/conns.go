package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// The connection floods of -strangers: a child holds kept-alive connections
// from many loopback addresses while this process times a verified token's
// calls, each on a new connection from an address the flood does not use,
// and asks the admin listener.

// connFlood is one flood shape and its aim.
type connFlood struct {
	name     string
	networks int      // loopback /24s of the flood
	addrs    int      // addresses per network
	perAddr  int      // connections per address
	honestIP string   // where the verified token's calls come from
	args     []string // the server's flags beyond its defaults
}

// connFloods: 17 networks x 512 held connections (more than the default
// total), and one address x 512 beside a neighbour in its /24.
var connFloods = []connFlood{
	{name: "17 networks x 512 connections (32 addresses x 16), a verified token from another network", networks: 17, addrs: 32, perAddr: 16, honestIP: "127.0.250.1"},
	{name: "one address x 512 connections, a verified token from a neighbour in its /24", networks: 1, addrs: 1, perAddr: 512, honestIP: "127.0.110.200"},
	{name: "17 networks x 512 connections against the shipped container's flags (--max-conns=384 --max-body-bytes=131072)", networks: 17, addrs: 32, perAddr: 16, honestIP: "127.0.250.1",
		args: []string{"--max-conns=384", "--max-body-bytes=131072"}},
}

type connFloodResult struct {
	flood         connFlood
	searchTimes         // the verified token's calls
	held          int64 // the flood's connections it believes open at the end
	serverFDs     int   // the server's open file descriptors at the end
	adminOK       int   // admin /healthz and /readyz answered 200
	adminAsked    int
	publicHealthz map[int]int // /healthz on a new public connection, by status
	peak, rss     int64       // the server's VmHWM and VmRSS at the end
	load          string
}

func (r *connFloodResult) ok() bool {
	return r.answeredOK() && r.adminOK == r.adminAsked
}

func (r *connFloodResult) answeredOK() bool {
	return float64(r.answered) >= connFloodMinRatio*connFloodCalls
}

// The verified token makes connFloodCalls calls under each flood, one every
// connFloodPause, and at least connFloodMinRatio of them must be answered.
const (
	connFloodCalls    = 50
	connFloodPause    = 100 * time.Millisecond
	connFloodMinRatio = 0.9
)

// runConnFloods runs the memory measure and every flood, each on a fresh server.
func runConnFloods(ctx context.Context, bin string) int {
	rsURL, stopRS, err := serveDemoRS(nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: %v\n", err)
		return 1
	}
	defer stopRS()
	per, err := measureConnBytes(ctx, bin, rsURL)
	if exitCode("connection memory", per, err) != 0 {
		return 1
	}
	code := 0
	for _, f := range connFloods {
		res, err := runConnFlood(ctx, bin, rsURL, f)
		code = max(code, exitCode(f.name, res, err))
		if err != nil {
			return 1
		}
	}
	return code
}

// startAdminChild starts the server, its admin listener on a port free a moment before.
func startAdminChild(ctx context.Context, bin, rsURL string, args ...string) (*child, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	admin := ln.Addr().String()
	_ = ln.Close()
	c, err := startChild(ctx, bin, rsURL, append([]string{"--admin-listen", admin}, args...)...)
	return c, admin, err
}

func runConnFlood(ctx context.Context, bin, rsURL string, f connFlood) (*connFloodResult, error) {
	c, admin, err := startAdminChild(ctx, bin, rsURL, f.args...)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	url := "http://" + c.addr + "/mcp"
	honest := newConnClient(f.honestIP)
	if _, ok, err := postSearch(ctx, honest, url, benchmarks.ClientToken); !ok { // its verdict is cached from now on
		return nil, fmt.Errorf("first verified call failed: %v", err)
	}
	flood, err := startSelf(ctx, "connection flood child", "-"+connFloodChildFlag, c.addr,
		"-"+connFloodShapeFlag, fmt.Sprintf("%d,%d,%d", f.networks, f.addrs, f.perAddr))
	if err != nil {
		return nil, err
	}
	// The flood reaches its stride: all its connections opened once.
	if err := waitOpened(flood, 2*time.Minute); err != nil {
		_, _ = flood.wait(true)
		return nil, err
	}
	res := &connFloodResult{flood: f, publicHealthz: map[int]int{}}
	adminClient := &http.Client{Timeout: 10 * time.Second}
	res.searchTimes = timedSearches(ctx, honest, url, benchmarks.ClientToken, connFloodCalls, connFloodPause, func(i int) {
		if i%10 == 0 {
			for _, path := range []string{"/healthz", "/readyz"} {
				res.adminAsked++
				if getStatus(ctx, adminClient, "http://"+admin+path, "") == http.StatusOK {
					res.adminOK++
				}
			}
			res.publicHealthz[getStatus(ctx, honest, "http://"+c.addr+"/healthz", "")]++
		}
	})
	m, err := readMemory(c.cmd.Process.Pid)
	if err != nil {
		_, _ = flood.wait(true)
		return nil, err
	}
	res.peak, res.rss, res.load = m.Peak, m.RSS, loadAverage()
	if fds, err := os.ReadDir("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/fd"); err == nil {
		res.serverFDs = len(fds)
	}
	return res, flood.decode(true, "connection flood child's count", &res.held)
}

// newConnClient is an HTTP client from ip, a new connection per request.
func newConnClient(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// getStatus GETs url (token: any bearer): its status, 0 on a transport error.
func getStatus(ctx context.Context, hc *http.Client, url, token string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func (r *connFloodResult) write(w io.Writer) {
	f := r.flood
	fmt.Fprintf(w, "## Held connections: %s\n\n", f.name)
	fmt.Fprint(w, strings.Replace(measureHead, "bound", "aim", 1))
	fmt.Fprintf(w, "| the verified token's searches on new connections: answered | %d of %d (%v) | >= %.0f%% | %s |\n", r.answered, connFloodCalls, r.statuses, connFloodMinRatio*100, verdict(r.answeredOK()))
	fmt.Fprintf(w, "| the same: p50, p95 | %s, %s | | |\n", r.p50.Round(time.Millisecond), r.p95.Round(time.Millisecond))
	fmt.Fprintf(w, "| admin listener /healthz and /readyz answered 200 | %d of %d | all | %s |\n", r.adminOK, r.adminAsked, verdict(r.adminOK == r.adminAsked))
	fmt.Fprintf(w, "| /healthz on a new public connection, by status | %v | | |\n", r.publicHealthz)
	fmt.Fprintf(w, "| the flood's connections: opening, believed open (an idle one closed by the server is noticed at its next ask) | %d, %d | | |\n", f.networks*f.addrs*f.perAddr, r.held)
	fmt.Fprintf(w, "| the server's open file descriptors at the end (connections, listeners, its RS client's) | %d | | |\n", r.serverFDs)
	fmt.Fprintf(w, "| the server's RSS: peak, at the end | %.1f MB, %.1f MB | | |\n", float64(r.peak)/1e6, float64(r.rss)/1e6)
	fmt.Fprintf(w, "| load average at the end | %s | | |\n\n", r.load)
}

type connBytesResult struct {
	before, idl memory
	load        string
}

// connBytesConns is how many idle connections the memory measure holds: 8
// networks x 3 addresses x 64, within the default bounds.
const connBytesConns = 8 * 3 * 64

// measureConnBytes reads a fresh server's RSS before and with
// connBytesConns idle kept-alive connections (each served one /healthz).
func measureConnBytes(ctx context.Context, bin, rsURL string) (*connBytesResult, error) {
	c, _, err := startAdminChild(ctx, bin, rsURL)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if _, _, err := toolCall(ctx, c.addr, "search", map[string]any{"q": "budget", "limit": 3}); err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	res := &connBytesResult{}
	if res.before, err = readMemory(c.cmd.Process.Pid); err != nil {
		return nil, err
	}
	var conns []net.Conn
	defer func() {
		for _, cn := range conns {
			_ = cn.Close()
		}
	}()
	for n := range 8 {
		for a := range 3 {
			ip := fmt.Sprintf("127.0.%d.%d", 130+n, 1+a)
			for range 64 {
				cn, err := holdConn(c.addr, ip)
				if err != nil {
					return nil, fmt.Errorf("connection %d from %s: %w", len(conns), ip, err)
				}
				conns = append(conns, cn)
			}
		}
	}
	time.Sleep(time.Second)
	res.idl, err = readMemory(c.cmd.Process.Pid)
	res.load = loadAverage()
	return res, err
}

func (r *connBytesResult) ok() bool { return true } // a measure without a bound

func (r *connBytesResult) write(w io.Writer) {
	per := float64(r.idl.RSS-r.before.RSS) / connBytesConns
	fmt.Fprintf(w, "## Memory of idle kept-alive connections\n\n")
	fmt.Fprint(w, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(w, "| the server's RSS before, with %d idle connections | %.1f MB, %.1f MB |\n", connBytesConns, float64(r.before.RSS)/1e6, float64(r.idl.RSS)/1e6)
	fmt.Fprintf(w, "| per connection | %.1f KiB |\n", per/1024)
	fmt.Fprintf(w, "| load average | %s |\n\n", r.load)
}

// holdConn opens a connection from ip to addr, asked /healthz once.
func holdConn(addr, ip string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	cn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := askHealthz(cn, addr); err != nil {
		_ = cn.Close()
		return nil, err
	}
	return cn, nil
}

// askHealthz asks GET /healthz on cn: it must be 200 and keep cn open.
func askHealthz(cn net.Conn, addr string) error {
	_ = cn.SetDeadline(time.Now().Add(10 * time.Second))
	defer cn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(cn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// The flags of runConnFloodChild.
const (
	connFloodChildFlag = "conns-flood-child"
	connFloodShapeFlag = "conns-flood-shape"
)

// connFloodAsk is how often each held connection asks /healthz again: 8,704
// connections then ask about 290 times a second in all.
const connFloodAsk = 30 * time.Second

// waitOpened waits for the connection flood child's "opened" line.
func waitOpened(ch *selfChild, within time.Duration) error {
	got := make(chan string, 1)
	go func() {
		line, _ := ch.out.ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if line == "opened\n" {
			return nil
		}
		return fmt.Errorf("connection flood child ended before opening its connections")
	case <-time.After(within):
		return fmt.Errorf("connection flood child did not open its connections within %s", within)
	}
}

// runConnFloodChild holds a flood shape's ("networks,addrs,perAddr")
// connections to addr until stdin closes, printing "opened" once every one
// was opened once, then how many were open.
func runConnFloodChild(addr, shape string) int {
	var n [3]int
	parts := strings.Split(shape, ",")
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "benchrss: -%s %q: want networks,addrs,perAddr\n", connFloodShapeFlag, shape)
		return 2
	}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 {
			fmt.Fprintf(os.Stderr, "benchrss: -%s %q: want three positive counts\n", connFloodShapeFlag, shape)
			return 2
		}
		n[i] = v
	}
	total := n[0] * n[1] * n[2]
	// The Go runtime raised the soft limit of open files to the hard one.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintf(os.Stderr, "benchrss: reading the file limit: %v\n", err)
		return 1
	}
	if need := uint64(total) + 256; lim.Cur < need {
		fmt.Fprintf(os.Stderr, "benchrss: the flood needs %d open files, the hard limit is %d (raise it with ulimit -Hn)\n", need, lim.Max)
		return 1
	}
	ctx := stdinContext()
	var open atomic.Int64
	var first sync.WaitGroup
	var wg sync.WaitGroup
	first.Add(total)
	for nw := range n[0] {
		for a := range n[1] {
			ip := fmt.Sprintf("127.0.%d.%d", 110+nw, 1+a)
			for range n[2] {
				wg.Go(func() { holdLoop(ctx, addr, ip, &open, first.Done) })
			}
		}
	}
	first.Wait()
	fmt.Println("opened")
	<-ctx.Done()
	held := open.Load()
	wg.Wait()
	fmt.Println(held)
	return 0
}

// holdLoop keeps a connection from ip open until ctx ends: asked /healthz
// every connFloodAsk, opened again 100 ms after the server closes or
// refuses it; opened is called after the first attempt.
func holdLoop(ctx context.Context, addr, ip string, open *atomic.Int64, opened func()) {
	once := sync.OnceFunc(opened)
	defer once()
	for ctx.Err() == nil {
		cn, err := holdConn(addr, ip)
		once()
		if err != nil {
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		open.Add(1)
		closed := context.AfterFunc(ctx, func() { _ = cn.Close() })
		for sleepCtx(ctx, connFloodAsk) && askHealthz(cn, addr) == nil {
		}
		closed()
		_ = cn.Close()
		open.Add(-1)
	}
}

// sleepCtx sleeps d unless ctx ends first, and reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
