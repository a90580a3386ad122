package tokencheck

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// TestRejectionLifetimeFollowsTheRS: one rejection that does not say the
// grant ended keeps a token out FirstRejectedTTL; the RS repeating it (on the
// next check, or on a call before) keeps it out RejectedTTL; a grant_* code
// does at once; a client verdict in between starts over.
func TestRejectionLifetimeFollowsTheRS(t *testing.T) {
	tests := []struct {
		name  string
		setup func(c *Checker, srs *schemaRS, clk *fakeClock, ctx context.Context)
		ans   answer
		want  time.Duration
	}{
		{"one spurious 401 on a cold cache", nil, answer{401, inactive}, FirstRejectedTTL},
		{"the RS repeats it", func(c *Checker, srs *schemaRS, clk *fakeClock, ctx context.Context) {
			srs.set(answer{401, inactive})
			c.Check(ctx)
			clk.advance(FirstRejectedTTL + time.Second)
		}, answer{401, inactive}, RejectedTTL},
		{"a call was refused for the token before", func(c *Checker, srs *schemaRS, clk *fakeClock, ctx context.Context) {
			c.Check(ctx)
			c.Observe(ctx, &rs.Error{Status: 401, Envelope: []byte(inactive)})
		}, answer{401, inactive}, RejectedTTL},
		{"grant revoked", nil, answer{403, revoked}, RejectedTTL},
		{"served in between", func(c *Checker, srs *schemaRS, clk *fakeClock, ctx context.Context) {
			srs.set(answer{401, inactive})
			c.Check(ctx)
			clk.advance(FirstRejectedTTL + time.Second)
			srs.set(answer{200, clientSchema})
			if r := c.Check(ctx); r.Verdict != Client {
				t.Fatalf("verdict %v", r.Verdict)
			}
			c.Forget(ctx)
		}, answer{401, inactive}, FirstRejectedTTL},
		{"strike forgotten after StrikeMemory", func(c *Checker, srs *schemaRS, clk *fakeClock, ctx context.Context) {
			srs.set(answer{401, inactive})
			c.Check(ctx)
			clk.advance(StrikeMemory + time.Second)
		}, answer{401, inactive}, FirstRejectedTTL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, srs, clk := newTestChecker(t)
			ctx := withToken("tok")
			if tc.setup != nil {
				tc.setup(c, srs, clk, ctx)
			}
			srs.set(tc.ans)
			if r := c.Check(ctx); r.Verdict != Rejected {
				t.Fatalf("verdict %v", r.Verdict)
			}
			srs.set(answer{200, clientSchema})
			clk.advance(tc.want - time.Second)
			if r := c.Check(ctx); r.Verdict != Rejected {
				t.Fatalf("served within %v", tc.want)
			}
			clk.advance(2 * time.Second)
			if r := c.Check(ctx); r.Verdict != Client {
				t.Fatalf("still refused after %v: %v", tc.want, r.Verdict)
			}
		})
	}
}

// TestChecksLimitedPerClient: made-up bearers from one client cost the RS at
// most its bucket (DefaultCheckBurst, then DefaultChecksPerSecond); the
// excess is unavailable without an RS read; another client, an IPv6 host in
// another /64, and a request without an address are not held back, and
// cached verdicts cost nothing.
func TestChecksLimitedPerClient(t *testing.T) {
	c, srs, clk := newTestChecker(t)
	srs.set(answer{401, inactive})
	from := func(addr string, tok string) context.Context {
		return WithClientAddr(withToken(tok), addr)
	}
	flood := func(addr string, n int) (rejected, limited int) {
		for i := range n {
			switch c.Check(from(addr, fmt.Sprintf("random-%s-%d-%d", addr, clk.Now().UnixNano(), i))).Verdict {
			case Rejected:
				rejected++
			case Unavailable:
				limited++
			}
		}
		return
	}
	tests := []struct {
		name          string
		addr          string
		n             int
		advance       time.Duration
		wantRejected  int
		wantReadsUpTo int64
	}{
		{"a burst of made-up bearers", "203.0.113.7:4000", 100, 0, DefaultCheckBurst, DefaultCheckBurst},
		{"the same address, another port", "203.0.113.7:4001", 10, 0, 0, 0},
		{"one second later", "203.0.113.7:4002", 100, time.Second, DefaultChecksPerSecond, DefaultChecksPerSecond},
		{"another client", "198.51.100.9:5000", 30, 0, DefaultCheckBurst, DefaultCheckBurst},
		{"an IPv6 host", "[2001:db8:1:2::5]:6000", 30, 0, DefaultCheckBurst, DefaultCheckBurst},
		{"the same IPv6 /64", "[2001:db8:1:2::6]:6000", 30, 0, 0, 0},
		{"another IPv6 /64", "[2001:db8:1:3::5]:6000", 30, 0, DefaultCheckBurst, DefaultCheckBurst},
		{"no address (stdio)", "", 50, 0, 50, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk.advance(tc.advance)
			before := srs.reads.Load()
			rejected, limited := flood(tc.addr, tc.n)
			reads := srs.reads.Load() - before
			if rejected != tc.wantRejected || rejected+limited != tc.n || reads > tc.wantReadsUpTo {
				t.Fatalf("%d rejected, %d limited, %d RS reads; want %d rejected, at most %d reads", rejected, limited, reads, tc.wantRejected, tc.wantReadsUpTo)
			}
		})
	}
	t.Run("a cached verdict costs nothing", func(t *testing.T) {
		srs.set(answer{200, clientSchema})
		clk.advance(time.Hour)
		good := from("192.0.2.1:1", "good")
		if r := c.Check(good); r.Verdict != Client {
			t.Fatalf("verdict %v", r.Verdict)
		}
		flood("192.0.2.1:1", 200)
		for range 100 {
			if r := c.Check(good); r.Verdict != Client {
				t.Fatalf("a cached client verdict was held back: %v", r.Verdict)
			}
		}
	})
	t.Run("the table of clients is bounded", func(t *testing.T) {
		c := New(nil, ctxToken, Options{MaxClients: 8})
		c.now = clk.Now
		for i := range 50 {
			c.rates.allow(WithClientAddr(context.Background(), fmt.Sprintf("10.0.%d.1:1", i)), clk.Now())
		}
		if n := len(c.rates.m); n > 8 {
			t.Fatalf("%d clients kept, want at most 8", n)
		}
	})
}
