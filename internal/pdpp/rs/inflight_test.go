package rs

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
)

// bodyServer answers every request with n bytes of a JSON string; with
// declare, the length is sent in Content-Length, otherwise the body is
// chunked. With endless, it streams until the client goes away.
func bodyServer(t *testing.T, n int, declare, endless bool) *httptest.Server {
	t.Helper()
	body := []byte(`"` + string(bytes.Repeat([]byte("<"), max(0, n-2))) + `"`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if declare {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		if !endless {
			_, _ = w.Write(body)
			return
		}
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func errorCode(t *testing.T, err error) string {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
	return e.Code()
}

func TestBodiesAreReadUnderTheInFlightBound(t *testing.T) {
	cases := []struct {
		name    string
		size    int
		declare bool
		limit   int64 // limiter size
		wantErr string
	}{
		{"declared length within the bound", 200 << 10, true, 1 << 20, ""},
		{"chunked body grows within the bound", 300 << 10, false, 1 << 20, ""},
		{"declared body over the whole bound", 200 << 10, true, 100 << 10, CodeServerBusy},
		{"chunked body outgrows the whole bound", 300 << 10, false, 100 << 10, CodeServerBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := bodyServer(t, tc.size, tc.declare, false)
			lim := inflight.New(tc.limit)
			c, err := New(srv.URL, staticToken("t"), Options{InFlight: lim})
			if err != nil {
				t.Fatal(err)
			}
			acct := lim.Open()
			ctx := inflight.WithAccount(context.Background(), acct)
			resp, err := c.Get(ctx, "/v1/x", nil)
			if tc.wantErr != "" {
				if err == nil || errorCode(t, err) != tc.wantErr {
					t.Fatalf("got %v, want %s", err, tc.wantErr)
				}
				if acct.Held() != 0 {
					t.Errorf("a refused read still holds %d bytes", acct.Held())
				}
				acct.Close()
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Body) != tc.size || !json.Valid(resp.Body) {
				t.Fatalf("body of %d bytes, want %d", len(resp.Body), tc.size)
			}
			// The call's account keeps the body reserved: at least its
			// length, at most twice (a doubled buffer is at most half empty).
			if h := acct.Held(); h < int64(tc.size) || h > 2*int64(tc.size)+2 {
				t.Errorf("account holds %d bytes for a %d-byte body", h, tc.size)
			}
			acct.Close()
			if lim.Held() != 0 {
				t.Errorf("limiter holds %d bytes after the call closed", lim.Held())
			}
		})
	}
	t.Run("a read outside any call gives its bytes back when it ends", func(t *testing.T) {
		srv := bodyServer(t, 100<<10, false, false)
		lim := inflight.New(1 << 20)
		c, _ := New(srv.URL, staticToken("t"), Options{InFlight: lim})
		if _, err := c.Get(context.Background(), "/v1/x", nil); err != nil {
			t.Fatal(err)
		}
		if lim.Held() != 0 {
			t.Errorf("limiter holds %d bytes after a read without an account", lim.Held())
		}
	})
}

func TestReadWaitsForRoomWithinItsDeadline(t *testing.T) {
	cases := []struct {
		name    string
		freeIn  time.Duration // the other call gives its bytes back after this; 0: never
		wantErr string
	}{
		{"room frees up in time", 50 * time.Millisecond, ""},
		{"no room before the deadline", 0, CodeServerBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := bodyServer(t, 100<<10, true, false)
			lim := inflight.New(256 << 10)
			other := lim.Open()
			if err := other.Reserve(context.Background(), 200<<10); err != nil {
				t.Fatal(err)
			}
			if tc.freeIn > 0 {
				time.AfterFunc(tc.freeIn, other.Close)
			} else {
				defer other.Close()
			}
			c, _ := New(srv.URL, staticToken("t"), Options{InFlight: lim})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			acct := lim.Open()
			defer acct.Close()
			_, err := c.Get(inflight.WithAccount(ctx, acct), "/v1/x", nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || errorCode(t, err) != tc.wantErr {
				t.Fatalf("got %v, want %s", err, tc.wantErr)
			}
		})
	}
}

func TestBodyLimitOfTheCallStopsTheRead(t *testing.T) {
	cases := []struct {
		name     string
		refuse   bool
		declared bool // the body declares its length (3 MiB) instead of streaming without end
		wantCode string
	}{
		{"the call's own refusal", true, false, "full_too_large"},
		{"the default refusal", false, false, "rs_response_too_large"},
		{"a declared length over the limit is not read", true, true, "full_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := bodyServer(t, 0, false, true)
			if tc.declared {
				srv = bodyServer(t, 3<<20, true, false)
			}
			lim := inflight.New(8 << 20)
			var peak int64
			lim.OnIdle(func(p int64) { peak = max(peak, p) })
			c, _ := New(srv.URL, staticToken("t"), Options{InFlight: lim, Timeout: 20 * time.Second})
			var refuse func(int64) *Error
			var saw int64
			if tc.refuse {
				refuse = func(limit int64) *Error { saw = limit; return AdapterError("full_too_large", "over", "detail") }
			}
			ctx := WithBodyLimit(context.Background(), 1<<20, refuse)
			start := time.Now()
			_, err := c.Get(ctx, "/v1/x", nil)
			if err == nil || errorCode(t, err) != tc.wantCode {
				t.Fatalf("got %v, want %s", err, tc.wantCode)
			}
			if tc.refuse && saw != 1<<20 {
				t.Errorf("refusal told of limit %d, want %d", saw, 1<<20)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("an endless body took %v to refuse", d)
			}
			if lim.Held() != 0 {
				t.Errorf("limiter holds %d bytes after a refused read", lim.Held())
			}
			if tc.declared && peak != 0 {
				t.Errorf("a body declared over the limit was read: %d bytes reserved", peak)
			}
		})
	}
}

// TestSlowBodyReservesWhatArrived: a body that declares 8 MiB and stalls
// after 10 KB holds a reservation of what arrived (the first 64 KiB step),
// not what it declares, so slow bodies cannot take the budget from others.
func TestSlowBodyReservesWhatArrived(t *testing.T) {
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(8<<20))
		_, _ = w.Write(bytes.Repeat([]byte(" "), 10<<10))
		w.(http.Flusher).Flush()
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stall)
	lim := inflight.New(48 << 20)
	c, _ := New(srv.URL, staticToken("t"), Options{InFlight: lim, MaxBodySize: 9 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "/v1/x", nil); done <- err }()
	deadline := time.Now().Add(5 * time.Second)
	for lim.Held() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the 10 KB are in; the rest never comes
	if held := lim.Held(); held == 0 || held > firstReadBytes+1 {
		t.Fatalf("a stalled body declaring 8 MiB holds %d bytes of the budget, want at most %d", held, firstReadBytes+1)
	}
	cancel()
	<-done
	if lim.Held() != 0 {
		t.Fatalf("%d bytes held after the read ended", lim.Held())
	}
}
