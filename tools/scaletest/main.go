package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// options are the command-line settings.
type options struct {
	clients     int
	duration    time.Duration
	replicas    int
	haproxy     string
	bin         string
	callTimeout time.Duration
	restart     bool
	retry       bool
	drainDelay  time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.clients, "clients", 50, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "length of the load (at most 10m)")
	flag.IntVar(&o.replicas, "replicas", 3, "server replicas behind HAProxy (2 to 8)")
	flag.StringVar(&o.haproxy, "haproxy", "haproxy", "HAProxy executable (apt-get install haproxy)")
	flag.StringVar(&o.bin, "bin", "", "use this pdpp-mcp-server binary instead of building one")
	flag.DurationVar(&o.callTimeout, "call-timeout", 30*time.Second, "bound on one call")
	flag.BoolVar(&o.restart, "restart", true, "send SIGTERM to one replica mid-run and restart it")
	flag.DurationVar(&o.drainDelay, "drain-delay", 2*time.Second, "each replica's --drain-delay: how long it keeps serving after SIGTERM with /readyz at 503 (above HAProxy's check interval)")
	flag.BoolVar(&o.retry, "proxy-retry", true, "let HAProxy retry a request on another replica when the connection fails or is closed unanswered")
	flag.Parse()
	if o.clients < 1 || o.clients > 500 || o.duration <= 0 || o.duration > 10*time.Minute || o.replicas < 2 || o.replicas > 8 {
		fmt.Fprintln(os.Stderr, "scaletest: -clients 1..500, -duration up to 10m, -replicas 2..8")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The whole run is bounded: load, one restart, start-up and shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), o.duration+5*time.Minute)
	defer cancel()
	rep, err := run(ctx, log, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaletest: %v\n", err)
		os.Exit(1)
	}
	rep.write(os.Stdout)
	if rep.failed > 0 {
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, o options) (*report, error) {
	haproxy, err := exec.LookPath(o.haproxy)
	if err != nil {
		return nil, fmt.Errorf("HAProxy not found (%v): install it with `sudo apt-get install haproxy`", err)
	}
	tmp, err := os.MkdirTemp("", "pdpp-scaletest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(tmp, "pdpp-mcp-server")
		log.Info("building the server")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/pdpp-mcp-server")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build: %v\n%s", err, out)
		}
	}

	rs, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: benchmarks.ClientToken}})
	if err != nil {
		return nil, fmt.Errorf("demo RS: %w", err)
	}
	defer rs.Close()
	rsURL, err := demors.ListenAndServe(ctx, "127.0.0.1:0", rs)
	if err != nil {
		return nil, fmt.Errorf("demo RS: %w", err)
	}

	ports, err := freePorts(o.replicas + 1)
	if err != nil {
		return nil, err
	}
	front := ports[0]
	reps := make([]*replica, o.replicas)
	for i := range reps {
		reps[i] = &replica{bin: bin, provider: strings.TrimRight(rsURL, "/"), port: ports[i+1], logDir: tmp, index: i, drainDelay: o.drainDelay}
		if err := reps[i].start(ctx); err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, r := range reps {
			r.stop()
		}
	}()

	cfg := filepath.Join(tmp, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(front, ports[1:], o.retry)), 0o600); err != nil {
		return nil, err
	}
	hp := exec.Command(haproxy, "-f", cfg, "-db")
	hpLog, _ := os.Create(filepath.Join(tmp, "haproxy.log"))
	hp.Stdout, hp.Stderr = hpLog, hpLog
	if err := hp.Start(); err != nil {
		return nil, fmt.Errorf("starting HAProxy: %w", err)
	}
	defer func() { _ = hp.Process.Signal(syscall.SIGTERM); _ = hp.Wait() }()
	frontURL := fmt.Sprintf("http://127.0.0.1:%d", front)
	// HAProxy marks a replica up after two passing checks 500 ms apart.
	if err := waitOK(ctx, frontURL+"/healthz", 10*time.Second); err != nil {
		hpOut, _ := os.ReadFile(filepath.Join(tmp, "haproxy.log"))
		return nil, fmt.Errorf("HAProxy did not come up: %v\n%s", err, hpOut)
	}
	time.Sleep(1500 * time.Millisecond)

	rep := &report{opt: o}
	work := benchmarks.Workload()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients, IdleConnTimeout: 30 * time.Second}}
	loadCtx, stopLoad := context.WithTimeout(ctx, o.duration)
	defer stopLoad()
	log.Info("load", "clients", o.clients, "duration", o.duration.String(), "replicas", o.replicas, "front", frontURL)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range o.clients {
		wg.Go(func() {
			// Bounded by loadCtx: the loop ends when the load duration is over.
			for i := c; loadCtx.Err() == nil; i++ {
				call := work[i%len(work)]
				d, err := callTool(loadCtx, hc, frontURL+"/mcp", call.Tool, call.Args, o.callTimeout)
				if loadCtx.Err() != nil && err != nil {
					return // cut by the end of the run, not a failure
				}
				rep.record(d, err)
			}
		})
	}
	if o.restart && o.replicas > 1 {
		select {
		case <-time.After(o.duration / 2):
		case <-loadCtx.Done():
		}
		victim := reps[1]
		log.Info("sending SIGTERM to a replica", "replica", victim.index, "pid", victim.cmd.Process.Pid)
		t0 := time.Now()
		victim.stop()
		rep.drain = time.Since(t0)
		rep.victimExit = victim.exitErr
		t1 := time.Now()
		if err := victim.start(ctx); err != nil {
			return nil, fmt.Errorf("restarting replica %d: %w", victim.index, err)
		}
		if err := waitOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", victim.port), 10*time.Second); err != nil {
			return nil, fmt.Errorf("restarted replica not ready: %w", err)
		}
		rep.restartReady = time.Since(t1)
		log.Info("replica restarted", "drain", rep.drain.String(), "ready_after", rep.restartReady.String())
	}
	wg.Wait()
	rep.elapsed = time.Since(start)
	for _, r := range reps {
		r.stop()
		rep.cpu += r.cpu
		rep.maxRSSKiB = max(rep.maxRSSKiB, r.maxRSSKiB)
	}
	return rep, nil
}

// haproxyConfig routes the front port round-robin to the replicas, checks
// each with GET /readyz every 500 ms (250 ms once one failed; down after two
// failures, up after two passes; a check may take 3 s, so a CPU-starved but
// healthy replica stays in), and with retry retries a request elsewhere when
// the connection fails or the replica closes it without answering.
func haproxyConfig(front int, backends []int, retry bool) string {
	retries := "retries 3\n    option redispatch 1\n    retry-on conn-failure empty-response"
	if !retry {
		retries = "retries 0\n    retry-on none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 2048

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 10s
    timeout check 3s
    %s

frontend mcp
    bind 127.0.0.1:%d
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 2
`, retries, front)
	for i, p := range backends {
		fmt.Fprintf(&b, "    server r%d 127.0.0.1:%d check\n", i, p)
	}
	return b.String()
}

// replica is one server process on a fixed port, restartable.
type replica struct {
	bin, provider, logDir string
	port, index           int
	cmd                   *exec.Cmd
	exited                chan struct{}
	exitErr               error
	cpu                   time.Duration // over every run of this replica
	maxRSSKiB             int64
	starts                int
	drainDelay            time.Duration
}

func (r *replica) start(ctx context.Context) error {
	r.starts++
	logf, err := os.Create(filepath.Join(r.logDir, fmt.Sprintf("replica-%d-%d.log", r.index, r.starts)))
	if err != nil {
		return err
	}
	r.cmd = exec.Command(r.bin, "http", "--provider-url", r.provider, "--listen", "127.0.0.1:"+strconv.Itoa(r.port),
		"--drain-delay", r.drainDelay.String())
	r.cmd.Env = []string{"HOME=" + r.logDir, "PATH=" + os.Getenv("PATH")}
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.exited = make(chan struct{})
	go func() {
		r.exitErr = r.cmd.Wait()
		_ = logf.Close()
		if st := r.cmd.ProcessState; st != nil {
			r.cpu += st.UserTime() + st.SystemTime()
			if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
				r.maxRSSKiB = max(r.maxRSSKiB, ru.Maxrss)
			}
		}
		close(r.exited)
	}()
	return waitOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port), 10*time.Second)
}

// stop sends SIGTERM and waits for the exit (bounded: SIGKILL after 2 min).
func (r *replica) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(2 * time.Minute):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// callTool sends one stateless tools/call and reports its latency, or why it
// failed (transport error, HTTP status, JSON-RPC error or tool error).
func callTool(ctx context.Context, hc *http.Client, url, tool string, args map[string]any, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+benchmarks.ClientToken)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d: %.200s", tool, resp.StatusCode, raw)
	}
	var out struct {
		Error  *struct{ Message string } `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, fmt.Errorf("%s: %v", tool, err)
	}
	if out.Error != nil {
		return 0, fmt.Errorf("%s: JSON-RPC error %s", tool, out.Error.Message)
	}
	if out.Result == nil || out.Result.IsError {
		return 0, fmt.Errorf("%s: tool error: %.200s", tool, raw)
	}
	return d, nil
}

// waitOK polls url until it answers 200 (bounded by limit).
func waitOK(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := errors.New("timed out")
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: %w", url, last)
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n { // each held until the return, so the ports differ
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
