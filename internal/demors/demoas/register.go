package demoas

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// registration is what a client may register. scope is accepted only empty (MCP Inspector
// sends "scope": ""): with no scopes to grant, a client asking for one is told so rather
// than handed less. Unused members (client_uri, logo_uri, contacts, software_id, ...) are
// ignored, as RFC 7591 allows; what cannot be honoured (a confidential client, another
// grant or response type, a redirect URI no code would be sent to) is refused.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// serveRegister answers dynamic client registration (RFC 7591) for public clients.
func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		// Registrations are JSON; a form or text/plain POST (no preflight from a page) is refused.
		oauthError(w, http.StatusUnsupportedMediaType, "invalid_client_metadata", "the body must be sent as Content-Type: application/json")
		return
	}
	raw, err := readBody(w, r)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", err.Error())
		return
	}
	reg, code, msg := parseRegistration(raw)
	if code != "" {
		oauthError(w, http.StatusBadRequest, code, msg)
		return
	}
	c := &client{id: newID("cli_"), name: reg.ClientName, redirectURIs: reg.RedirectURIs, issuedAt: s.now()}
	s.mu.Lock()
	// A registration goes when stale or for room among its address's, never at a fixed time.
	ok := s.clients.putFor(clientAddr(r), c.id, c, c.issuedAt.Add(100*365*24*time.Hour), s.now())
	s.mu.Unlock()
	if !ok {
		busy(w, "registrations")
		return
	}
	s.log.Debug("demo AS registered a client", "client_id", c.id, "client_name", c.name)
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.id,
		"client_id_issued_at":        c.issuedAt.Unix(),
		"client_name":                c.name,
		"redirect_uris":              c.redirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	})
}

// parseRegistration reads and checks a registration request or client metadata document;
// code and msg are an RFC 7591 error when it is refused.
func parseRegistration(raw []byte) (reg registration, code, msg string) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return reg, "invalid_client_metadata", "the body must be a JSON object"
	}
	if m, ok := members["scope"]; ok {
		var scope string
		if json.Unmarshal(m, &scope) != nil || strings.TrimSpace(scope) != "" {
			return reg, "invalid_client_metadata", "scope is not supported (this server has no scopes); register without it or with an empty one"
		}
	}
	if err := json.Unmarshal(raw, &reg); err != nil {
		return reg, "invalid_client_metadata", "a member has the wrong type: " + err.Error()
	}
	code, msg = reg.check()
	return reg, code, msg
}

// check validates a registration; it returns an RFC 7591 error code and message.
func (reg *registration) check() (code, msg string) {
	switch reg.TokenEndpointAuthMethod {
	case "", "none":
	default:
		return "invalid_client_metadata", fmt.Sprintf("token_endpoint_auth_method %q is not supported; this server registers public clients only (\"none\", with PKCE)", reg.TokenEndpointAuthMethod)
	}
	if len(reg.RedirectURIs) == 0 {
		return "invalid_redirect_uri", "redirect_uris is required"
	}
	if len(reg.RedirectURIs) > maxRedirectURIs {
		return "invalid_redirect_uri", fmt.Sprintf("at most %d redirect_uris", maxRedirectURIs)
	}
	for _, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return "invalid_redirect_uri", fmt.Sprintf("redirect URI %q: %v", clip(u), err)
		}
	}
	if len(reg.ClientName) > maxNameBytes || !utf8.ValidString(reg.ClientName) {
		return "invalid_client_metadata", fmt.Sprintf("client_name must be valid UTF-8 of at most %d bytes", maxNameBytes)
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return "invalid_client_metadata", fmt.Sprintf("grant type %q is not supported (authorization_code, refresh_token)", clip(g))
		}
	}
	for _, rt := range reg.ResponseTypes {
		if rt != "code" {
			return "invalid_client_metadata", fmt.Sprintf("response type %q is not supported (code)", clip(rt))
		}
	}
	return "", ""
}

// unsafeSchemes can never be redirect targets.
var unsafeSchemes = []string{"javascript", "data", "file", "vbscript", "about", "blob"}

// checkRedirectURI accepts an absolute URI without fragment: https, http on a loopback
// host, or a private-use scheme of a native app.
func checkRedirectURI(s string) error {
	if len(s) > maxURIBytes {
		return fmt.Errorf("longer than %d bytes", maxURIBytes)
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URI")
	}
	switch {
	case u.Scheme == "":
		return errors.New("not absolute")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return errors.New("must not carry a fragment")
	case slices.Contains(unsafeSchemes, strings.ToLower(u.Scheme)):
		return errors.New("scheme not allowed")
	case u.Scheme == "https":
		if u.Host == "" {
			return errors.New("no host")
		}
	case u.Scheme == "http":
		if !isLoopback(u.Hostname()) {
			return errors.New("http is allowed only on a loopback host; use https")
		}
	}
	return nil
}

func isLoopback(host string) bool {
	return strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback() // a nil IP is not loopback
}

// readBody reads a request body up to maxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("the body is larger than %d bytes", maxBodyBytes)
	}
	return b, err
}

// clip shortens a value quoted back in an error message.
func clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
