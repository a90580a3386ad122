package pdpp_test

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// schemaFaultRS serves the demo RS, except that GET /v1/schema answers as
// the current fault says; it can also hold schema reads until released.
type schemaFaultRS struct {
	demo  http.Handler
	fault atomic.Value // func(w, r) bool: true when it answered
}

func newSchemaFaultRS(t *testing.T) *schemaFaultRS {
	t.Helper()
	demo, err := demors.New(demors.Config{Tokens: demoTokens})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = demo.Close() })
	s := &schemaFaultRS{demo: demo.Handler()}
	s.set(nil)
	return s
}

func (s *schemaFaultRS) set(f func(w http.ResponseWriter, r *http.Request) bool) {
	if f == nil {
		f = func(http.ResponseWriter, *http.Request) bool { return false }
	}
	s.fault.Store(f)
}

func (s *schemaFaultRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/schema" && s.fault.Load().(func(http.ResponseWriter, *http.Request) bool)(w, r) {
		return
	}
	s.demo.ServeHTTP(w, r)
}

func answer(status int, body string, when func(r *http.Request) bool) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !when(r) {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
		return true
	}
}

func compactView(r *http.Request) bool { return r.URL.Query().Get("view") == "compact" }
func anySchema(*http.Request) bool     { return true }

const (
	viewRefused = `{"error":{"type":"invalid_request_error","code":"invalid_request","message":"unknown parameter view","param":"view"}}`
	rsDown      = `{"error":{"type":"api_error","code":"unavailable","message":"try later"}}`
)

// TestTokenCheckFailsClosed: whenever the bearer's kind cannot be read from
// the RS, an owner token's fetch is token_check_unavailable and the records
// endpoint is never reached; when the compact view is refused the plain
// schema document decides.
func TestTokenCheckFailsClosed(t *testing.T) {
	tr5 := connMain + "/transcripts:tr-5"
	cases := []struct {
		name     string
		fault    func(http.ResponseWriter, *http.Request) bool
		wantCode string
		plain    bool // the plain /v1/schema must have been read
	}{
		{"schema 503", answer(http.StatusServiceUnavailable, rsDown, anySchema), tokencheck.CodeUnavailable, false},
		{"compact refused, plain 503", func(w http.ResponseWriter, r *http.Request) bool {
			if compactView(r) {
				return answer(http.StatusBadRequest, viewRefused, anySchema)(w, r)
			}
			return answer(http.StatusBadGateway, rsDown, anySchema)(w, r)
		}, tokencheck.CodeUnavailable, true},
		{"compact refused, plain answers", answer(http.StatusBadRequest, viewRefused, compactView), tokencheck.CodeOwnerRefused, true},
		{"schema times out", func(w http.ResponseWriter, r *http.Request) bool {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return true
		}, tokencheck.CodeUnavailable, false},
		{"schema body null", answer(http.StatusOK, `null`, anySchema), tokencheck.CodeUnavailable, false},
		{"schema without bearer", answer(http.StatusOK, `{"object":"schema","connectors":[]}`, anySchema), tokencheck.CodeUnavailable, false},
		{"connection cut", func(w http.ResponseWriter, r *http.Request) bool {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.(net.Conn).Close()
			}
			return true
		}, tokencheck.CodeUnavailable, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Only the timeout case needs a short check timeout; the others
			// get room to read both schema documents on a loaded machine.
			timeout := 10 * time.Second
			if tc.name == "schema times out" {
				timeout = 300 * time.Millisecond
			}
			rs := newSchemaFaultRS(t)
			h := newHarnessWith(t, rs, tokOwner, func(c *pdpp.Config) {
				c.Checker = tokencheck.New(c.RS, c.Token, tokencheck.Options{Timeout: timeout})
			})
			rs.set(tc.fault)
			for round := range 2 { // an unavailable verdict is not remembered
				h.log.reset()
				r := h.call(t, "fetch", map[string]any{"id": tr5})
				if !r.Res.IsError || r.errorCode() != tc.wantCode {
					t.Fatalf("round %d: want %s, got:\n%s", round, tc.wantCode, r.Text)
				}
				if recs := h.log.matching(isRecordsPath); len(recs) > 0 {
					t.Fatalf("round %d: the owner token reached the records endpoint: %v", round, recs)
				}
				if tc.wantCode == tokencheck.CodeUnavailable && r.errorObject()["retryable"] != true {
					t.Errorf("token_check_unavailable is not marked retryable: %s", r.RawStruct)
				}
				sawPlain := false
				for _, line := range h.log.requests() {
					sawPlain = sawPlain || line == "GET /v1/schema"
				}
				if sawPlain != tc.plain {
					t.Errorf("round %d: plain schema read = %v, want %v (%v)", round, sawPlain, tc.plain, h.log.requests())
				}
				if tc.wantCode == tokencheck.CodeOwnerRefused {
					break // an owner verdict is cached: the second round reads nothing
				}
			}
			// Once the RS answers, the same token is refused as an owner.
			// A loaded run can still time out the short check of the timeout
			// case: an unavailable verdict is retryable, so retry while it is
			// (bounded by testkit.Patience).
			rs.set(nil)
			var r callResult
			testkit.Eventually(testkit.Patience, func() bool {
				r = h.call(t, "fetch", map[string]any{"id": tr5})
				return r.errorCode() != tokencheck.CodeUnavailable
			})
			if r.errorCode() != tokencheck.CodeOwnerRefused {
				t.Fatalf("after recovery: want owner_token_refused, got:\n%s", r.Text)
			}
		})
	}
}

// TestTokenCheckClientFallbackAndEviction: a client token is admitted
// through the plain schema when the compact view is refused; its verdict is
// cached (no second schema read) until the RS answers 401 to a data call,
// which evicts it; concurrent first calls share one schema read.
func TestTokenCheckClientFallbackAndEviction(t *testing.T) {
	rs := newSchemaFaultRS(t)
	h := newHarnessWith(t, rs, tokClient, nil)
	rs.set(answer(http.StatusBadRequest, viewRefused, compactView))
	tr5 := connMain + "/transcripts:tr-5"
	schemaReads := func() int { return len(h.log.matching(func(p string) bool { return p == "/v1/schema" })) }

	h.mustOK(t, "fetch", map[string]any{"id": tr5})
	if n := schemaReads(); n != 2 {
		t.Fatalf("first call: %d schema reads, want 2 (compact refused, then plain): %v", n, h.log.requests())
	}
	h.log.reset()
	h.mustOK(t, "fetch", map[string]any{"id": tr5})
	if n := schemaReads(); n != 0 {
		t.Fatalf("cached verdict: %d schema reads", n)
	}

	stop := h.log.injectFault(func(r *http.Request) bool { return isRecordsPath(r.URL.Path) }, http.StatusUnauthorized,
		`{"error":{"type":"authentication_error","code":"context.active_false","message":"token is not active"}}`)
	if r := h.call(t, "fetch", map[string]any{"id": tr5}); !r.Res.IsError || r.errorCode() != "context.active_false" {
		t.Fatalf("RS 401 mid-call: %s", r.Text)
	}
	stop()
	h.log.reset()
	h.mustOK(t, "fetch", map[string]any{"id": tr5})
	if n := schemaReads(); n != 2 {
		t.Fatalf("after a 401 the verdict must be read again: %d schema reads (%v)", n, h.log.requests())
	}

	t.Run("concurrent first calls share one read", func(t *testing.T) {
		rs := newSchemaFaultRS(t)
		release := make(chan struct{})
		rs.set(func(http.ResponseWriter, *http.Request) bool { <-release; return false })
		h := newHarnessWith(t, rs, tokNarrow, nil)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if r := h.call(t, "schema", map[string]any{}); r.Res.IsError {
					t.Errorf("schema: %s", r.Text)
				}
			})
		}
		time.AfterFunc(200*time.Millisecond, func() { close(release) })
		wg.Wait()
		checks := 0
		for _, line := range h.log.requests() {
			if strings.HasPrefix(line, "GET /v1/schema") {
				checks++
			}
		}
		// One check read, then each schema call reads the document itself.
		if checks != 1+8 {
			t.Fatalf("%d schema reads for 8 concurrent calls, want 1 check + 8 tool reads: %v", checks, h.log.requests())
		}
	})
}

// TestRejectedTokensAreRemembered: a token the RS answers 401 is refused
// again, with the same RS envelope, without another RS read for
// tokencheck.FirstRejectedTTL (RejectedTTL once the RS repeats it), so a
// client retrying a revoked token does not cost the RS one read per call; a
// good token is unaffected.
func TestRejectedTokensAreRemembered(t *testing.T) {
	h := newDemoHarness(t, tokBad+"_remembered")
	tr5 := connMain + "/transcripts:tr-5"
	for i := range 5 {
		r := h.call(t, "fetch", map[string]any{"id": tr5})
		if !r.Res.IsError || r.errorCode() != "context.active_false" {
			t.Fatalf("call %d: want the RS's context.active_false, got:\n%s", i, r.Text)
		}
	}
	if reqs := h.log.requests(); len(reqs) != 1 || !strings.HasPrefix(reqs[0], "GET /v1/schema") {
		t.Fatalf("five calls with a rejected token made these RS requests: %v", reqs)
	}
	h.token.Store(tokClient)
	h.mustOK(t, "fetch", map[string]any{"id": tr5})
}
