package demors

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// reqCtx carries what every handler needs about the request: its id, the authenticated
// grant, the raw query (for deepObject parameters and links) and the public base URL.
type reqCtx struct {
	requestID string
	grant     *grant
	path      string
	rawQuery  string
	query     url.Values
	baseURL   string // scheme://host, no trailing slash
}

type reqCtxKey struct{}

func reqCtxFrom(ctx context.Context) *reqCtx {
	rc, _ := ctx.Value(reqCtxKey{}).(*reqCtx)
	return rc
}

func newReqCtx(r *http.Request) *reqCtx {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return &reqCtx{
		requestID: "req_" + randomHex(8),
		path:      r.URL.Path,
		rawQuery:  r.URL.RawQuery,
		query:     r.URL.Query(),
		baseURL:   scheme + "://" + r.Host,
	}
}

func (rc *reqCtx) resourceMetadataURL() string {
	return rc.baseURL + "/.well-known/oauth-protected-resource"
}

// selfLink is the request path with its query exactly as received.
func (rc *reqCtx) selfLink() string {
	if rc.rawQuery == "" {
		return rc.path
	}
	return rc.path + "?" + rc.rawQuery
}

// linkWith is the request link with one parameter replaced or added, the others in order.
func (rc *reqCtx) linkWith(key, value string) string {
	var parts []string
	for p := range strings.SplitSeq(rc.rawQuery, "&") {
		k, _, _ := strings.Cut(p, "=")
		if dk, err := url.QueryUnescape(k); p != "" && (err != nil || dk != key) {
			parts = append(parts, p)
		}
	}
	parts = append(parts, url.QueryEscape(key)+"="+url.QueryEscape(value))
	return rc.path + "?" + strings.Join(parts, "&")
}

// meta is the usual list/object meta block.
func meta(warnings []object) object {
	if warnings == nil {
		warnings = []object{}
	}
	return obj("count", obj("kind", "none"), "warnings", warnings)
}

// limitClampedWarning says param was clamped; message is formatted with requested and max.
func limitClampedWarning(param string, requested, max int, message string) object {
	return obj(
		"code", "limit_clamped",
		"detail", obj("max_limit", max, "requested_limit", requested),
		"message", fmt.Sprintf(message, requested, max),
		"param", param,
	)
}
