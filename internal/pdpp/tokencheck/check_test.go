package tokencheck

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// Sample-shaped RS answers (see the reference RS samples and error table).
const (
	clientSchema = `{"object":"schema","bearer":{"token_kind":"client"},"connectors":[]}`
	packageKind  = `{"object":"schema","bearer":{"token_kind":"mcp_package"},"connectors":[]}`
	inactive     = `{"error":{"type":"authentication_error","code":"context.active_false","message":"Token introspection failed closed"}}`
	expired      = `{"error":{"type":"permission_error","code":"grant_expired","message":"Grant has expired"}}`
	revoked      = `{"error":{"type":"permission_error","code":"grant_revoked","message":"Grant has been revoked"}}`
	outOfScope   = `{"error":{"type":"authentication_error","code":"context.stream_not_allowed","message":"Token introspection failed closed"}}`
	unlisted401  = `{"error":{"type":"authentication_error","code":"context.something_new","message":"refused"}}`
	unknownSrc   = `{"error":{"type":"not_found_error","code":"not_found","message":"Unknown source: unknown"}}`
	forbidden    = `{"error":{"type":"permission_error","code":"forbidden","message":"no"}}`
	asDown       = `{"error":{"type":"authentication_error","code":"context.authentication_failed","message":"Token introspection failed closed"}}`
	rsDown       = `{"error":{"type":"api_error","code":"unavailable","message":"down"}}`
)

// answer is one scripted RS answer to GET /v1/schema.
type answer struct {
	status int
	body   string
}

// schemaRS answers every schema read with the current answer and counts
// the reads.
type schemaRS struct {
	mu    sync.Mutex
	cur   answer
	reads atomic.Int64
}

func (s *schemaRS) set(a answer) {
	s.mu.Lock()
	s.cur = a
	s.mu.Unlock()
}

func (s *schemaRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.reads.Add(1)
	s.mu.Lock()
	a := s.cur
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
}

type tokenKey struct{}

func withToken(tok string) context.Context {
	return context.WithValue(context.Background(), tokenKey{}, tok)
}

func ctxToken(ctx context.Context) (string, error) {
	if t, ok := ctx.Value(tokenKey{}).(string); ok {
		return t, nil
	}
	return "", errors.New("no token")
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func newTestChecker(t *testing.T) (*Checker, *schemaRS, *fakeClock) {
	t.Helper()
	srs := &schemaRS{cur: answer{http.StatusOK, clientSchema}}
	srv := httptest.NewServer(srs)
	t.Cleanup(srv.Close)
	client, err := rs.New(srv.URL, ctxToken, rs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := New(client, ctxToken, Options{Timeout: 10 * time.Second})
	c.now = clk.Now
	return c, srs, clk
}

// TestVerdictsFromRSAnswers: what each RS answer to the schema read becomes,
// whether it is remembered, and for how long.
func TestVerdictsFromRSAnswers(t *testing.T) {
	cases := []struct {
		name     string
		ans      answer
		verdict  Verdict
		code     string        // the code of Result.Err
		kept     time.Duration // 0: not remembered
		inReason []string      // in the error's message
	}{
		{"dead token (first rejection)", answer{401, inactive}, Rejected, "context.active_false", FirstRejectedTTL, nil},
		{"expired grant", answer{403, expired}, Rejected, "grant_expired", RejectedTTL, nil},
		{"revoked grant", answer{403, revoked}, Rejected, "grant_revoked", RejectedTTL, nil},
		{"401 with a code no list names", answer{401, unlisted401}, Rejected, "context.something_new", 0, nil},
		{"bare 401 (first rejection)", answer{401, "nope"}, Rejected, rs.CodeInvalidToken, FirstRejectedTTL, nil},
		{"package token", answer{404, unknownSrc}, Unusable, CodeClientGrantRequired, 0, []string{"HTTP 404 not_found: Unknown source: unknown", "single-source client grant"}},
		{"schema read forbidden", answer{403, forbidden}, Unusable, CodeClientGrantRequired, 0, []string{"HTTP 403 forbidden", "pdpp connect"}},
		{"schema refused as out of scope", answer{401, outOfScope}, Unusable, CodeClientGrantRequired, 0, []string{"context.stream_not_allowed"}},
		{"a token kind this server does not read with", answer{200, packageKind}, Unusable, CodeClientGrantRequired, 0, []string{"mcp_package"}},
		{"RS down", answer{503, rsDown}, Unavailable, CodeUnavailable, 0, []string{"retry"}},
		{"RS cannot reach its authorization server", answer{401, asDown}, Unavailable, CodeUnavailable, 0, []string{"context.authentication_failed"}},
		{"client", answer{200, clientSchema}, Client, "", DefaultTTL, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, srs, clk := newTestChecker(t)
			srs.set(tc.ans)
			ctx := withToken("tok-" + tc.name)
			r := c.Check(ctx)
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict %v, want %v", r.Verdict, tc.verdict)
			}
			if tc.code == "" {
				if r.Err != nil {
					t.Fatalf("unexpected error %s", r.Err)
				}
			} else if r.Err == nil || r.Err.Code() != tc.code {
				t.Fatalf("error %v, want code %s", r.Err, tc.code)
			}
			for _, want := range tc.inReason {
				if !strings.Contains(string(r.Err.Object()), want) {
					t.Errorf("error lacks %q: %s", want, r.Err.Object())
				}
			}
			reads := srs.reads.Load()
			c.Check(ctx)
			again := srs.reads.Load() > reads
			if again != (tc.kept == 0) {
				t.Fatalf("asked the RS again at once = %v, want %v (kept %v)", again, tc.kept == 0, tc.kept)
			}
			if tc.kept == 0 {
				return
			}
			clk.advance(tc.kept - time.Second)
			reads = srs.reads.Load()
			c.Check(ctx)
			if srs.reads.Load() != reads {
				t.Fatalf("asked the RS again within the %v lifetime", tc.kept)
			}
			clk.advance(2 * time.Second)
			c.Check(ctx)
			if srs.reads.Load() == reads {
				t.Fatalf("the verdict outlived its %v lifetime", tc.kept)
			}
		})
	}
}

// TestRejectionAfterTroubleIsShortLived: a rejection read right after RS
// trouble (a 5xx of a check, or of a call) is remembered for at most
// SuspectRejectedTTL, so the token is served again as soon as the RS
// recovers; once the trouble is older than TroubleWindow, RejectedTTL holds.
func TestRejectionAfterTroubleIsShortLived(t *testing.T) {
	cases := []struct {
		name    string
		trouble func(c *Checker, srs *schemaRS)
	}{
		{"the token check met a 503", func(c *Checker, srs *schemaRS) {
			srs.set(answer{503, rsDown})
			if r := c.Check(withToken("other")); r.Verdict != Unavailable {
				t.Fatalf("verdict %v", r.Verdict)
			}
		}},
		{"a call met a timeout", func(c *Checker, _ *schemaRS) {
			if cl := c.Observe(withToken("other"), rs.AdapterError(rs.CodeTimeout, "late", "")); cl != rs.ClassUnavailable {
				t.Fatalf("class %v", cl)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, srs, clk := newTestChecker(t)
			tc.trouble(c, srs)
			clk.advance(time.Second)
			srs.set(answer{403, expired}) // a grant_* code: RejectedTTL at once without trouble
			ctx := withToken("good")
			if r := c.Check(ctx); r.Verdict != Rejected {
				t.Fatalf("verdict %v", r.Verdict)
			}
			srs.set(answer{200, clientSchema})
			clk.advance(SuspectRejectedTTL - time.Second)
			if r := c.Check(ctx); r.Verdict != Rejected {
				t.Fatalf("within %v: verdict %v, want the remembered rejection", SuspectRejectedTTL, r.Verdict)
			}
			clk.advance(2 * time.Second)
			if r := c.Check(ctx); r.Verdict != Client {
				t.Fatalf("after %v: verdict %v, want client", SuspectRejectedTTL, r.Verdict)
			}

			// Long after the trouble, a rejection is kept RejectedTTL.
			clk.advance(TroubleWindow)
			srs.set(answer{403, expired})
			late := withToken("late")
			c.Check(late)
			srs.set(answer{200, clientSchema})
			clk.advance(SuspectRejectedTTL + time.Second)
			if r := c.Check(late); r.Verdict != Rejected {
				t.Fatalf("a rejection with no trouble before it was not kept %v", RejectedTTL)
			}
		})
	}
}

// TestObserveEvicts: after a call's refusal, a token-level code and an
// unlisted 401 evict every cached verdict of the token; a scope refusal, a
// request error and RS trouble keep it.
func TestObserveEvicts(t *testing.T) {
	errOf := func(status int, body string) *rs.Error {
		return &rs.Error{Status: status, Envelope: json.RawMessage(body)}
	}
	cases := []struct {
		name    string
		err     error
		class   rs.Class
		evicted bool
	}{
		{"grant revoked", errOf(403, revoked), rs.ClassToken, true},
		{"grant expired", errOf(403, expired), rs.ClassToken, true},
		{"token inactive", errOf(401, inactive), rs.ClassToken, true},
		{"unlisted 401", errOf(401, unlisted401), rs.ClassRequest, true},
		{"stream outside the grant", errOf(401, outOfScope), rs.ClassScope, false},
		{"unknown record", errOf(404, unknownSrc), rs.ClassRequest, false},
		{"RS down", errOf(503, rsDown), rs.ClassUnavailable, false},
		{"not an RS error", errors.New("boom"), rs.ClassRequest, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, srs, _ := newTestChecker(t)
			ctx := withToken("tok")
			c.Check(ctx)
			if got := c.Observe(ctx, tc.err); got != tc.class {
				t.Fatalf("class %v, want %v", got, tc.class)
			}
			reads := srs.reads.Load()
			c.Check(ctx)
			if evicted := srs.reads.Load() > reads; evicted != tc.evicted {
				t.Fatalf("evicted = %v, want %v", evicted, tc.evicted)
			}
		})
	}
	t.Run("a remembered rejection is forgotten too", func(t *testing.T) {
		c, srs, _ := newTestChecker(t)
		ctx := withToken("tok")
		srs.set(answer{401, inactive})
		c.Check(ctx)
		c.Forget(ctx)
		srs.set(answer{200, clientSchema})
		if r := c.Check(ctx); r.Verdict != Client {
			t.Fatalf("verdict %v after Forget", r.Verdict)
		}
	})
}
