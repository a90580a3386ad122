package transport

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestProviderMetadataFailureRemembered: while the provider's own metadata
// fails or hangs, the resource metadata is 503 for every request, but the
// provider is asked once per memo period and the failure logged once; a
// hanging provider holds concurrent requests for one fetch, not one each.
func TestProviderMetadataFailureRemembered(t *testing.T) {
	tests := []struct {
		name     string
		hang     bool
		requests int
		within   time.Duration
	}{
		{"answers 500", false, 20, 2 * time.Second},
		{"hangs", true, 6, DefaultReadyTimeout + 2*time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fetches atomic.Int32
			stop := make(chan struct{})
			provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fetches.Add(1)
				if tc.hang {
					select {
					case <-r.Context().Done():
					case <-stop:
					}
					return
				}
				http.Error(w, "down", http.StatusInternalServerError)
			}))
			t.Cleanup(provider.Close)
			t.Cleanup(func() { close(stop) })
			var logs syncBuffer
			fn, err := ProviderAuthorizationServers(provider.Client(), provider.URL, time.Hour, slogTo(&logs))
			if err != nil {
				t.Fatal(err)
			}
			srv := newStack(t, HTTPConfig{RequireBearer: true, AuthorizationServersFunc: fn, Logger: slogTo(&logs)}, testTools{})
			start := time.Now()
			var wg sync.WaitGroup
			statuses := make([]int, tc.requests)
			for i := range statuses {
				wg.Go(func() {
					resp, _ := post(t, srv.URL+"/.well-known/oauth-protected-resource/mcp", http.MethodGet, "", nil)
					statuses[i] = resp.StatusCode
				})
			}
			wg.Wait()
			if d := time.Since(start); d > tc.within {
				t.Fatalf("%d requests took %v, want within %v", tc.requests, d, tc.within)
			}
			for i, st := range statuses {
				if st != http.StatusServiceUnavailable {
					t.Fatalf("request %d: %d, want 503", i, st)
				}
			}
			// And sequentially after the failure ended: no fetch, no log line.
			for range 5 {
				if resp, _ := post(t, srv.URL+"/.well-known/oauth-protected-resource", http.MethodGet, "", nil); resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("after the failure: %d", resp.StatusCode)
				}
			}
			if n := fetches.Load(); n != 1 {
				t.Errorf("provider asked %d times, want 1", n)
			}
			if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
