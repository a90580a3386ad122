package transport

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// sample reads one metric of m (summed over the series whose labels
// include want).
func sample(t *testing.T, m *metrics.Metrics, name string, want map[string]string) float64 {
	t.Helper()
	got, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range got {
		fams[f.GetName()] = f
	}
	v, _ := testkit.Sample(fams, name, want)
	return v
}

// heldChecks is an Authenticate hook whose checks of a bearer that is not
// good wait until release is closed (an RS holding them), then reject it;
// good bearers are accepted at once, or once goodGate is closed when it is
// set. It counts the checks made and those holding now.
type heldChecks struct {
	good     map[string]bool
	goodGate chan struct{}
	release  chan struct{}
	once     sync.Once
	checks   atomic.Int64
	holding  atomic.Int64
	mu       sync.Mutex
	known    map[string]bool
}

func newHeldChecks(t *testing.T, good ...string) *heldChecks {
	h := &heldChecks{good: map[string]bool{}, release: make(chan struct{}), known: map[string]bool{}}
	for _, g := range good {
		h.good[g] = true
	}
	t.Cleanup(h.free)
	return h
}

// free lets every held check end.
func (h *heldChecks) free() { h.once.Do(func() { close(h.release) }) }

func (h *heldChecks) authenticate(ctx context.Context, token string) AuthVerdict {
	h.checks.Add(1)
	if h.good[token] {
		if h.goodGate != nil {
			select {
			case <-h.goodGate:
			case <-ctx.Done():
				return AuthVerdict{Outcome: AuthUnavailable, Reason: "token_check_unavailable", Message: "gave up"}
			}
		}
		h.mu.Lock()
		h.known[token] = true
		h.mu.Unlock()
		return AuthVerdict{Outcome: AuthAccept, Tenant: "grant:" + token}
	}
	h.holding.Add(1)
	defer h.holding.Add(-1)
	select {
	case <-h.release:
		return AuthVerdict{Outcome: AuthInvalidToken}
	case <-ctx.Done():
		return AuthVerdict{Outcome: AuthUnavailable, Reason: "token_check_unavailable", Message: "gave up"}
	}
}

func (h *heldChecks) verified(token string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return "grant:" + token, h.known[token]
}

func (h *heldChecks) config(cfg HTTPConfig) HTTPConfig {
	cfg.RequireBearer = true
	cfg.AuthorizationServers = []string{"https://as.example"}
	cfg.Authenticate, cfg.Verified = h.authenticate, h.verified
	return cfg
}

// echoFrom sends one echo call with bearer from client and returns the
// status and body (status 0 and the error on a transport failure).
func echoFrom(c *http.Client, url, bearer string) (int, string) {
	resp, b, err := rawPost(c, url+"/mcp", http.MethodPost, callBody(1, "echo", map[string]any{"text": "hi"}), hdr("Authorization", "Bearer "+bearer))
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// TestFirstBurstSharesOneCheck: a fresh server, a token it has not checked,
// 50 parallel calls from one address, and a check the RS answers slowly:
// the 50 wait for one check (none takes a place of its own) and at least
// 48 are answered 200. Before, an eighth of the unverified pool per
// address let 4 through and refused 46 with 503.
func TestFirstBurstSharesOneCheck(t *testing.T) {
	h := newHeldChecks(t, "fresh")
	const burst = 50
	// The RS answers the check only once every call of the burst waits for
	// it (or, on a server that refuses some, once the others are answered).
	h.goodGate = make(chan struct{})
	m := metrics.New()
	srv := newStack(t, h.config(HTTPConfig{Metrics: m}), testTools{})
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: dialFrom("127.0.31.5").DialContext, MaxIdleConnsPerHost: burst}}
	statuses := make(chan int, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			status, _ := echoFrom(c, srv.URL, "fresh")
			statuses <- status
		})
	}
	testkit.Eventually(testkit.Patience, func() bool {
		return sample(t, m, metrics.NameUnverified, nil) >= burst || len(statuses) > burst-2
	})
	close(h.goodGate)
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[http.StatusOK] < burst-2 {
		t.Fatalf("answers by status %v: want at least %d of %d answered 200", counts, burst-2, burst)
	}
	if n := h.checks.Load(); n != 1 {
		t.Fatalf("%d checks for one token, want 1", n)
	}
	if j := sample(t, m, metrics.NameCheckJoined, nil); j < burst-2 {
		t.Errorf("%s = %v, want the other calls counted as joining the check", metrics.NameCheckJoined, j)
	}
}

// TestStrangersFromMoreNetworksThanPlacesLeaveNewTokensServed: made-up
// bearers from 12 networks, three times the places checks run in (4), each
// taking 200 ms to reject, sent without pause. Five never-seen good tokens,
// each from a new address of a 13th network, are each answered 200 on
// their first call: their checks wait their network's turn instead of
// being refused while strangers hold the places. Before, each was refused
// 503 unverified_busy while the places were held.
func TestStrangersFromMoreNetworksThanPlacesLeaveNewTokensServed(t *testing.T) {
	tokens := newCheckedTokens(200*time.Millisecond, "new-0", "new-1", "new-2", "new-3", "new-4")
	srv := newStack(t, tokens.config(HTTPConfig{MaxUnverifiedRequests: 4, MaxConcurrentRequests: 64}), testTools{})
	var addrs []string
	for n := range 12 {
		addrs = append(addrs, fmt.Sprintf("127.0.%d.9", 110+n))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var sent atomic.Int64
	wg := floodMadeUpBearers(ctx, srv.URL+"/mcp", addrs, 2, nil, &sent)
	defer func() { cancel(); wg.Wait() }()
	testkit.Eventually(testkit.Patience, func() bool { return tokens.checks.Load() >= 12 })

	for i := range 5 {
		c := fromAddr(fmt.Sprintf("127.0.130.%d", 1+i))
		c.Timeout = time.Minute
		if status, body := echoFrom(c, srv.URL, fmt.Sprintf("new-%d", i)); status != http.StatusOK || !strings.Contains(body, "echo: hi") {
			t.Fatalf("never-seen token %d's first call: %d %.300s", i, status, body)
		}
	}
	t.Logf("%d made-up requests answered, %d checks", sent.Load(), tokens.checks.Load())
}

// TestFullNetworkQueueRefusedOthersServed: one network's checks are held by
// the RS. It runs its share of the places (2 of 8) and queues 4 more (its
// queue's bound): they wait, none is refused. One more from that network
// is refused at once (503 prefix_unverified_busy), while a new token from
// another network is answered 200. Once the RS answers, every held request gets its verdict
// (401). Before, the pool refused 4 of the 6 at once.
func TestFullNetworkQueueRefusedOthersServed(t *testing.T) {
	h := newHeldChecks(t, "other")
	m := metrics.New()
	srv := newStack(t, h.config(HTTPConfig{MaxUnverifiedRequests: 8, Metrics: m}), testTools{})
	statuses := make(chan int, 6)
	var wg sync.WaitGroup
	for i := range 6 {
		c := fromAddr(fmt.Sprintf("127.0.140.%d", 1+i%3))
		wg.Go(func() {
			status, _ := echoFrom(c, srv.URL, fmt.Sprintf("held-%d", i))
			statuses <- status
		})
	}
	if !testkit.Eventually(testkit.Patience, func() bool {
		return h.holding.Load() == 2 && sample(t, m, metrics.NameCheckQueue, nil) == 4
	}) {
		t.Fatalf("%d checks held, %v in line; want 2 and 4 (answered so far: %d)", h.holding.Load(), sample(t, m, metrics.NameCheckQueue, nil), len(statuses))
	}
	tests := []struct {
		name, from, token string
		want              int
		reason            string
	}{
		{"a new address of the full network", "127.0.140.200", "more-1", http.StatusServiceUnavailable, reasonPrefixUnverifiedBusy},
		{"another network", "127.0.141.1", "other", http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := echoFrom(fromAddr(tc.from), srv.URL, tc.token)
			if status != tc.want || !strings.Contains(body, tc.reason) {
				t.Fatalf("%d %.300s; want %d %s", status, body, tc.want, tc.reason)
			}
		})
	}
	if n := sample(t, m, metrics.NameCheckRefused, map[string]string{"reason": reasonPrefixUnverifiedBusy}); n != 1 {
		t.Errorf("%s{%s} = %v, want 1", metrics.NameCheckRefused, reasonPrefixUnverifiedBusy, n)
	}
	h.free()
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusUnauthorized {
			t.Errorf("a held request was answered %d, want 401 (its verdict)", s)
		}
	}
}

// TestReservedShareForPeople: strangers from 6 networks hold every place
// strangers may take (3 of 4) with checks the RS never answers, and queue
// more. An address that presented a good token before sends a never-seen
// one: it is checked in the place kept for people and answered 200, while
// a never-seen good token from a stranger's network still waits its turn
// (answered once the RS lets the strangers' checks end). Before, the pool
// refused the person's new token 503.
func TestReservedShareForPeople(t *testing.T) {
	h := newHeldChecks(t, "before", "after-refresh", "stranger-new")
	srv := newStack(t, h.config(HTTPConfig{MaxUnverifiedRequests: 4}), testTools{})
	person := fromAddr("127.0.150.7")
	if status, body := echoFrom(person, srv.URL, "before"); status != http.StatusOK {
		t.Fatalf("the person's first token: %d %.300s", status, body)
	}
	var wg sync.WaitGroup
	for n := range 6 {
		c := fromAddr(fmt.Sprintf("127.0.%d.3", 151+n))
		for i := range 2 {
			wg.Go(func() { _, _ = echoFrom(c, srv.URL, fmt.Sprintf("made-up-%d-%d", n, i)) })
		}
	}
	defer wg.Wait()
	defer h.free()
	if !testkit.Eventually(testkit.Patience, func() bool { return h.holding.Load() == 3 }) {
		t.Fatalf("%d strangers' checks held, want 3", h.holding.Load())
	}
	strangerDone := make(chan int, 1)
	go func() {
		status, _ := echoFrom(fromAddr("127.0.160.1"), srv.URL, "stranger-new")
		strangerDone <- status
	}()
	person.Timeout = time.Minute
	if status, body := echoFrom(person, srv.URL, "after-refresh"); status != http.StatusOK {
		t.Fatalf("the person's never-seen token: %d %.300s", status, body)
	}
	select {
	case s := <-strangerDone:
		t.Fatalf("the stranger's new token was answered %d while every strangers' place was held", s)
	default:
	}
	h.free()
	if s := <-strangerDone; s != http.StatusOK {
		t.Fatalf("the stranger's new token, once places freed: %d", s)
	}
}

// TestCheckLineTurns holds the line's rules without HTTP: a network that
// waits while none of its checks runs goes first, then turns go round the
// networks that wait, one check each; a queue runs at most its share;
// a full line pushes out the longest stranger queue's newest check for a
// network that waits for less, and refuses a newcomer whose queue would be
// the longest; people take the places strangers may not.
func TestCheckLineTurns(t *testing.T) {
	addr := func(s string) netip.Prefix { return clientKey(s + ":1") }
	a1, a2, b, c := addr("10.0.1.1"), addr("10.0.1.2"), addr("10.0.2.1"), addr("10.0.3.1")
	granted := func(ts ...*ticket) string {
		var out []string
		for i, t := range ts {
			select {
			case <-t.ready:
				if t.reason == "" {
					out = append(out, fmt.Sprint(i))
				} else {
					out = append(out, fmt.Sprintf("%d:%s", i, t.reason))
				}
			default:
			}
		}
		return strings.Join(out, " ")
	}
	join := func(l *checkLine, client netip.Prefix, person bool) *ticket {
		t.Helper()
		tk, reason := l.join(client, person)
		if reason != "" {
			t.Fatalf("join %v: refused %s", client, reason)
		}
		return tk
	}
	t.Run("sparse networks first, then round robin", func(t *testing.T) {
		l := newCheckLine(1, 0, 8, 8, 64, nil)
		first := join(l, a1, false)
		ts := []*ticket{join(l, a1, false), join(l, a2, false), join(l, a1, false), join(l, b, false), join(l, c, false)}
		var order []int
		running := first
		for range ts {
			l.done(running)
			for i, tk := range ts {
				if tk.running {
					order = append(order, i)
					running = tk
				}
			}
		}
		// b and c waited while none of theirs ran: they go first; then a's,
		// one at a time.
		if got := fmt.Sprint(order); got != "[3 4 0 1 2]" {
			t.Fatalf("order %s, want [3 4 0 1 2]", got)
		}
	})
	t.Run("a network served is sparse again only after its turn", func(t *testing.T) {
		l := newCheckLine(1, 0, 8, 8, 64, nil)
		x1 := join(l, a1, false) // runs
		z := join(l, c, false)   // waits, sparse
		l.done(x1)               // z runs; a keeps its place in the round
		x2 := join(l, a1, false) // a's next check: in a's place, not sparse
		y := join(l, b, false)   // b: sparse
		l.done(z)
		if got := granted(x2, y); got != "1" {
			t.Fatalf("granted %q, want b's check before a's second", got)
		}
		l.done(y)
		if got := granted(x2, y); got != "0 1" {
			t.Fatalf("granted %q, want a's second next", got)
		}
	})
	t.Run("round robin between busy networks", func(t *testing.T) {
		l := newCheckLine(2, 0, 8, 8, 64, nil) // a share of 1 each
		ra, rb := join(l, a1, false), join(l, b, false)
		ts := []*ticket{join(l, a1, false), join(l, a2, false), join(l, b, false), join(l, b, false)}
		l.done(ra)
		l.done(rb)
		// a's next, b's next; then one of each again as they end.
		if got := granted(ts...); got != "0 2" {
			t.Fatalf("granted %q, want \"0 2\"", got)
		}
		l.done(ts[0])
		if got := granted(ts...); got != "0 1 2" {
			t.Fatalf("granted %q, want \"0 1 2\"", got)
		}
	})
	t.Run("a queue runs its share", func(t *testing.T) {
		l := newCheckLine(4, 0, 8, 8, 64, nil) // a share of 1
		ts := []*ticket{join(l, a1, false), join(l, a1, false), join(l, b, false)}
		if got := granted(ts...); got != "0 2" {
			t.Fatalf("granted %q, want \"0 2\"", got)
		}
	})
	t.Run("full line pushes out the longest", func(t *testing.T) {
		l := newCheckLine(1, 0, 8, 8, 4, nil)
		join(l, c, false) // runs
		ts := []*ticket{join(l, a1, false), join(l, a2, false), join(l, a1, false), join(l, b, false)}
		tb := join(l, b, false) // b would hold 2, a holds 3: a's newest goes
		if got := granted(append(ts, tb)...); got != "2:unverified_busy" {
			t.Fatalf("after b's second: %q, want a's newest pushed out", got)
		}
		if _, reason := l.join(b, false); reason != reasonUnverifiedBusy {
			t.Fatalf("b's third (as long as a): %q, want %s", reason, reasonUnverifiedBusy)
		}
	})
	t.Run("own queue full, own address's share", func(t *testing.T) {
		l := newCheckLine(1, 0, 3, 2, 64, nil)
		join(l, c, false)
		join(l, a1, false)
		join(l, a1, false)
		if _, reason := l.join(a1, false); reason != reasonClientUnverifiedBusy {
			t.Fatalf("a1's third: %q, want %s", reason, reasonClientUnverifiedBusy)
		}
		join(l, a2, false)
		if _, reason := l.join(a2, false); reason != reasonPrefixUnverifiedBusy {
			t.Fatalf("a's fourth: %q, want %s", reason, reasonPrefixUnverifiedBusy)
		}
	})
	t.Run("people take the reserved place", func(t *testing.T) {
		l := newCheckLine(2, 1, 8, 8, 64, nil)
		s1, s2 := join(l, a1, false), join(l, b, false)
		p := join(l, c, true)
		if got := granted(s1, s2, p); got != "0 2" {
			t.Fatalf("granted %q, want the first stranger and the person", got)
		}
	})
	t.Run("IPv6 networks are /48s", func(t *testing.T) {
		for _, tc := range []struct{ addr, want string }{
			{"[2001:db8:1:2::5]", "2001:db8:1::/48"},
			{"[2001:db8:1:ff00::5]", "2001:db8:1::/48"},
			{"192.0.2.77", "192.0.2.0/24"},
		} {
			if got := checkNetwork(addr(tc.addr)).String(); got != tc.want {
				t.Errorf("%s: %s, want %s", tc.addr, got, tc.want)
			}
		}
	})
}
