package assets

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults applied by New.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultMaxBytes = int64(32 << 20)
)

// Reasons a fetch failed.
const (
	ReasonNotFound      = "not_found"      // no local file and a 404 (or no base URL)
	ReasonHTTPStatus    = "http_status"    // the base URL answered another non-200 status
	ReasonTimeout       = "timeout"        // the base URL did not answer in time
	ReasonUnreachable   = "unreachable"    // the request failed before any answer
	ReasonTooLarge      = "too_large"      // the asset exceeds MaxBytes
	ReasonUnreadable    = "unreadable"     // a local read failed
	ReasonInvalidPath   = "invalid_path"   // the relative path is unsafe
	ReasonNotConfigured = "not_configured" // neither folder nor base URL
)

// FetchError reports an asset that could not be loaded.
type FetchError struct {
	Path   string // the relative asset path
	Reason string // one of the Reason* constants
	Status int    // HTTP status for not_found (from HTTP) and http_status
	Err    error  // the underlying error, if any
}

func (e *FetchError) Error() string {
	msg := fmt.Sprintf("asset %s: %s", e.Path, strings.ReplaceAll(e.Reason, "_", " "))
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	return msg
}

func (e *FetchError) Unwrap() error { return e.Err }

// Config says where assets live. At least one of Dir and BaseURL is needed.
type Config struct {
	Dir      string        // local asset root, read first
	BaseURL  string        // HTTP(S) base URL, used when the local file is absent
	Timeout  time.Duration // bound of one HTTP fetch; default DefaultTimeout
	MaxBytes int64         // largest asset accepted; default DefaultMaxBytes
	Client   *http.Client  // default: a client without its own timeout
}

// Loader loads assets. It is safe for concurrent use.
type Loader struct {
	root     *os.Root
	base     *url.URL
	timeout  time.Duration
	maxBytes int64
	client   *http.Client
}

// New checks cfg and opens the local root, if any.
func New(cfg Config) (*Loader, error) {
	if cfg.Dir == "" && cfg.BaseURL == "" {
		return nil, errors.New("assets: give a local asset folder, a base URL, or both")
	}
	l := &Loader{timeout: cmp.Or(max(cfg.Timeout, 0), DefaultTimeout), maxBytes: cmp.Or(max(cfg.MaxBytes, 0), DefaultMaxBytes),
		client: cmp.Or(cfg.Client, &http.Client{})}
	if cfg.Dir != "" {
		root, err := os.OpenRoot(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("assets: folder %s: %w", cfg.Dir, err)
		}
		l.root = root
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.Close()
			return nil, fmt.Errorf("assets: base URL %q must be an absolute http(s) URL", cfg.BaseURL)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			l.Close()
			return nil, fmt.Errorf("assets: base URL %q must not carry a query or fragment", cfg.BaseURL)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		u.RawPath = ""
		l.base = u
	}
	return l, nil
}

// Close releases the local root.
func (l *Loader) Close() error {
	if l.root != nil {
		return l.root.Close()
	}
	return nil
}

// CheckPath reports whether rel is a safe relative asset path: forward
// slashes, no empty, "." or ".." segment, no leading slash, no backslash
// or NUL.
func CheckPath(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsAny(rel, "\\\x00") {
		return fmt.Errorf("unsafe asset path %q", rel)
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("unsafe asset path %q", rel)
		}
	}
	return nil
}

// Open returns the asset at rel as a stream (the local file when the folder
// has it, else the body of GET <base URL>/<rel>) and its size in bytes: the
// local file's, or the answer's Content-Length (-1 when the answer gives
// none). The caller closes the stream. Reading it fails with a too_large
// *FetchError past MaxBytes and with a timeout one when a remote answer
// outlasts the fetch timeout; other read failures are unreadable ones.
func (l *Loader) Open(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	if err := CheckPath(rel); err != nil {
		return nil, 0, &FetchError{Path: rel, Reason: ReasonInvalidPath, Err: err}
	}
	if l.root != nil {
		rc, size, err := l.openLocal(rel)
		if err == nil {
			return rc, size, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || l.base == nil {
			return nil, 0, err
		}
	}
	if l.base == nil {
		return nil, 0, &FetchError{Path: rel, Reason: ReasonNotConfigured}
	}
	return l.fetch(ctx, rel)
}

func (l *Loader) openLocal(rel string) (io.ReadCloser, int64, error) {
	f, err := l.root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, &FetchError{Path: rel, Reason: ReasonNotFound, Err: err}
	}
	if err != nil {
		return nil, 0, &FetchError{Path: rel, Reason: ReasonUnreadable, Err: err}
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, 0, &FetchError{Path: rel, Reason: ReasonUnreadable, Err: err}
	case st.IsDir():
		f.Close()
		return nil, 0, &FetchError{Path: rel, Reason: ReasonNotFound}
	case st.Size() > l.maxBytes:
		f.Close()
		return nil, 0, &FetchError{Path: rel, Reason: ReasonTooLarge}
	}
	return &stream{rel: rel, r: f, left: l.maxBytes, close: f.Close}, st.Size(), nil
}

// stream reads an opened asset: at most MaxBytes (left counts down; one
// byte more is a too_large error), read errors typed as FetchErrors.
type stream struct {
	rel   string
	r     io.Reader
	left  int64
	close func() error
}

func (s *stream) Read(p []byte) (int, error) {
	if s.left < 0 {
		return 0, &FetchError{Path: s.rel, Reason: ReasonTooLarge}
	}
	if int64(len(p)) > s.left+1 {
		p = p[:s.left+1]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if s.left < 0 {
		return 0, &FetchError{Path: s.rel, Reason: ReasonTooLarge}
	}
	if err != nil && err != io.EOF {
		reason := ReasonUnreadable
		if isTimeout(err) {
			reason = ReasonTimeout
		}
		err = &FetchError{Path: s.rel, Reason: reason, Err: err}
	}
	return n, err
}

func (s *stream) Close() error { return s.close() }

// fetch opens GET <base URL>/<rel>; the fetch timeout bounds the answer and
// the reading of its body, until the stream is closed.
func (l *Loader) fetch(ctx context.Context, rel string) (_ io.ReadCloser, _ int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	target := l.base.String() + "/" + strings.Join(segs, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, 0, &FetchError{Path: rel, Reason: ReasonUnreachable, Err: err}
	}
	resp, err := l.client.Do(req)
	if err != nil {
		reason := ReasonUnreachable
		if isTimeout(err) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = ReasonTimeout
		}
		return nil, 0, &FetchError{Path: rel, Reason: reason, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		reason := ReasonHTTPStatus
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
			reason = ReasonNotFound
		}
		return nil, 0, &FetchError{Path: rel, Reason: reason, Status: resp.StatusCode}
	}
	if resp.ContentLength > l.maxBytes {
		resp.Body.Close()
		return nil, 0, &FetchError{Path: rel, Reason: ReasonTooLarge}
	}
	closeBody := func() error { err := resp.Body.Close(); cancel(); return err }
	return &stream{rel: rel, r: resp.Body, left: l.maxBytes, close: closeBody}, resp.ContentLength, nil
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}
