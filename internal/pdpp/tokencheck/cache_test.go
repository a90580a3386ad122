package tokencheck

import (
	"fmt"
	"testing"
	"time"
)

// TestCacheBounds: the cache never holds more than its bound, drops expired
// entries, and forgets an evicted token.
func TestCacheBounds(t *testing.T) {
	cases := []struct {
		name    string
		ttl     time.Duration
		max     int
		puts    int
		wantLen int
	}{
		{"full cache evicts one per insertion", time.Minute, 4, 10, 4},
		{"expired entries are not served", time.Nanosecond, 4, 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(tc.max, time.Now)
			for i := range tc.puts {
				c.put(Key(fmt.Sprint("tok", i)), Result{Verdict: Client}, tc.ttl)
			}
			time.Sleep(time.Millisecond)
			served := 0
			for i := range tc.puts {
				if _, ok := c.get(Key(fmt.Sprint("tok", i))); ok {
					served++
				}
			}
			if served != tc.wantLen || len(c.items) > tc.max {
				t.Fatalf("served %d (len %d), want %d within %d", served, len(c.items), tc.wantLen, tc.max)
			}
			last := Key(fmt.Sprint("tok", tc.puts-1))
			c.remove(last)
			if _, ok := c.get(last); ok {
				t.Fatal("removed entry still served")
			}
		})
	}
}

// TestRejectedVerdictsLiveApart: rejected verdicts have their own bounded
// cache, so a flood of made-up tokens cannot evict a client's verdict.
func TestRejectedVerdictsLiveApart(t *testing.T) {
	c := New(nil, nil, Options{})
	good := Key("good")
	c.cache.put(good, Result{Verdict: Client}, DefaultTTL)
	for i := range 3 * MaxRejectedEntries {
		c.rejected.put(Key(fmt.Sprint("made-up-", i)), Result{Verdict: Rejected}, RejectedTTL)
	}
	if len(c.rejected.items) > MaxRejectedEntries {
		t.Fatalf("%d rejected verdicts kept, bound %d", len(c.rejected.items), MaxRejectedEntries)
	}
	if r, ok := c.cache.get(good); !ok || r.Verdict != Client {
		t.Fatal("the client verdict was evicted by rejected ones")
	}
}
