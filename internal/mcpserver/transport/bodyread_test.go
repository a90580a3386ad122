package transport

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestReadyzReportsBusySlots: with tokens checked (so only verified work
// holds slots), /readyz answers 200 while a request slot is free and while
// all are taken for less than busyNotReadyAfter, 503 "busy" once every slot
// has been taken for longer, and 200 again as soon as one frees.
func TestReadyzReportsBusySlots(t *testing.T) {
	started, release := make(chan struct{}, 2), make(chan struct{}, 2)
	accept := func(context.Context, string) AuthVerdict { return AuthVerdict{Outcome: AuthAccept} }
	srv := newStack(t, HTTPConfig{MaxConcurrentRequests: 2, Authenticate: accept}, testTools{slowStarted: started, slowRelease: release})
	t.Cleanup(func() { close(release) })
	ready := func() (int, string) {
		resp, body := post(t, srv.URL+"/readyz", http.MethodGet, "", nil)
		return resp.StatusCode, string(body)
	}
	calls := make(chan callOutcome, 2)
	// sent is no later than the moment the server finds every slot taken
	// (it takes them as these calls arrive), so busyNotReadyAfter counted
	// from it never ends after the server's own: a time read once the
	// calls have started would be later than the server's, by the time the
	// start takes to reach this goroutine.
	sent := time.Now()
	for i := range 2 {
		go func() {
			resp, b, err := rawPost(&http.Client{Transport: &http.Transport{}}, srv.URL+"/mcp", http.MethodPost, callBody(i+1, "slow", nil), hdr("Authorization", "Bearer verified"))
			if err != nil {
				calls <- callOutcome{err: err}
				return
			}
			calls <- callOutcome{status: resp.StatusCode, body: b}
		}()
	}
	<-started
	<-started
	if status, body := ready(); status != http.StatusOK {
		t.Fatalf("/readyz just after the slots filled: %d %s", status, body)
	}
	var status int
	var body string
	testkit.Eventually(testkit.Patience, func() bool {
		status, body = ready()
		return status == http.StatusServiceUnavailable
	})
	if status != http.StatusServiceUnavailable || body != `{"status":"busy"}` {
		t.Fatalf("/readyz with every slot taken: %d %s", status, body)
	}
	if waited := time.Since(sent); waited < busyNotReadyAfter {
		t.Fatalf("/readyz said busy after %v, before %v", waited, busyNotReadyAfter)
	}
	release <- struct{}{}
	if out := <-calls; out.err != nil || out.status != http.StatusOK {
		t.Fatalf("released call: %v %d %s", out.err, out.status, out.body)
	}
	if !testkit.Eventually(testkit.Patience, func() bool { s, _ := ready(); return s == http.StatusOK }) {
		t.Fatal("/readyz stayed busy after a slot freed")
	}
	release <- struct{}{}
	<-calls
}

// TestSlowBodiesWaitOutsideTheSlots: with one request slot, a peer that
// sends a request's headers and part of its body does not hold the slot: an
// echo call is served meanwhile; the slow body is answered 408 after the
// body read timeout and counted; a declared body over the bound is 413
// without a place.
func TestSlowBodiesWaitOutsideTheSlots(t *testing.T) {
	m := metrics.New()
	srv := newStack(t, HTTPConfig{MaxConcurrentRequests: 1, BodyReadTimeout: 500 * time.Millisecond, Metrics: m}, testTools{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"jsonrpc\"", addr)
	answer := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answer <- nil
			return
		}
		answer <- resp
	}()
	time.Sleep(100 * time.Millisecond) // the slow request is being read
	resp, body := post(t, srv.URL+"/mcp", http.MethodPost, callBody(1, "echo", map[string]any{"text": "hi"}), nil)
	if text, isErr := toolText(t, decodeReply(t, body).Result); resp.StatusCode != http.StatusOK || isErr || text != "echo: hi" {
		t.Fatalf("call beside a slow body: %d %s", resp.StatusCode, body)
	}
	slow := <-answer
	if slow == nil || slow.StatusCode != http.StatusRequestTimeout || !slow.Close {
		t.Fatalf("slow body answered %+v", slow)
	}
	if elapsed := time.Since(start); elapsed < 500*time.Millisecond || elapsed > 5*time.Second {
		t.Fatalf("slow body answered after %v, want the 500ms body read timeout", elapsed)
	}
	fams, _ := m.Registry().Gather()
	var timeouts float64
	for _, f := range fams {
		if f.GetName() == metrics.NameBodyTimeouts {
			timeouts = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if timeouts != 1 {
		t.Fatalf("%s = %v, want 1", metrics.NameBodyTimeouts, timeouts)
	}
}

func TestReaderPlaces(t *testing.T) {
	p := newReaderPlaces(3, 2, 3)
	a, b := clientKey("192.0.2.1:1000"), clientKey("192.0.2.2:1000")
	steps := []struct {
		take   netip.Prefix
		reason string
	}{
		{a, ""}, {a, ""}, {a, reasonClientReadersBusy}, {b, ""}, {b, reasonReadersBusy},
	}
	for i, s := range steps {
		if got := p.take(s.take); got != s.reason {
			t.Fatalf("step %d: take = %q, want %q", i, got, s.reason)
		}
	}
	p.release(a)
	if got := p.take(b); got != "" {
		t.Fatalf("after a release: %q", got)
	}
	p.release(a)
	p.release(b)
	p.release(b)
	if p.inUse != 0 || len(p.byKey) != 0 {
		t.Fatalf("places left: %d in use, %v", p.inUse, p.byKey)
	}
}

func TestClientKey(t *testing.T) {
	tests := map[string]string{
		"192.0.2.1:443":              "192.0.2.1/32",
		"[::ffff:192.0.2.1]:443":     "192.0.2.1/32",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::1]:80":    "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":          "fe80::/64",
		"not an address":             "invalid Prefix",
	}
	for in, want := range tests {
		if got := clientKey(in).String(); got != want {
			t.Errorf("clientKey(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCallOutlivesBodyReadTimeout: the body's read deadline ends with the
// body; a call that runs longer than BodyReadTimeout, and than the minimum
// rate's first second, is not cancelled by them.
func TestCallOutlivesBodyReadTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{200 * time.Millisecond, 0} {
		srv := newStack(t, HTTPConfig{BodyReadTimeout: timeout}, testTools{slowFor: 1500 * time.Millisecond})
		for _, size := range []int{0, 3000} {
			msg := callBody(1, "slow", nil)
			if size > 0 {
				msg = strings.Replace(paddedCall(1, size), `"echo","arguments":{"text":"hi"}`, `"slow","arguments":{}    `, 1)
			}
			resp, body := post(t, srv.URL+"/mcp", http.MethodPost, msg, nil)
			if text, isErr := toolText(t, decodeReply(t, body).Result); resp.StatusCode != http.StatusOK || isErr || text != "slow done" {
				t.Fatalf("body read timeout %v, body of %d bytes: a call longer than it: %d %s", timeout, len(msg), resp.StatusCode, body)
			}
		}
	}
}
