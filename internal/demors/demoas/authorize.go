package demoas

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// pending is an authorization request waiting on the consent page.
type pending struct {
	clientID, clientName string
	redirectURI, state   string
	redirectGiven        bool
	challenge            string
	source               string // one source id; "" shows the picker
	expires              time.Time
}

// code is an issued authorization code: the request it answers and what it grants.
type code struct {
	pending
	kind    Kind
	sources []string
	expires time.Time
	grantID string // set once exchanged; a second exchange revokes that grant
}

// serveAuthorize answers the authorization endpoint. Until the client and its
// redirect URI are known to match a registration, errors are shown as a page and
// never redirected (no open redirect); after that they go back to the client.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, http.MethodGet)
		return
	}
	if len(r.URL.RawQuery) > maxQueryBytes {
		s.errorPage(w, http.StatusRequestURITooLong, fmt.Sprintf("The authorization request is longer than %d bytes.", maxQueryBytes))
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "The authorization request's query is malformed.")
		return
	}
	for name, vs := range q {
		if len(vs) > 1 {
			s.errorPage(w, http.StatusBadRequest, fmt.Sprintf("The parameter %q is repeated.", clip(name)))
			return
		}
	}
	c, err := s.lookupClient(r, q.Get("client_id"))
	if err != nil {
		msg := err.Error() // always starts with an ASCII word
		s.errorPage(w, http.StatusBadRequest, strings.ToUpper(msg[:1])+msg[1:]+".")
		return
	}
	redirect, given := q.Get("redirect_uri"), q.Has("redirect_uri")
	switch {
	case given && !slices.Contains(c.redirectURIs, redirect):
		s.errorPage(w, http.StatusBadRequest, "The redirect_uri is not one the client registered.")
		return
	case !given && len(c.redirectURIs) != 1:
		s.errorPage(w, http.StatusBadRequest, "redirect_uri is required: the client registered several.")
		return
	case !given:
		redirect = c.redirectURIs[0]
	}
	state := q.Get("state")
	// Before consent an error goes back only to a loopback redirect URI or one a person
	// confirmed for this client: anyone may register any https redirect, and an error sent
	// there at once would make this an open redirector (RFC 9700 §4.11).
	s.mu.Lock()
	trusted := isLoopbackRedirect(redirect) || c.confirmed[redirect]
	s.mu.Unlock()
	back := func(code, desc string) {
		if !trusted {
			s.errorPage(w, http.StatusBadRequest, fmt.Sprintf("The application's request is refused (%s: %s).", code, desc))
			return
		}
		redirectTo(w, r, redirect, url.Values{"error": {code}, "error_description": {desc}}, state)
	}
	if q.Get("response_type") != "code" {
		back("unsupported_response_type", "only response_type=code is supported")
		return
	}
	challenge := q.Get("code_challenge")
	if q.Get("code_challenge_method") != "S256" {
		back("invalid_request", "PKCE is required with code_challenge_method=S256 (plain is not supported)")
		return
	}
	if !isVerifierSyntax(challenge) {
		back("invalid_request", "code_challenge must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
		return
	}
	source, code, desc := s.requestedSource(q)
	if code != "" {
		back(code, desc)
		return
	}
	p := &pending{clientID: c.id, clientName: c.name, redirectURI: redirect, redirectGiven: given, state: state,
		challenge: challenge, source: source, expires: s.now().Add(PendingTTL)}
	if s.cfg.AutoConsent {
		var sources []string
		if source == "" {
			for _, src := range s.sources {
				sources = append(sources, src.ID)
			}
		}
		s.approve(w, r, p, sources)
		return
	}
	id := secret("req_")
	s.mu.Lock()
	s.pending.putFor(clientAddr(r), id, p, p.expires, s.now())
	s.mu.Unlock()
	s.consentPage(w, id, p)
}

// requestedSource reads connector_id and PDPP authorization_details: the one source
// they name, or "" when neither is present. Both may be given when they agree.
func (s *Server) requestedSource(q url.Values) (source, code, desc string) {
	if q.Has("connector_id") {
		src, ok := s.source(q.Get("connector_id"))
		if !ok {
			return "", "invalid_request", "unknown connector_id " + clip(q.Get("connector_id"))
		}
		source = src.ID
	}
	if !q.Has("authorization_details") {
		return source, "", ""
	}
	var details []struct {
		Type   string `json:"type"`
		Source struct {
			Kind string `json:"kind"`
			ID   string `json:"id"`
		} `json:"source"`
	}
	if err := json.Unmarshal([]byte(q.Get("authorization_details")), &details); err != nil || len(details) == 0 {
		return "", "invalid_authorization_details", "authorization_details must be a non-empty JSON array of objects"
	}
	for _, d := range details {
		if d.Type != DataAccessType {
			return "", "invalid_authorization_details", "authorization_details type " + clip(d.Type) + " is not supported (" + DataAccessType + ")"
		}
		if d.Source.Kind != "connector" {
			return "", "invalid_authorization_details", "authorization_details source.kind must be connector"
		}
		src, ok := s.source(d.Source.ID)
		if !ok {
			return "", "invalid_authorization_details", "unknown source " + clip(d.Source.ID)
		}
		if source != "" && src.ID != source {
			return "", "invalid_authorization_details", "a grant covers one source: connector_id and authorization_details name different ones"
		}
		source = src.ID
	}
	return source, "", ""
}

// approve issues a code for p (a client grant over p.source, or a package grant over
// sources) and redirects back to the client.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, p *pending, sources []string) {
	c := &code{pending: *p, kind: KindPackage, sources: sources, expires: s.now().Add(CodeTTL)}
	if p.source != "" {
		c.kind, c.sources = KindClient, []string{p.source}
	}
	value := secret("pdppas_code_")
	s.mu.Lock()
	// A used code is kept as long as an unused one would live, to catch a replay.
	s.codes.putFor(clientAddr(r), hash(value), c, c.expires, s.now())
	s.mu.Unlock()
	s.log.Debug("demo AS approved an authorization", "client_id", p.clientID, "kind", c.kind, "sources", c.sources)
	redirectTo(w, r, p.redirectURI, url.Values{"code": {value}}, p.state)
}

// serveConsent answers the consent form.
func (s *Server) serveConsent(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "The consent form could not be read.")
		return
	}
	id := r.PostForm.Get("request")
	s.mu.Lock()
	p, ok := s.pending.get(id)
	s.pending.remove(id) // a consent page is answered once
	s.mu.Unlock()
	if !ok || s.now().After(p.expires) {
		s.errorPage(w, http.StatusBadRequest, "This authorization request is unknown or has expired; start again from the application.")
		return
	}
	// The person saw this client and redirect URI: errors may now go there (see serveAuthorize).
	s.confirm(p.clientID, p.redirectURI)
	if r.PostForm.Get("decision") != "approve" {
		redirectTo(w, r, p.redirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the person declined"}}, p.state)
		return
	}
	var sources []string
	if p.source == "" {
		for _, id := range r.PostForm["source"] {
			if src, ok := s.source(id); ok && !slices.Contains(sources, src.ID) {
				sources = append(sources, src.ID)
			}
		}
		if len(sources) == 0 {
			redirectTo(w, r, p.redirectURI, url.Values{"error": {"access_denied"}, "error_description": {"no source was chosen"}}, p.state)
			return
		}
	}
	s.approve(w, r, p, sources)
}

// redirectTo answers 302 to target with params (and state when not empty) added to its
// query. target is always a registered redirect URI.
func redirectTo(w http.ResponseWriter, r *http.Request, target string, params url.Values, state string) {
	u, _ := url.Parse(target) // checked at registration
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	if state != "" {
		q.Set("state", state)
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// isVerifierSyntax checks the RFC 7636 syntax shared by code_verifier and an S256
// code_challenge: 43 to 128 characters of [A-Za-z0-9-._~].
func isVerifierSyntax(s string) bool {
	return len(s) >= 43 && len(s) <= 128 && !strings.ContainsFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c))
	})
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PDPP demo authorization</title>
<style>body{font-family:sans-serif;max-width:36em;margin:3em auto;line-height:1.5}button{margin-right:1em}</style></head>
<body><h1>PDPP demo authorization server</h1>
{{if .Error}}<p>{{.Error}}</p>{{else}}
<p><strong>{{if .ClientName}}{{.ClientName}}{{else}}An application{{end}}</strong>{{if .ClientHost}} (described by {{.ClientHost}}){{end}} asks to read your data{{if .Source}} from <strong>{{.Source.Name}}</strong> ({{.Source.URL}}){{end}}, read-only.</p>
<form method="post" action="/oauth/consent">
<input type="hidden" name="request" value="{{.Request}}">
{{if not .Source}}<p>Choose the sources to share (a package grant):</p>
{{range .Sources}}<label><input type="checkbox" name="source" value="{{.ID}}" checked> {{.Name}} ({{.URL}})</label><br>
{{end}}{{end}}
<p><button name="decision" value="approve">Allow</button><button name="decision" value="deny">Deny</button></p>
</form>{{end}}
</body></html>
`))

type pageData struct {
	Error      string
	ClientName string
	ClientHost string // the host serving the client's metadata document
	Request    string
	Source     *Source
	Sources    []Source
}

// consentPage shows what is asked and the form that answers it.
func (s *Server) consentPage(w http.ResponseWriter, id string, p *pending) {
	d := pageData{ClientName: p.clientName, Request: id, Sources: s.sources}
	if u, err := url.Parse(p.clientID); err == nil && isDocumentID(p.clientID) {
		d.ClientHost = u.Host
	}
	if p.source != "" {
		src, _ := s.source(p.source)
		d.Source = &src
	}
	s.page(w, http.StatusOK, d)
}

// errorPage shows an error to the person, without redirecting anywhere.
func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	s.page(w, status, pageData{Error: msg})
}

func (s *Server) page(w http.ResponseWriter, status int, d pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	if err := pageTmpl.Execute(w, d); err != nil {
		s.log.Warn("demo AS page failed", "err", err)
	}
}

// confirm records that a person answered clientID's authorization at redirectURI (at most
// maxRedirectURIs of them).
func (s *Server) confirm(clientID, redirectURI string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients.get(clientID)
	if !ok {
		if c, ok = s.docs.get(clientID); !ok {
			return
		}
	}
	if c.confirmed == nil {
		c.confirmed = make(map[string]bool, 1)
	}
	c.confirmed[redirectURI] = true // bounded: only registered URIs reach here
}

// isLoopbackRedirect reports an http redirect URI on a loopback host, where a native or
// command-line client on this machine listens.
func isLoopbackRedirect(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "http" && isLoopback(u.Hostname())
}
