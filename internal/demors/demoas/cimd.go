package demoas

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/publichost"
)

// Client ID Metadata Documents: a client's client_id may be the https URL of a JSON document
// describing it, with no registration. The server fetches the document when it first meets
// the client_id (authorization or token endpoint) and keeps it for DocumentTTL.
const (
	// MaxDocumentBytes bounds a document; a longer one is refused unread.
	MaxDocumentBytes = 5 << 10
	// DocumentTimeout bounds one fetch, from dialling to the last byte.
	DocumentTimeout = 5 * time.Second
	// DocumentTTL is how long a fetched document is used before it is fetched again.
	DocumentTTL = 10 * time.Minute
	// MaxDocuments bounds the documents held; when full, the expired go, then the oldest.
	MaxDocuments = 256
	// maxFetchesPerAddress bounds the fetches one client address (see clientAddr) has in
	// progress, and maxFetches those of all: a client_id that would start one more is
	// refused for now (a retry works). Slow documents named from one address hold up only
	// that address's next first uses; filling the server takes maxFetches /
	// maxFetchesPerAddress addresses, each holding its places for at most DocumentTimeout.
	maxFetchesPerAddress = 2
	maxFetches           = 32
)

// LoopbackDocumentsFlag is the demo commands' switch that sets Config.AllowLoopbackDocuments;
// a loopback client_id refused without it names it.
const LoopbackDocumentsFlag = "--demo-allow-loopback-cimd"

// Why a document's host was not dialled (never naming what it resolved to: an error page is
// read by whoever sent the client_id).
var (
	errNotPublic = errors.New("its host resolves to a non-public address (private, link-local or reserved); a client metadata document must be served from a public host")
	errLoopback  = errors.New("its host resolves to a loopback address; to try a client metadata document served on this machine, start the demo with " + LoopbackDocumentsFlag)
	errNoAddress = errors.New("its host name does not resolve")
)

// isDocumentID reports whether a client_id names a client metadata document.
func isDocumentID(id string) bool { return strings.HasPrefix(id, "https://") }

// checkDocumentURL checks a client_id URL before any fetch: https with a path, no user
// information, fragment or dot segments, and, unless a test gave its own DocumentClient, a
// public host (see publichost.Problem).
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
		host := u.Hostname()
		if why := publichost.Problem(host); why != "" && !(s.cfg.AllowLoopbackDocuments && loopbackHost(host)) {
			if loopbackHost(host) {
				return fmt.Errorf("host %q %s; a client metadata document must be served from a public https host (to try one served on this machine, start the demo with %s)", clip(host), why, LoopbackDocumentsFlag)
			}
			return fmt.Errorf("host %q %s; a client metadata document must be served from a public https host", clip(host), why)
		}
	}
	return nil
}

// loopbackHost reports a host naming this machine: localhost, *.localhost or a loopback address.
func loopbackHost(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback()
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// dialable says whether a document may be fetched from ip: a public address, or, with
// AllowLoopbackDocuments, a loopback one.
func (s *Server) dialable(ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.IsLoopback() && s.cfg.AllowLoopbackDocuments:
		return nil
	case ip.IsLoopback():
		return errLoopback
	case publichost.AddrProblem(ip) != "":
		return errNotPublic
	}
	return nil
}

// documentHTTPClient is the client that fetches documents: the host is resolved here and
// only an address dialable allows is dialled (judged again as the socket connects), no
// proxy, no redirect, DocumentTimeout in all. A test's DocumentClient replaces the
// transport (and the address rule), never the rest. With AllowLoopbackDocuments a loopback
// connection skips the certificate check: it never leaves this machine, and a local test
// server's certificate is self-signed.
func (s *Server) documentHTTPClient(test *http.Client) *http.Client {
	c := &http.Client{Timeout: DocumentTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("a client metadata document must be served without redirects")
	}}
	if test != nil {
		c.Transport = test.Transport
		return c
	}
	dialer := &net.Dialer{Timeout: DocumentTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		return s.dialable(ap.Addr())
	}}
	// dial resolves host itself, so what it resolved to is judged before any connection and
	// never appears in an error. Bound: the addresses of one lookup, each dialled once.
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		ips, err := s.docLookup(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return nil, errNoAddress
		}
		last := errNoAddress
		for _, ip := range ips {
			if err := s.dialable(ip); err != nil {
				last = err
				continue
			}
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return conn, nil
			}
			last = err
		}
		return nil, last
	}
	tr := &http.Transport{
		DialContext:            dial,
		TLSHandshakeTimeout:    DocumentTimeout,
		ResponseHeaderTimeout:  DocumentTimeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableKeepAlives:      true,
	}
	if s.cfg.AllowLoopbackDocuments {
		tr.DialTLSContext = func(ctx context.Context, network, address string) (net.Conn, error) {
			conn, err := dial(ctx, network, address)
			if err != nil {
				return nil, err
			}
			host, _, _ := net.SplitHostPort(address)
			cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
			if ta, ok := conn.RemoteAddr().(*net.TCPAddr); ok && ta.IP.IsLoopback() {
				cfg.InsecureSkipVerify = true //nolint:gosec // loopback only, and only under the demo's explicit switch
			}
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		}
	}
	c.Transport = tr
	return c
}

// documentClient returns the client a document client_id stands for, fetching its document
// when not held or older than DocumentTTL. Concurrent first uses of one client_id share one
// fetch; a fetch started for client address addr holds one of its maxFetchesPerAddress places.
func (s *Server) documentClient(ctx context.Context, id, addr string) (*client, error) {
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
		s.mu.Lock()
		mine := s.fetching[addr] < maxFetchesPerAddress
		if mine {
			s.fetching[addr]++
		}
		s.mu.Unlock()
		if !mine {
			return nil, fmt.Errorf("%d client metadata documents named from your address are being fetched; try again shortly", maxFetchesPerAddress)
		}
		defer func() {
			s.mu.Lock()
			if s.fetching[addr]--; s.fetching[addr] <= 0 {
				delete(s.fetching, addr)
			}
			s.mu.Unlock()
		}()
		if !s.fetchSlots.TryAcquire(1) {
			return nil, errors.New("too many client metadata documents are being fetched; try again shortly")
		}
		defer s.fetchSlots.Release(1)
		c, err := s.fetchDocument(context.WithoutCancel(ctx), id)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.docs.putFor("", id, c, c.issuedAt.Add(DocumentTTL), s.now())
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
		// A dial error names the address dialled: it goes to the log, the page says only the kind.
		s.log.Info("client metadata document not fetched", "client_id", clip(id), "err", err)
		for _, ours := range []error{errLoopback, errNotPublic, errNoAddress} {
			if errors.Is(err, ours) {
				return nil, fmt.Errorf("could not be fetched: %w", ours)
			}
		}
		if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
			return nil, fmt.Errorf("could not be fetched within %v", DocumentTimeout)
		}
		return nil, errors.New("could not be fetched: no connection, or no trusted https answer")
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
