package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// checkedTokens is an Authenticate hook and its Verified hook over a set of
// good tokens: a good token is known once it has been checked; any other
// token is rejected after reject (an RS slow to say no). checks counts
// the checks made.
type checkedTokens struct {
	good   map[string]string // token -> tenant
	reject time.Duration
	checks atomic.Int64
	mu     sync.Mutex
	known  map[string]bool
}

func newCheckedTokens(reject time.Duration, good ...string) *checkedTokens {
	c := &checkedTokens{good: map[string]string{}, reject: reject, known: map[string]bool{}}
	for _, g := range good {
		c.good[g] = "grant:" + g
	}
	return c
}

func (c *checkedTokens) authenticate(ctx context.Context, token string) AuthVerdict {
	c.checks.Add(1)
	if tenant, ok := c.good[token]; ok {
		c.mu.Lock()
		c.known[token] = true
		c.mu.Unlock()
		return AuthVerdict{Outcome: AuthAccept, Tenant: tenant}
	}
	select {
	case <-time.After(c.reject):
		return AuthVerdict{Outcome: AuthInvalidToken}
	case <-ctx.Done():
		return AuthVerdict{Outcome: AuthUnavailable, Reason: "token_check_unavailable", Message: "gave up"}
	}
}

func (c *checkedTokens) verified(token string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.good[token], c.known[token]
}

// config sets both hooks on cfg.
func (c *checkedTokens) config(cfg HTTPConfig) HTTPConfig {
	cfg.RequireBearer = true
	cfg.AuthorizationServers = []string{"https://as.example"}
	cfg.Authenticate, cfg.Verified = c.authenticate, c.verified
	return cfg
}

// fromAddr is an HTTP client whose connections leave from the loopback
// address ip.
func fromAddr(ip string) *http.Client {
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: dialFrom(ip).DialContext, MaxIdleConnsPerHost: 4}}
}

// floodMadeUpBearers sends calls with a fresh made-up bearer each from
// addrs × perAddr goroutines until ctx ends, and counts the answers.
func floodMadeUpBearers(ctx context.Context, url string, addrs []string, perAddr int, header http.Header, sent *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for a, ip := range addrs {
		c := fromAddr(ip)
		for g := range perAddr {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					h := header.Clone()
					if h == nil {
						h = http.Header{}
					}
					h.Set("Authorization", fmt.Sprintf("Bearer made-up-%d-%d-%d", a, g, i))
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(callBody(1, "echo", map[string]any{"text": "x"})))
					req.Header = h
					req.Header.Set("Content-Type", "application/json")
					if resp, err := c.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						sent.Add(1)
						if resp.StatusCode == http.StatusServiceUnavailable {
							time.Sleep(50 * time.Millisecond) // refused at once: again soon
						}
					}
				}
			})
		}
	}
	return &wg
}

// TestMadeUpBearersLeaveVerifiedTokenServed: 8 addresses × 8 goroutines
// send calls with a fresh made-up bearer each, which the check takes 300 ms
// to reject, against 16 request slots. A token with a good verdict keeps
// every call answered: made-up bearers wait for their checks in the
// line of token checks, never in the slots, and are not tenants of their own.
// (Its latency under such a flood is measured by the strangers run of
// tools/benchrss, not here.)
func TestMadeUpBearersLeaveVerifiedTokenServed(t *testing.T) {
	tokens := newCheckedTokens(300*time.Millisecond, "honest")
	srv := newStack(t, tokens.config(HTTPConfig{MaxConcurrentRequests: 16}), testTools{})
	honest := hdr("Authorization", "Bearer honest")
	if resp, b := post(t, srv.URL+"/mcp", http.MethodPost, callBody(1, "echo", map[string]any{"text": "hi"}), honest); resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, b)
	}
	var addrs []string
	for i := range 8 {
		addrs = append(addrs, fmt.Sprintf("127.0.%d.%d", 40+i/4, 1+i%4))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var sent atomic.Int64
	wg := floodMadeUpBearers(ctx, srv.URL+"/mcp", addrs, 8, nil, &sent)
	defer func() { cancel(); wg.Wait() }()
	testkit.Eventually(testkit.Patience, func() bool { return tokens.checks.Load() > 8 })

	c := fromAddr("127.0.99.2")
	c.Timeout = 5 * time.Second
	const calls = 50
	answered := 0
	var failures []string
	for i := range calls {
		if len(failures) > calls/100 {
			break // already under 99%
		}
		resp, b, err := rawPost(c, srv.URL+"/mcp", http.MethodPost, callBody(i+2, "echo", map[string]any{"text": "hi"}), honest)
		if err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(b), "echo: hi") {
			answered++
		} else {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			failures = append(failures, fmt.Sprintf("%v %d %.160s", err, status, b))
		}
		time.Sleep(2 * time.Millisecond)
	}
	if answered*100 < calls*99 {
		t.Fatalf("%d of %d verified calls answered under the flood, want at least 99%%: %v", answered, calls, failures)
	}
	// The checks ran within the pool: at most its size at once, so at most
	// about that many per rejection time.
	t.Logf("%d/%d verified answered; %d made-up requests answered, %d checks", answered, calls, sent.Load(), tokens.checks.Load())
}

// TestTokenChecksWaitTheirTurn: 40 bearers without a good verdict from 10
// networks (4 addresses each), whose checks the RS holds. At most the
// places strangers may take run at once (12 of 16: a quarter is kept for
// people), at most 4 from one network; the others wait in their networks'
// queues and none is refused. A never-seen good token from an 11th
// network waits its turn too, and is answered 200 once places free; the
// 40 then get their verdict (401).
func TestTokenChecksWaitTheirTurn(t *testing.T) {
	release := make(chan struct{})
	var running, peak atomic.Int64
	hook := func(ctx context.Context, token string) AuthVerdict {
		if token == "newcomer" {
			return AuthVerdict{Outcome: AuthAccept}
		}
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return AuthVerdict{Outcome: AuthInvalidToken}
	}
	srv := newStack(t, HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"},
		Authenticate: hook, MaxUnverifiedRequests: 16}, testTools{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	statuses := make(chan int, 41)
	var wg sync.WaitGroup
	for i := range 40 {
		ip := fmt.Sprintf("127.0.%d.%d", 60+i%10, 1+i/10) // 10 networks, 4 addresses each
		wg.Go(func() {
			status, _ := echoFrom(fromAddr(ip), srv.URL, fmt.Sprintf("fake-%d", i))
			statuses <- status
		})
	}
	if !testkit.Eventually(testkit.Patience, func() bool { return running.Load() >= 12 }) {
		t.Fatalf("%d checks running, want the 12 places strangers may take (answered: %d)", running.Load(), len(statuses))
	}
	wg.Go(func() {
		c := fromAddr("127.0.98.7")
		c.Timeout = time.Minute
		status, body := echoFrom(c, srv.URL, "newcomer")
		if status != http.StatusOK {
			t.Errorf("newcomer: %d %.300s", status, body)
		}
	})
	if len(statuses) > 0 {
		t.Fatalf("%d of 40 answered while their checks were held (refused: they should wait)", len(statuses))
	}
	free()
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusUnauthorized {
			t.Errorf("a held request answered %d, want 401", s)
		}
	}
	if p := peak.Load(); p > 12 {
		t.Fatalf("%d checks at once, over the 12 places strangers may take", p)
	}
}

// TestStalledBodiesLeaveReadinessAndVerifiedBodies: 200 networks (IPv4
// /24s) each keep two connections that send 10 body bytes of a declared
// 100,000 and stalls, reconnecting at once when cut: every reading place of
// strangers is taken. /readyz stays 200 throughout, and a verified token's
// 100 KB and chunked requests are all answered: they read in places of
// their own.
func TestStalledBodiesLeaveReadinessAndVerifiedBodies(t *testing.T) {
	tokens := newCheckedTokens(0, "honest")
	srv := newStack(t, tokens.config(HTTPConfig{}), testTools{})
	honest := hdr("Authorization", "Bearer honest")
	if resp, b := post(t, srv.URL+"/mcp", http.MethodPost, callBody(1, "echo", map[string]any{"text": "hi"}), honest); resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, b)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var opened atomic.Int64
	for p := range 200 {
		for range 2 {
			wg.Go(func() { stallLoop(ctx, addr, fmt.Sprintf("127.%d.%d.1", 100+p/200, p%200), &opened) })
		}
	}
	defer func() { cancel(); wg.Wait() }()
	testkit.Eventually(testkit.Patience, func() bool { return opened.Load() >= 400 })
	time.Sleep(200 * time.Millisecond)

	c := fromAddr("127.0.99.3")
	perKind := 10
	if testkit.RaceEnabled {
		perKind = 5
	}
	answered, total, notReady := 0, 0, 0
	var failures []string
	for i := range perKind {
		for _, chunked := range []bool{false, true} {
			total++
			if failure := postLargeEcho(c, srv.URL+"/mcp", i+1, chunked, honest); failure == "" {
				answered++
			} else {
				failures = append(failures, failure)
			}
			if r, _, err := rawPost(c, srv.URL+"/readyz", http.MethodGet, "", nil); err != nil || r.StatusCode != http.StatusOK {
				notReady++
			}
		}
	}
	if answered != total || notReady > 0 {
		t.Fatalf("%d of %d verified requests answered (%v), /readyz not 200 %d times", answered, total, failures, notReady)
	}
	t.Logf("%d/%d answered; %d stalled connections opened", answered, total, opened.Load())
}

// TestTrustedProxiesClientAddress: the client address is read from the
// forwarded header only when the TCP peer is a trusted proxy, as the
// right-most address that is not itself trusted.
func TestTrustedProxiesClientAddress(t *testing.T) {
	tests := []struct {
		name, peer, header string
		trusted            []string
		values             []string
		want               string
	}{
		{"no proxies configured", "10.0.0.5:4000", "", nil, []string{"203.0.113.9"}, "10.0.0.5"},
		{"untrusted peer's header ignored", "192.0.2.1:4000", "", []string{"10.0.0.0/8"}, []string{"203.0.113.9"}, "192.0.2.1"},
		{"trusted peer", "10.0.0.5:4000", "", []string{"10.0.0.0/8"}, []string{"203.0.113.9"}, "203.0.113.9"},
		{"spoofed left part ignored", "10.0.0.5:4000", "", []string{"10.0.0.0/8"}, []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9"},
		{"chain of trusted proxies", "10.0.0.5:4000", "", []string{"10.0.0.0/8"}, []string{"1.2.3.4, 203.0.113.9, 10.1.1.1", "10.2.2.2"}, "203.0.113.9"},
		{"all trusted: left-most", "10.0.0.5:4000", "", []string{"10.0.0.0/8"}, []string{"10.3.3.3, 10.1.1.1"}, "10.3.3.3"},
		{"garbage stops the walk", "10.0.0.5:4000", "", []string{"10.0.0.0/8"}, []string{"203.0.113.9, nonsense"}, "10.0.0.5"},
		{"no header", "10.0.0.5:4000", "", []string{"10.0.0.0/8"}, nil, "10.0.0.5"},
		{"IPv6 with port and brackets", "[fd00::1]:4000", "", []string{"fd00::/8"}, []string{"[2001:db8::7]:5555"}, "2001:db8::7"},
		{"bare address as proxy", "10.0.0.5:4000", "", []string{"10.0.0.5"}, []string{"203.0.113.9"}, "203.0.113.9"},
		{"Forwarded", "10.0.0.5:4000", HeaderForwarded, []string{"10.0.0.0/8"}, []string{`for=1.2.3.4, for="[2001:db8::8]:80";proto=https`}, "2001:db8::8"},
		{"Forwarded obfuscated", "10.0.0.5:4000", HeaderForwarded, []string{"10.0.0.0/8"}, []string{`for=_hidden`}, "10.0.0.5"},
		{"the other header is not read", "10.0.0.5:4000", HeaderForwarded, []string{"10.0.0.0/8"}, nil, "10.0.0.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := parseProxies(tc.trusted, tc.header)
			if err != nil {
				t.Fatal(err)
			}
			name := HeaderXForwardedFor
			if tc.header != "" {
				name = tc.header
			}
			h := http.Header{}
			for _, v := range tc.values {
				h.Add(name, v)
			}
			if tc.name == "the other header is not read" {
				h.Add(HeaderXForwardedFor, "203.0.113.9")
			}
			if got := ps.resolve(tc.peer, h); got != netip.MustParseAddr(tc.want) {
				t.Fatalf("client %v, want %s", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "nonsense", "10.0.0.0/8/2"} {
		if _, err := parseProxies([]string{bad}, ""); err == nil {
			t.Errorf("trusted proxy %q accepted", bad)
		}
	}
	if _, err := parseProxies(nil, "X-Real-IP"); err == nil {
		t.Error("an unknown forwarded header accepted")
	}
	if _, err := (HTTPConfig{TrustedProxies: []string{"nonsense"}}).Effective(); err == nil {
		t.Error("config with a bad trusted proxy validated")
	}
}

// TestTrustedProxyKeepsClientsApart: behind a trusted proxy, one client
// whose checks hang runs its network's share of the checks (4 of 16) and
// queues its address's share (4), and is refused beyond it; another
// client's first token check goes through at once. From an untrusted peer
// the forwarded header is ignored and both are one client: the second is
// refused client_unverified_busy.
func TestTrustedProxyKeepsClientsApart(t *testing.T) {
	tests := []struct {
		name       string
		trusted    []string
		wantHonest int
		wantReason string
	}{
		{"trusted proxy", []string{"127.0.0.0/8"}, http.StatusOK, ""},
		{"untrusted peer", nil, http.StatusServiceUnavailable, reasonClientUnverifiedBusy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var holding atomic.Int64
			hook := func(ctx context.Context, token string) AuthVerdict {
				if token == "honest" {
					return AuthVerdict{Outcome: AuthAccept}
				}
				holding.Add(1)
				defer holding.Add(-1)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return AuthVerdict{Outcome: AuthInvalidToken}
			}
			srv := newStack(t, HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"},
				Authenticate: hook, MaxUnverifiedRequests: 16, TrustedProxies: tc.trusted}, testTools{})
			proxy := fromAddr("127.0.0.1")
			var wg sync.WaitGroup
			var refused atomic.Int64
			defer func() { close(release); wg.Wait() }()
			for i := range 12 { // 4 run, 4 wait in line, 4 are refused
				wg.Go(func() {
					resp, _, err := rawPost(proxy, srv.URL+"/mcp", http.MethodPost, callBody(1, "echo", map[string]any{"text": "x"}),
						hdr("Authorization", fmt.Sprintf("Bearer fake-%d", i), "X-Forwarded-For", "203.0.113.66"))
					if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
						refused.Add(1)
					}
				})
			}
			if !testkit.Eventually(testkit.Patience, func() bool { return holding.Load() == 4 && refused.Load() == 4 }) {
				t.Fatalf("attacker: %d checks running, %d refused; want 4 and 4", holding.Load(), refused.Load())
			}
			resp, b, err := rawPost(proxy, srv.URL+"/mcp", http.MethodPost, callBody(2, "echo", map[string]any{"text": "hi"}),
				hdr("Authorization", "Bearer honest", "X-Forwarded-For", "198.51.100.7"))
			if err != nil || resp.StatusCode != tc.wantHonest || tc.wantReason != "" && !strings.Contains(string(b), tc.wantReason) {
				t.Fatalf("honest client's first check: %v %v %s", err, resp, b)
			}
		})
	}
}

// TestSameOriginAllowed: a page served from the server's own origin may
// call /mcp without being listed: the scheme and Host the request was sent
// to, the public base URL's origin, and on a loopback listener the other
// loopback spellings of the same port. Foreign origins, other ports and a
// DNS-rebinding page (its Origin and Host both name the attacker's host)
// are refused.
func TestSameOriginAllowed(t *testing.T) {
	plain := newStack(t, HTTPConfig{}, testTools{})
	anyHost := newStack(t, HTTPConfig{AllowedHosts: []string{"*"}}, testTools{})
	public := newStack(t, HTTPConfig{PublicBaseURL: "https://mcp.example.com"}, testTools{})
	port := func(srv string) string { _, p, _ := net.SplitHostPort(strings.TrimPrefix(srv, "http://")); return p }
	p := port(plain.URL)
	tests := []struct {
		name, url, host, origin string
		want                    int
	}{
		{"own origin", plain.URL, "", plain.URL, http.StatusOK},
		{"localhost spelling of the loopback listener", plain.URL, "", "http://localhost:" + p, http.StatusOK},
		{"IPv6 loopback spelling", plain.URL, "", "http://[::1]:" + p, http.StatusOK},
		{"Host localhost, Origin 127.0.0.1", plain.URL, "localhost:" + p, "http://127.0.0.1:" + p, http.StatusOK},
		{"another port", plain.URL, "", "http://127.0.0.1:1", http.StatusForbidden},
		{"another scheme", plain.URL, "", "https://127.0.0.1:" + p, http.StatusForbidden},
		{"foreign origin", plain.URL, "", "https://evil.example", http.StatusForbidden},
		{"rebinding page: Host not served", plain.URL, "evil.example:" + p, "http://evil.example:" + p, http.StatusMisdirectedRequest},
		{"rebinding page with any Host served", anyHost.URL, "evil.example:" + port(anyHost.URL), "http://evil.example:" + port(anyHost.URL), http.StatusForbidden},
		{"any Host served: an address literal is still same-origin", anyHost.URL, "", anyHost.URL, http.StatusOK},
		{"public base origin", public.URL, "mcp.example.com", "https://mcp.example.com", http.StatusOK},
		{"public base: a foreign origin", public.URL, "mcp.example.com", "https://app.example.com", http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, tc.url+"/mcp", strings.NewReader(rpc(1, "ping", nil)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", tc.origin)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
		})
	}
}

// TestAccessLogNamesClientBehindProxy: behind a trusted proxy the access
// log names the client address read from the forwarded header beside the
// peer's; from an untrusted peer it names none.
func TestAccessLogNamesClientBehindProxy(t *testing.T) {
	tests := []struct {
		name    string
		trusted []string
		want    bool
	}{
		{"trusted proxy", []string{"127.0.0.0/8"}, true},
		{"untrusted peer", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.Buffer
			srv := newStack(t, HTTPConfig{TrustedProxies: tc.trusted, Logger: slogTo(&logs)}, testTools{})
			resp, b := post(t, srv.URL+"/mcp", http.MethodPost, rpc(1, "ping", nil), hdr("X-Forwarded-For", "198.51.100.23"))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			line := logs.WaitCount("http request", 1, testkit.Patience)
			if got := strings.Contains(line, "client=198.51.100.23"); got != tc.want || !strings.Contains(line, "remote=127.0.0.1:") {
				t.Fatalf("access log:\n%s", line)
			}
		})
	}
}

// TestUnverifiedRefusalsLogOncePerInterval: strangers refused by the line
// of token checks can send requests as fast as the server answers them, so
// the access log does not write a line for each (they log at debug level):
// the line's warning counts them, at most once per busyLogEvery. A refusal
// of anything else still logs its line.
func TestUnverifiedRefusalsLogOncePerInterval(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int64
	hook := func(ctx context.Context, token string) AuthVerdict {
		running.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return AuthVerdict{Outcome: AuthInvalidToken}
	}
	var logs testkit.Buffer
	m := metrics.New()
	srv := newStack(t, HTTPConfig{RequireBearer: true, AuthorizationServers: []string{"https://as.example"},
		Authenticate: hook, MaxUnverifiedRequests: 16, Logger: slogTo(&logs), Metrics: m}, testTools{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	c := fromAddr("127.0.61.9")
	var wg sync.WaitGroup
	for i := range 8 { // the network's share of the checks (4), and the address's of its queue (4)
		wg.Go(func() {
			_, _, _ = rawPost(c, srv.URL+"/mcp", http.MethodPost, callBody(1, "echo", map[string]any{"text": "x"}), hdr("Authorization", fmt.Sprintf("Bearer held-%d", i)))
		})
	}
	testkit.Eventually(testkit.Patience, func() bool {
		return running.Load() >= 4 && sample(t, m, metrics.NameCheckQueue, nil) >= 4
	})
	const sent = 40
	refused := 0
	for i := range sent {
		resp, _, err := rawPost(c, srv.URL+"/mcp", http.MethodPost, callBody(i+2, "echo", map[string]any{"text": "x"}), hdr("Authorization", fmt.Sprintf("Bearer fake-%d", i)))
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			refused++
		}
	}
	once.Do(func() { close(release) })
	wg.Wait()
	if refused != sent {
		t.Fatalf("%d of %d refused by the line, want all", refused, sent)
	}
	// A request refused for another reason (no bearer) still logs its line.
	if resp, _, err := rawPost(c, srv.URL+"/mcp", http.MethodPost, callBody(99, "echo", map[string]any{"text": "x"}), nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no bearer: %v %v", err, resp)
	}
	out := logs.WaitCount("status=401", 1, testkit.Patience)
	if n := strings.Count(out, "status=503"); n > 0 {
		t.Errorf("%d access log lines for %d refusals by the line, want none:\n%.2000s", n, sent, out)
	}
	if n := strings.Count(out, "their network's queue of token checks is full"); n < 1 || n > 2 {
		t.Errorf("%d line warnings for %d refusals in well under two seconds, want one or two:\n%.2000s", n, sent, out)
	}
}
