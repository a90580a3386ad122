package rs

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

func staticToken(tok string) TokenSource {
	return func(context.Context) (string, error) { return tok, nil }
}

func TestDoOutcomes(t *testing.T) {
	big := strings.Repeat("x", 2048)
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		wantCode string // "" means success
		wantRS   bool   // envelope kept verbatim from the RS
	}{
		{"ok", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok-1" {
				w.WriteHeader(401)
				return
			}
			w.Write([]byte(`{"object":"list","data":[]}`))
		}, "", false},
		{"rs envelope kept", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(409)
			w.Write([]byte(`{"error":{"type":"api_error","code":"ambiguous_connection","message":"m","available_connections":[{"connection_id":"cin_a"}]}}`))
		}, "ambiguous_connection", true},
		{"5xx html", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			w.Write([]byte(`<html>bad gateway</html>`))
		}, "rs_http_502", false},
		{"401 without envelope", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
		}, "invalid_token", false},
		{"oversized body", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(big))
		}, "rs_response_too_large", false},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(time.Minute):
			case <-r.Context().Done():
			}
		}, "rs_timeout", false},
		{"dropped connection", func(w http.ResponseWriter, r *http.Request) {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
		}, "rs_unreachable", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			// Only the slow case needs a short timeout; the others get room
			// to answer the way they are meant to on a loaded machine.
			timeout := 10 * time.Second
			if tc.wantCode == "rs_timeout" {
				timeout = 300 * time.Millisecond
			}
			c, err := New(srv.URL, staticToken("tok-1"), Options{Timeout: timeout, MaxBodySize: 1024})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Get(context.Background(), "/v1/streams", nil)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if resp.Status != 200 || !strings.Contains(string(resp.Body), `"list"`) {
					t.Fatalf("bad response %d %s", resp.Status, resp.Body)
				}
				return
			}
			rerr, ok := err.(*Error)
			if !ok {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if rerr.Code() != tc.wantCode {
				t.Fatalf("code %q, want %q (%s)", rerr.Code(), tc.wantCode, rerr.Envelope)
			}
			var env map[string]map[string]any
			if err := json.Unmarshal(rerr.Envelope, &env); err != nil || env["error"] == nil {
				t.Fatalf("envelope is not {error:{...}}: %s", rerr.Envelope)
			}
			if isAdapter := env["error"]["type"] == "adapter_error"; isAdapter == tc.wantRS {
				t.Fatalf("envelope origin wrong: %s", rerr.Envelope)
			}
		})
	}
}

func TestProviderURL(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"http://127.0.0.1:7663", "http://127.0.0.1:7663/", true},
		{"https://rs.example/base", "https://rs.example/base/", true},
		{"ftp://x", "", false},
		{"127.0.0.1:7663", "", false},
		{"http://u:p@host/", "", false},
		{"http://host/?q=1", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			u, err := ParseProviderURL(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err=%v", err)
			}
			if tc.ok && u.String() != tc.want {
				t.Fatalf("got %s want %s", u, tc.want)
			}
		})
	}
}

func TestBasePathKept(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, _ := New(srv.URL+"/pdpp", staticToken("t"), Options{})
	if _, err := c.Get(context.Background(), "/v1/schema", nil); err != nil {
		t.Fatal(err)
	}
	if got != "/pdpp/v1/schema" {
		t.Fatalf("path %q", got)
	}
}

func TestNoCrossOriginRedirect(t *testing.T) {
	var leaked bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("Authorization") != ""
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, staticToken("secret"), Options{})
	_, err := c.Get(context.Background(), "/v1/schema", nil)
	if err == nil {
		t.Fatal("redirect to another origin must not succeed")
	}
	if leaked {
		t.Fatal("token sent to another origin")
	}
}

// TestConnectionCapPerRSHost: the default transport opens at most
// MaxConnsPerRSHost connections to the RS; with all of them busy, one more
// call waits for a connection within its own deadline and ends as
// rs_timeout without the RS seeing it.
func TestConnectionCapPerRSHost(t *testing.T) {
	release := make(chan struct{})
	var arrived, opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo()

	c, err := New(srv.URL, staticToken("tok-1"), Options{Timeout: testkit.Patience})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := c.http.Transport.(*http.Transport)
	if !ok || tr.MaxConnsPerHost != MaxConnsPerRSHost || tr.MaxIdleConnsPerHost != MaxIdleConnsPerRSHost {
		t.Fatalf("RS transport %T does not carry the connection bounds", c.http.Transport)
	}

	held := make(chan error, MaxConnsPerRSHost)
	for range MaxConnsPerRSHost {
		go func() {
			_, err := c.Get(context.Background(), "/v1/streams", nil)
			held <- err
		}()
	}
	if !testkit.Eventually(testkit.Patience, func() bool { return arrived.Load() == MaxConnsPerRSHost }) {
		t.Fatalf("%d of %d calls reached the RS", arrived.Load(), MaxConnsPerRSHost)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Get(ctx, "/v1/streams", nil)
	if rerr, ok := err.(*Error); !ok || rerr.Code() != "rs_timeout" {
		t.Fatalf("call over the cap: %v, want rs_timeout", err)
	}
	if a, o := arrived.Load(), opened.Load(); a != MaxConnsPerRSHost || o != MaxConnsPerRSHost {
		t.Fatalf("RS saw %d requests on %d connections, want %d on %d", a, o, MaxConnsPerRSHost, MaxConnsPerRSHost)
	}
	letGo()
	for range MaxConnsPerRSHost {
		if err := <-held; err != nil {
			t.Fatalf("held call: %v", err)
		}
	}
}

// TestErrorBodyIsBounded: an RS error answer is read up to
// MaxErrorBodySize whatever the data body bound. A longer one keeps the
// leading members of its error object that its first bytes hold whole (at
// most maxCutMembers, the RS's code among them) and says it was cut; one
// whose first bytes hold no member is an adapter error naming the status.
func TestErrorBodyIsBounded(t *testing.T) {
	var many strings.Builder
	for i := range 400_000 {
		fmt.Fprintf(&many, `,"m%06d":%d`, i, i)
	}
	tests := []struct {
		name      string
		body      string
		wantCode  string
		wantCut   bool
		wantWhole bool // the envelope is the RS's own bytes
	}{
		{"small envelope", `{"error":{"type":"invalid_request_error","code":"bad","message":"m"}}`, "bad", false, true},
		{"400,000 members", `{"error":{"type":"invalid_request_error","code":"bad","message":"m"` + many.String() + `}}`, "bad", true, false},
		{"members before the envelope", `{"pad":` + strconvQuote(strings.Repeat("p", 5000)) + `,"error":{"code":"bad"` + many.String() + `}}`, "bad", true, false},
		{"no code in the first bytes", `{"error":{"m":0` + many.String() + `,"code":"bad"}}`, "rs_http_400", false, false},
		{"one huge member first", `{"error":{"debug":` + strconvQuote(strings.Repeat("d", 2<<20)) + `,"code":"bad"}}`, "rs_http_400", false, false},
		{"not JSON", strings.Repeat("<html>", 400_000), "rs_http_400", false, false},
		{"just under the bound", `{"error":{"code":"bad","debug":` + strconvQuote(strings.Repeat("d", MaxErrorBodySize-64)) + `}}`, "bad", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := New(srv.URL, staticToken("tok-1"), Options{Timeout: 10 * time.Second, MaxBodySize: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(context.Background(), "/v1/streams", nil)
			rerr, ok := err.(*Error)
			if !ok {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if rerr.Code() != tc.wantCode || rerr.Status != http.StatusBadRequest {
				t.Fatalf("code %q status %d, want %q 400: %.300s", rerr.Code(), rerr.Status, tc.wantCode, rerr.Envelope)
			}
			if whole := string(rerr.Envelope) == tc.body; whole != tc.wantWhole {
				t.Fatalf("envelope kept whole: %v, want %v", whole, tc.wantWhole)
			}
			if len(rerr.Envelope) > MaxErrorBodySize {
				t.Fatalf("envelope is %d bytes, bound %d", len(rerr.Envelope), MaxErrorBodySize)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(rerr.Object(), &obj); err != nil {
				t.Fatalf("error object: %v", err)
			}
			if cut := string(obj["truncated"]) == "true"; cut != tc.wantCut {
				t.Fatalf("truncated %v, want %v: %.300s", cut, tc.wantCut, rerr.Envelope)
			}
			if tc.wantCut {
				if len(obj) > maxCutMembers+2 || string(obj["error_body_cut_at"]) != fmt.Sprint(MaxErrorBodySize) {
					t.Fatalf("cut object keeps %d members, cut at %s", len(obj), obj["error_body_cut_at"])
				}
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
