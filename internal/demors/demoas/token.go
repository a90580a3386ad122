package demoas

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"time"
)

// serveToken answers the token endpoint for public clients, identified by client_id in the
// form (or HTTP Basic with an empty password), proving the code with their PKCE verifier.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return
	}
	raw, err := readBody(w, r)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	for name, vs := range form {
		if len(vs) > 1 {
			oauthError(w, http.StatusBadRequest, "invalid_request", "the parameter "+clip(name)+" is repeated")
			return
		}
	}
	clientID := form.Get("client_id")
	if user, pass, ok := r.BasicAuth(); ok {
		if pass != "" || (clientID != "" && clientID != user) {
			w.Header().Set("WWW-Authenticate", `Basic realm="pdpp-demo"`)
			oauthError(w, http.StatusUnauthorized, "invalid_client", "this server issues no client secrets; send client_id without one")
			return
		}
		clientID, _ = url.QueryUnescape(user)
	}
	if _, err := s.lookupClient(r, clientID); err != nil {
		oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		s.exchangeCode(w, form, clientID, clientAddr(r))
	case "refresh_token":
		s.exchangeRefresh(w, form, clientID)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// exchangeCode turns a code into a new grant with its first tokens. A code presented
// twice revokes the grant it produced.
func (s *Server) exchangeCode(w http.ResponseWriter, form url.Values, clientID, addr string) {
	verifier := form.Get("code_verifier")
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c, ok := s.codes.get(hash(form.Get("code")))
	switch {
	case !ok || now.After(c.expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code is unknown or expired")
		return
	case c.grantID != "":
		if g, ok := s.grants.get(c.grantID); ok {
			g.revoked = true
		}
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was already used; the grant it produced is revoked")
		return
	case c.clientID != clientID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case (c.redirectGiven || form.Has("redirect_uri")) && form.Get("redirect_uri") != c.redirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
		return
	case !isVerifierSyntax(verifier):
		oauthError(w, http.StatusBadRequest, "invalid_request", "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
		return
	case !s256Matches(verifier, c.challenge):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	}
	prefix := "grt_"
	if c.kind == KindPackage {
		prefix = "gpk_"
	}
	g := &grantRec{Grant: Grant{ID: newID(prefix), ClientID: clientID, Kind: c.kind, Sources: c.sources}, owner: addr}
	if !s.grants.putFor(addr, g.ID, g, now.Add(RefreshTokenTTL), now) {
		busy(w, "grants")
		return
	}
	if !s.writeTokens(w, g, now) {
		s.grants.remove(g.ID)
		return
	}
	c.grantID = g.ID
}

// exchangeRefresh rotates a refresh token. A used one presented again revokes its
// whole grant: every access and refresh token of the family stops working.
func (s *Server) exchangeRefresh(w http.ResponseWriter, form url.Values, clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	rt, ok := s.refresh.get(hash(form.Get("refresh_token")))
	if !ok || rt.clientID != clientID {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is unknown")
		return
	}
	g, ok := s.grants.get(rt.grantID)
	switch {
	case !ok || g.revoked:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the grant is revoked; authorize again")
		return
	case rt.used:
		g.revoked = true
		s.log.Info("demo AS revoked a grant: a used refresh token was presented again", "grant_id", g.ID)
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used; the grant is revoked, authorize again")
		return
	case now.After(rt.expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token has expired; authorize again")
		return
	}
	if !s.writeTokens(w, g, now) {
		return
	}
	rt.used = true
	s.grants.putFor(g.owner, g.ID, g, now.Add(RefreshTokenTTL), now) // the family lives on (same key: never refused)
}

// writeTokens issues and answers a new access and refresh token for g, counted to its
// address; with no room among live tokens it answers 503 and reports false. Under s.mu.
func (s *Server) writeTokens(w http.ResponseWriter, g *grantRec, now time.Time) bool {
	access, refresh := secret("pdppas_at_"), secret("pdppas_rt_")
	ttl := s.cfg.AccessTokenTTL
	// Expired access tokens stay until room is needed (see MaxAccessTokens).
	ah, rh := hash(access), hash(refresh)
	if !s.access.putFor(g.owner, ah, &accessRec{grantID: g.ID, expires: now.Add(ttl)}, now.Add(ttl), now) {
		busy(w, "tokens")
		return false
	}
	if !s.refresh.putFor(g.owner, rh, &refreshRec{grantID: g.ID, clientID: g.ClientID, expires: now.Add(RefreshTokenTTL)}, now.Add(RefreshTokenTTL), now) {
		s.access.remove(ah)
		busy(w, "tokens")
		return false
	}
	if c, ok := s.clients.get(g.ClientID); ok {
		c.lastUsed = now
	}
	body := map[string]any{
		"access_token":  access,
		"token_type":    "Bearer",
		"expires_in":    int64(ttl.Seconds()),
		"refresh_token": refresh,
	}
	if g.Kind == KindPackage {
		body["grant_package_id"] = g.ID
	} else {
		body["grant_id"] = g.ID
	}
	writeJSON(w, http.StatusOK, body)
	return true
}

// s256Matches reports whether BASE64URL(SHA256(verifier)) equals challenge.
func s256Matches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}
