package demoas_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
)

// newASConfig is newAS with a whole configuration (Sources and AutoConsent
// filled in).
func newASConfig(t *testing.T, cfg demoas.Config) *as {
	t.Helper()
	cfg.Sources, cfg.AutoConsent = sources, true
	s, err := demoas.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &as{srv: s, url: hs.URL}
}

// authorizePage sends a browser to the authorization endpoint for clientID
// and returns the status and the page.
func authorizePage(t *testing.T, a *as, clientID string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(a.oauth(clientID).AuthCodeURL("st-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLoopbackDocumentsSwitch: with AllowLoopbackDocuments (the demo's
// --demo-allow-loopback-cimd), a client metadata document served over TLS
// on 127.0.0.1 with a self-signed certificate, named by address or as
// localhost, is fetched by the server's own fetcher and its client
// completes the flow; without it the same client_id is refused before any
// fetch, on a page that names the switch.
func TestLoopbackDocumentsSwitch(t *testing.T) {
	// The document names the URL it was fetched by, whichever host that named.
	var hits atomic.Int64
	d := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		self := "https://" + r.Host + r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"client_id":"`+self+`","client_name":"Local client","redirect_uris":["`+redirectURI+`"],`+
			`"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`)
	}))
	t.Cleanup(d.Close)
	u, _ := url.Parse(d.URL)
	ids := []string{d.URL + "/client.json", "https://localhost:" + u.Port() + "/client.json"}

	t.Run("off", func(t *testing.T) {
		a := newASConfig(t, demoas.Config{})
		for _, id := range ids {
			code, page := authorizePage(t, a, id)
			if code != http.StatusBadRequest || !strings.Contains(page, demoas.LoopbackDocumentsFlag) {
				t.Fatalf("%s: %d, want 400 naming %s:\n%s", id, code, demoas.LoopbackDocumentsFlag, page)
			}
		}
		if n := hits.Load(); n != 0 {
			t.Fatalf("%d fetches with the switch off", n)
		}
	})
	t.Run("on", func(t *testing.T) {
		a := newASConfig(t, demoas.Config{AllowLoopbackDocuments: true})
		for _, id := range ids {
			tok := codeFlow(t, a, id, redirectURI)
			if g, st, ok := a.srv.Lookup(tok.AccessToken); !ok || st != demoas.Active || g.ClientID != id {
				t.Fatalf("%s: lookup %+v %v %v", id, g, st, ok)
			}
		}
		// Still only loopback: a private or public-looking host that is not
		// this machine is judged as before.
		for _, id := range []string{"https://10.0.0.7/client.json", "https://intranet/client.json"} {
			if code, page := authorizePage(t, a, id); code != http.StatusBadRequest || strings.Contains(page, demoas.LoopbackDocumentsFlag) {
				t.Fatalf("%s: %d %s", id, code, page)
			}
		}
	})
}

// TestDocumentErrorsNameNoResolvedAddress: a public-looking client_id host
// that resolves to a private or loopback address is refused, and the page
// (which whoever sent the client_id reads) names neither the address nor
// its range.
func TestDocumentErrorsNameNoResolvedAddress(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"10.1.2.3", "non-public address"},
		{"fd00::1234", "non-public address"},
		{"127.0.0.9", demoas.LoopbackDocumentsFlag},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a := newASConfig(t, demoas.Config{})
			demoas.SetDocumentLookup(a.srv, func(_ context.Context, _, host string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr(tc.addr)}, nil
			})
			code, page := authorizePage(t, a, "https://cimd.example/client.json")
			if code != http.StatusBadRequest || !strings.Contains(page, tc.want) {
				t.Fatalf("%d, want 400 saying %q:\n%s", code, tc.want, page)
			}
			for _, leak := range []string{tc.addr, "10.0.0.0/8", "fc00::/7", "127.0.0.0/8", "dial tcp"} {
				if strings.Contains(page, leak) {
					t.Fatalf("the page names %q:\n%s", leak, page)
				}
			}
		})
	}
}

// TestDocumentFetchesBoundedPerAddress: slow documents named from one
// client address hold only that address's fetch places: its next first use
// is refused at once, while a client at another address still has its
// document fetched and completes the flow. The places come back when the
// slow fetches end.
func TestDocumentFetchesBoundedPerAddress(t *testing.T) {
	release := make(chan struct{})
	d := newDocServer(t, func(self, path string) (int, string) {
		if strings.HasPrefix(path, "/slow") {
			<-release
		}
		return 200, `{"client_id":"` + self + `","redirect_uris":["` + redirectURI + `"]}`
	})
	// Runs before the document server closes, which waits for its handlers.
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	s, err := demoas.New(demoas.Config{Sources: sources, AutoConsent: true, DocumentClient: d.Client()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	attacker := peer{t: t, mux: mux, addr: "198.51.100.7:4000"}
	other := peer{t: t, mux: mux, addr: "203.0.113.9:4000"}
	authz := func(p peer, id string) *httptest.ResponseRecorder {
		q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirectURI}, "connector_id": {"loom"},
			"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
		return p.do(http.MethodGet, "/oauth/authorize?"+q.Encode(), "", "")
	}

	// Four slow documents from one address (each fetch waits on release,
	// well within DocumentTimeout): two take the address's places and
	// wait, the other two are refused at once.
	const slow = 4
	type result struct {
		code int
		body string
	}
	done := make(chan result, slow)
	for i := range slow {
		go func() {
			w := authz(attacker, fmt.Sprintf("%s/slow%d.json", d.URL, i))
			done <- result{w.Code, w.Body.String()}
		}()
	}
	for range slow - 2 {
		select {
		case r := <-done:
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, "your address") {
				t.Fatalf("a slow document past the address's places: %d %s", r.code, r.body)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("no slow document past the address's places was refused at once")
		}
	}

	if w := authz(attacker, d.URL+"/third.json"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "your address") {
		t.Fatalf("a third document from the same address: %d %s", w.Code, w.Body)
	}
	if w := authz(other, d.URL+"/other.json"); w.Code != http.StatusFound {
		t.Fatalf("another address's document while the slow ones hang: %d %s", w.Code, w.Body)
	}
	unblock()
	for range 2 {
		if r := <-done; r.code != http.StatusFound {
			t.Fatalf("a slow document, once served: %d %s", r.code, r.body)
		}
	}
	if w := authz(attacker, d.URL+"/third.json"); w.Code != http.StatusFound {
		t.Fatalf("the address's places did not come back: %d %s", w.Code, w.Body)
	}
}
