package demoas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/publichost"
)

// Client ID Metadata Documents: a client may use the https URL of a JSON
// document describing it as its client_id, with no registration. The server
// fetches the document when it first meets the client_id (at the
// authorization or token endpoint) and keeps it for DocumentTTL.
const (
	// MaxDocumentBytes bounds a document; a longer one is refused unread.
	MaxDocumentBytes = 5 << 10
	// DocumentTimeout bounds one fetch, from dialling to the last byte.
	DocumentTimeout = 5 * time.Second
	// DocumentTTL is how long a fetched document is used before it is fetched
	// again.
	DocumentTTL = 10 * time.Minute
	// MaxDocuments bounds the documents held; when full, the expired ones go,
	// then the oldest.
	MaxDocuments = 256
	// maxFetches bounds the fetches in progress at once; a client_id that would
	// start one more is refused for now (a retry works).
	maxFetches = 4
)

// isDocumentID reports whether a client_id names a client metadata document.
func isDocumentID(id string) bool { return strings.HasPrefix(id, "https://") }

// checkDocumentURL checks a client_id URL before anything is fetched: https
// with a path, no user information, fragment or dot segments, and, unless a
// test gave its own DocumentClient, a public host (see publichost.Problem).
func (s *Server) checkDocumentURL(id string) error {
	if len(id) > maxURIBytes {
		return fmt.Errorf("longer than %d bytes", maxURIBytes)
	}
	u, err := url.Parse(id)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Hostname() == "":
		return errors.New("must be an absolute https URL")
	case u.User != nil:
		return errors.New("must not carry user information")
	case u.Fragment != "" || strings.Contains(id, "#"):
		return errors.New("must not carry a fragment")
	case u.Path == "" || u.Path == "/":
		return errors.New("must have a path naming the document")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return errors.New("must not have . or .. path segments")
		}
	}
	if s.cfg.DocumentClient == nil {
		if why := publichost.Problem(u.Hostname()); why != "" {
			return fmt.Errorf("host %q %s; a client metadata document must be served from a public https host", clip(u.Hostname()), why)
		}
	}
	return nil
}

// documentHTTPClient is the client that fetches documents: each dial goes
// only to a public address (what the name resolved to is judged again here),
// no proxy, no redirect, DocumentTimeout in all. A test's DocumentClient
// replaces the transport (and with it the address rule), never the rest.
func documentHTTPClient(test *http.Client) *http.Client {
	c := &http.Client{Timeout: DocumentTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("a client metadata document must be served without redirects")
	}}
	if test != nil {
		c.Transport = test.Transport
		return c
	}
	dialer := &net.Dialer{Timeout: DocumentTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if why := publichost.AddrProblem(ip); why != "" {
			return fmt.Errorf("the client_id host resolved to %s, which %s", host, why)
		}
		return nil
	}}
	c.Transport = &http.Transport{
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    DocumentTimeout,
		ResponseHeaderTimeout:  DocumentTimeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableKeepAlives:      true,
	}
	return c
}

// documentClient returns the client a document client_id stands for,
// fetching its document when it is not held or is older than DocumentTTL.
// Concurrent first uses of one client_id share one fetch.
func (s *Server) documentClient(ctx context.Context, id string) (*client, error) {
	if err := s.checkDocumentURL(id); err != nil {
		return nil, fmt.Errorf("client_id %q %v", clip(id), err)
	}
	s.mu.Lock()
	c, ok := s.docs.get(id)
	s.mu.Unlock()
	if ok && s.now().Before(c.issuedAt.Add(DocumentTTL)) {
		return c, nil
	}
	v, err, _ := s.fetches.Do(id, func() (any, error) {
		if !s.fetchSlots.TryAcquire(1) {
			return nil, errors.New("too many client metadata documents are being fetched; try again shortly")
		}
		defer s.fetchSlots.Release(1)
		c, err := s.fetchDocument(context.WithoutCancel(ctx), id)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.docs.put(id, c, c.issuedAt.Add(DocumentTTL), s.now())
		s.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("client metadata document %s: %w", clip(id), err)
	}
	return v.(*client), nil
}

// fetchDocument reads and checks one document.
func (s *Server) fetchDocument(ctx context.Context, id string) (*client, error) {
	ctx, cancel := context.WithTimeout(ctx, DocumentTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.docHTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("could not be fetched: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered HTTP %d, want 200", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("could not be read: %v", err)
	}
	if len(raw) > MaxDocumentBytes {
		return nil, fmt.Errorf("is larger than %d bytes", MaxDocumentBytes)
	}
	reg, code, msg := parseRegistration(raw)
	if code != "" {
		return nil, errors.New(msg)
	}
	var doc struct {
		ClientID     string  `json:"client_id"`
		ClientSecret *string `json:"client_secret"`
	}
	_ = json.Unmarshal(raw, &doc) // parseRegistration read it as an object
	switch {
	case doc.ClientID != id:
		return nil, fmt.Errorf("names client_id %q, not its own URL", clip(doc.ClientID))
	case doc.ClientSecret != nil:
		return nil, errors.New("carries a client_secret; a document describes a public client")
	}
	return &client{id: id, name: reg.ClientName, redirectURIs: reg.RedirectURIs, issuedAt: s.now()}, nil
}
