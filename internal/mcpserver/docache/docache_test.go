package docache_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/docache"
)

// upstream serves a document, or hangs until the test ends, and counts the
// requests it was sent.
type upstream struct {
	srv     *httptest.Server
	fetches atomic.Int64
	hang    atomic.Bool
	body    atomic.Value // string
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.body.Store("v1")
	stop := make(chan struct{})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.fetches.Add(1)
		if u.hang.Load() {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		_, _ = io.WriteString(w, u.body.Load().(string))
	}))
	t.Cleanup(func() { close(stop); u.srv.Close() })
	return u
}

func (u *upstream) fetch(ctx context.Context) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.srv.URL, nil)
	resp, err := u.srv.Client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return string(b), err
}

// getAll runs n concurrent Gets and returns their results and the time the
// last one took.
func getAll(c *docache.Cache[string], n int) ([]string, []error, time.Duration) {
	vals, errs := make([]string, n), make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { vals[i], errs[i] = c.Get(context.Background()) })
	}
	wg.Wait()
	return vals, errs, time.Since(start)
}

func TestHangingUpstream(t *testing.T) {
	const timeout = 400 * time.Millisecond
	tests := []struct {
		name      string
		warm      bool          // a document was fetched before the upstream hung
		want      string        // what every request gets ("" for an error)
		within    time.Duration // how long the 6 requests may take together
		wantFetch int64         // upstream fetches after warming
	}{
		{"cold: one fetch, every request fails when it ends", false, "", timeout + 300*time.Millisecond, 1},
		{"warm: the last document, without waiting out the fetch", true, "v1", docache.DefaultStaleWait + 200*time.Millisecond, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t)
			var now atomic.Int64
			now.Store(time.Now().UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()) }
			c := docache.New(docache.Config[string]{Fetch: u.fetch, TTL: time.Minute, Timeout: timeout,
				FailMemo: 5 * time.Second, Now: clock, Logger: slog.New(slog.DiscardHandler)})
			if tc.warm {
				if v, err := c.Get(context.Background()); v != "v1" || err != nil {
					t.Fatalf("warming: %q, %v", v, err)
				}
				now.Add(int64(time.Minute + time.Second))
				u.fetches.Store(0)
			}
			u.hang.Store(true)
			vals, errs, took := getAll(c, 6)
			for i := range vals {
				if vals[i] != tc.want || (tc.want == "") != (errs[i] != nil) {
					t.Fatalf("request %d: %q, %v; want %q", i, vals[i], errs[i], tc.want)
				}
				if errs[i] != nil && !errors.Is(errs[i], docache.ErrFetchFailed) {
					t.Fatalf("request %d: %v does not wrap ErrFetchFailed", i, errs[i])
				}
			}
			if took > tc.within {
				t.Fatalf("6 requests took %v, want within %v", took, tc.within)
			}
			// Let a fetch the requests did not wait for end, then check the
			// failure is remembered from its end: 6 more requests, no fetch.
			time.Sleep(timeout + 100*time.Millisecond)
			if n := u.fetches.Load(); n != tc.wantFetch {
				t.Fatalf("%d upstream fetches, want %d", n, tc.wantFetch)
			}
			vals, _, took = getAll(c, 6)
			if n := u.fetches.Load(); n != tc.wantFetch || took > 100*time.Millisecond || vals[0] != tc.want {
				t.Fatalf("within the memo: %d fetches, %v, %q", n, took, vals[0])
			}
			// The memo over and the upstream back: one fetch refreshes it.
			u.hang.Store(false)
			u.body.Store("v2")
			now.Add(int64(6 * time.Second))
			vals, errs, _ = getAll(c, 6)
			for i := range vals {
				// With a document at hand, a request that finds the
				// refresh in flight is answered with it at once.
				if errs[i] != nil || vals[i] != "v2" && !(tc.warm && vals[i] == "v1") {
					t.Fatalf("after recovery, request %d: %q, %v", i, vals[i], errs[i])
				}
			}
			if v, err := c.Get(context.Background()); v != "v2" || err != nil {
				t.Fatalf("once refreshed: %q, %v", v, err)
			}
			if n := u.fetches.Load(); n != tc.wantFetch+1 {
				t.Fatalf("%d upstream fetches after recovery, want %d", n, tc.wantFetch+1)
			}
		})
	}
}

// TestRequestGivesUp: a request whose context ends stops waiting, and the
// fetch it started still serves the next request.
func TestRequestGivesUp(t *testing.T) {
	u := newUpstream(t)
	gate := make(chan struct{})
	c := docache.New(docache.Config[string]{
		Fetch:  func(ctx context.Context) (string, error) { <-gate; return u.fetch(ctx) },
		Logger: slog.New(slog.DiscardHandler),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the request's deadline", err)
	}
	close(gate)
	if v, err := c.Get(context.Background()); v != "v1" || err != nil {
		t.Fatalf("got %q, %v", v, err)
	}
	if n := u.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1 (the second request joined the first's)", n)
	}
}

// TestFailMemoWithinTTL: a failure is never remembered longer than a
// success would be.
func TestFailMemoWithinTTL(t *testing.T) {
	var calls atomic.Int64
	c := docache.New(docache.Config[string]{
		Fetch: func(context.Context) (string, error) {
			if calls.Add(1) == 1 {
				return "", errors.New("down")
			}
			return "up", nil
		},
		TTL: time.Millisecond, FailMemo: time.Hour, Logger: slog.New(slog.DiscardHandler),
	})
	if _, err := c.Get(context.Background()); err == nil {
		t.Fatal("first fetch fails")
	}
	time.Sleep(2 * time.Millisecond)
	if v, err := c.Get(context.Background()); v != "up" || err != nil {
		t.Fatalf("got %q, %v; want a new fetch once the TTL has passed", v, err)
	}
}
