package demoas_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
)

// peer drives one server in process as requests from one client address.
type peer struct {
	t    *testing.T
	mux  *http.ServeMux
	addr string
}

func (p peer) do(method, target, contentType, body string) *httptest.ResponseRecorder {
	p.t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.RemoteAddr = p.addr
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	p.mux.ServeHTTP(w, r)
	return w
}

// register registers a public client with a loopback redirect; "" when refused.
func (p peer) register() (string, int) {
	w := p.do(http.MethodPost, "/oauth/register", "application/json", `{"redirect_uris":["`+redirectURI+`"]}`)
	var m struct {
		ClientID string `json:"client_id"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &m)
	return m.ClientID, w.Code
}

// flow runs one code flow for clientID (auto-consent) and returns the token
// response's status and body.
func (p peer) flow(clientID string) (int, map[string]any) {
	p.t.Helper()
	verifier := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "connector_id": {"loom"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	w := p.do(http.MethodGet, "/oauth/authorize?"+q.Encode(), "", "")
	loc, _ := url.Parse(w.Header().Get("Location"))
	if w.Code != http.StatusFound || loc.Query().Get("code") == "" {
		p.t.Fatalf("authorize: %d %s", w.Code, w.Body)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID}, "code": {loc.Query().Get("code")},
		"code_verifier": {verifier}, "redirect_uri": {redirectURI}}
	w = p.do(http.MethodPost, "/oauth/token", "application/x-www-form-urlencoded", form.Encode())
	var m map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &m)
	return w.Code, m
}

func (p peer) refresh(clientID, rt string) (int, map[string]any) {
	form := url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {rt}}
	w := p.do(http.MethodPost, "/oauth/token", "application/x-www-form-urlencoded", form.Encode())
	var m map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &m)
	return w.Code, m
}

// TestFloodsKeepOthersLiveGrants: unauthenticated registrations and code
// flows from one address past every table's bound, and then from many
// addresses until the grant table is full of live grants, never cost
// another address its registration or its live grant: the flooder loses
// its own oldest entries, and once the server is full of live grants a
// newcomer is refused (503) rather than someone else's grant dropped.
func TestFloodsKeepOthersLiveGrants(t *testing.T) {
	s, err := demoas.New(demoas.Config{Sources: sources, AutoConsent: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	victim := peer{t, mux, "192.0.2.10:50000"}
	clientID, code := victim.register()
	if code != http.StatusCreated {
		t.Fatalf("register: %d", code)
	}
	status, tok := victim.flow(clientID)
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, tok)
	}
	access := tok["access_token"].(string)
	stillLive := func(when string) {
		t.Helper()
		if _, st, ok := s.Lookup(access); !ok || st != demoas.Active {
			t.Fatalf("%s: the victim's token is no longer active (known %v, state %v)", when, ok, st)
		}
	}

	attacker := peer{t, mux, "198.51.100.7:40000"}
	var last string
	for i := range demoas.MaxClients + 100 {
		id, code := attacker.register()
		if code != http.StatusCreated {
			t.Fatalf("registration %d from one address: %d", i, code)
		}
		last = id
	}
	for i := range demoas.MaxGrants + 100 {
		if status, body := attacker.flow(last); status != http.StatusOK {
			t.Fatalf("flow %d from one address: %d %v", i, status, body)
		}
	}
	stillLive("after one address's floods")

	// Many addresses, each at its bound, fill the grant table with live
	// grants; past that, newcomers wait.
	refused := 0
	for a := range demoas.MaxGrants/demoas.MaxGrantsPerAddress + 8 {
		p := peer{t, mux, fmt.Sprintf("[2001:db8:%x::1]:1", a)}
		id, code := p.register()
		if code != http.StatusCreated {
			t.Fatalf("register from address %d: %d", a, code)
		}
		for range demoas.MaxGrantsPerAddress {
			switch status, body := p.flow(id); status {
			case http.StatusOK:
			case http.StatusServiceUnavailable:
				refused++
			default:
				t.Fatalf("flow: %d %v", status, body)
			}
		}
	}
	if refused == 0 {
		t.Fatal("the grant table never filled: the flood is not past the bound")
	}
	stillLive("after many addresses' floods")
	// The victim's registration and refresh token still work.
	if status, body := victim.refresh(clientID, tok["refresh_token"].(string)); status != http.StatusOK {
		t.Fatalf("the victim's refresh: %d %v", status, body)
	}
}

// TestRegisterContentType: a registration must be sent as JSON (a form or
// text/plain POST, which any web page can send without a preflight, is 415).
func TestRegisterContentType(t *testing.T) {
	a := newAS(t, true)
	body := `{"redirect_uris":["` + redirectURI + `"]}`
	for _, tc := range []struct {
		contentType string
		status      int
	}{
		{"application/json", 201}, {"application/json; charset=utf-8", 201}, {"Application/JSON", 201},
		{"text/plain", 415}, {"application/x-www-form-urlencoded", 415}, {"", 415}, {"application/jsonx", 415},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, a.url+"/oauth/register", strings.NewReader(body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// TestNoOpenRedirect: a client anyone registered with an https redirect URI
// does not get errors redirected there before a person has consented to it
// at that URI; a loopback redirect URI, or one confirmed by consent, does.
func TestNoOpenRedirect(t *testing.T) {
	a := newAS(t, false) // a consent page
	const evil = "https://attacker.example/cb"
	resp, err := http.Post(a.url+"/oauth/register", "application/json", strings.NewReader(`{"redirect_uris":["`+evil+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	challenge := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	query := func(responseType string) string {
		return url.Values{"response_type": {responseType}, "client_id": {reg.ClientID}, "redirect_uri": {evil}, "state": {"s"},
			"code_challenge": {challenge}, "code_challenge_method": {"S256"}}.Encode()
	}
	implicit := func() *http.Response {
		resp, err := noRedirect.Get(a.url + "/oauth/authorize?" + query("token"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := implicit(); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Fatalf("before consent: %d to %q, want the server's own error page", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The person consents once at that redirect URI.
	resp, err = noRedirect.Get(a.url + "/oauth/authorize?" + query("code"))
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(resp)
	i := strings.Index(page, `name="request" value="`)
	if resp.StatusCode != http.StatusOK || i < 0 {
		t.Fatalf("consent page: %d", resp.StatusCode)
	}
	id := page[i+len(`name="request" value="`):]
	id = id[:strings.Index(id, `"`)]
	resp, err = noRedirect.PostForm(a.url+"/oauth/consent", url.Values{"request": {id}, "decision": {"approve"}, "source": {"loom"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Location"), evil+"?") {
		t.Fatalf("consent: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := implicit(); resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), evil+"?") {
		t.Fatalf("after consent: %d to %q, want the error at the confirmed redirect URI", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // a consent page is a few KiB
	return string(b)
}
