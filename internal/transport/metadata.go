package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// wellKnownPRM is the RFC 9728 well-known prefix.
const wellKnownPRM = server.WellKnownProtectedResourcePath

// baseURL is the public origin and path prefix for r: PublicBaseURL when
// configured, otherwise the scheme and Host of the request itself.
func (st *settings) baseURL(r *http.Request) url.URL {
	if st.publicBase != nil {
		return *st.publicBase
	}
	u := url.URL{Scheme: "http", Host: r.Host}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	if u.Host == "" {
		u.Host = "localhost"
	}
	return u
}

// resourceURL is the public URL of /mcp, the resource identifier.
func (st *settings) resourceURL(r *http.Request) string {
	b := st.baseURL(r)
	return b.Scheme + "://" + b.Host + b.Path + "/mcp"
}

// metadataURL is where the protected-resource metadata of /mcp lives: the
// well-known segment goes between the host and the resource path (RFC 9728
// section 3.1).
func (st *settings) metadataURL(r *http.Request) string {
	b := st.baseURL(r)
	return b.Scheme + "://" + b.Host + wellKnownPRM + b.Path + "/mcp"
}

// prmDocument is the protected-resource metadata this server publishes.
type prmDocument struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// metadataHandler serves the RFC 9728 document for /mcp. The issuers come
// from AuthorizationServers or, lazily, from AuthorizationServersFunc; when
// that fails the reply is 503 so clients retry rather than cache a document
// without issuers.
func (st *settings) metadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"error":"method_not_allowed"}`))
			return
		}
		issuers := slices.Clone(st.AuthorizationServers)
		if len(issuers) == 0 && st.AuthorizationServersFunc != nil {
			ctx, cancel := context.WithTimeout(r.Context(), DefaultReadyTimeout)
			list, err := st.AuthorizationServersFunc(ctx)
			cancel()
			if err != nil {
				st.logger.Warn("authorization servers unavailable", "err", err)
				h.Set("Retry-After", "30")
				body, _ := json.Marshal(map[string]string{
					"error":             "temporarily_unavailable",
					"error_description": "the authorization server list could not be loaded; retry later",
				})
				writeJSON(w, http.StatusServiceUnavailable, body)
				return
			}
			issuers = list
		}
		body, _ := json.Marshal(prmDocument{
			Resource:               st.resourceURL(r),
			AuthorizationServers:   issuers,
			BearerMethodsSupported: []string{"header"},
		})
		h.Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, body)
	})
}

// maxMetadataBytes bounds the provider metadata document read.
const maxMetadataBytes = 256 << 10

// ProviderAuthorizationServers returns an AuthorizationServersFunc that reads
// authorization_servers from the provider's own protected-resource metadata
// (RFC 9728: the well-known path inserted before the provider URL's path).
// No credentials are sent. A successful answer is cached for ttl (default
// 10 minutes); on a failed refresh the previous answer is served.
func ProviderAuthorizationServers(client *http.Client, providerURL string, ttl time.Duration) (func(context.Context) ([]string, error), error) {
	u, err := url.Parse(providerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("provider URL %q must be an absolute http(s) URL", providerURL)
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	target := u.Scheme + "://" + u.Host + wellKnownPRM + strings.TrimRight(u.Path, "/")

	var (
		mu      sync.Mutex
		cached  []string
		fetched time.Time
	)
	return func(ctx context.Context) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if cached != nil && time.Since(fetched) < ttl {
			return slices.Clone(cached), nil
		}
		list, err := fetchIssuers(ctx, client, target)
		if err != nil {
			if cached != nil {
				return slices.Clone(cached), nil
			}
			return nil, err
		}
		cached, fetched = list, time.Now()
		return slices.Clone(list), nil
	}, nil
}

func fetchIssuers(ctx context.Context, client *http.Client, target string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("provider metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("provider metadata: %s answered %d", target, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("provider metadata: %w", err)
	}
	if len(raw) > maxMetadataBytes {
		return nil, errors.New("provider metadata: document too large")
	}
	var doc struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("provider metadata: %w", err)
	}
	if len(doc.AuthorizationServers) == 0 {
		return nil, errors.New("provider metadata: no authorization_servers")
	}
	for _, as := range doc.AuthorizationServers {
		if err := checkAbsoluteHTTPURL(as); err != nil {
			return nil, fmt.Errorf("provider metadata: authorization server %q: %w", as, err)
		}
	}
	return doc.AuthorizationServers, nil
}
