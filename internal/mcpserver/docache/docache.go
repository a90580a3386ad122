package docache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults of Config.
const (
	DefaultTTL       = 10 * time.Minute
	DefaultTimeout   = 5 * time.Second
	DefaultFailMemo  = 5 * time.Second
	DefaultStaleWait = 500 * time.Millisecond
)

// ErrFetchFailed is wrapped by every error Get returns for a failed fetch
// (fresh or remembered). The cache has logged that failure once already, so
// callers need not log it again per request.
var ErrFetchFailed = errors.New("fetch failed")

// Config configures a Cache.
type Config[T any] struct {
	// Fetch reads the document. Its context carries Timeout and is not the
	// context of any one request: the fetch serves every request waiting.
	Fetch func(ctx context.Context) (T, error)
	// TTL is how long a fetched document is served without a refresh.
	TTL time.Duration
	// Timeout bounds one fetch.
	Timeout time.Duration
	// FailMemo is how long a failed fetch answers for itself, counted from the
	// moment it ends; never longer than TTL.
	FailMemo time.Duration
	// StaleWait is how long a request that holds a document past its TTL
	// waits for the refresh before it is answered with that document; the
	// refresh goes on without it.
	StaleWait time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives one warning per failed fetch, with Name; default
	// slog.Default().
	Logger *slog.Logger
	Name   string
}

// Cache is one cached document. It is safe for concurrent use.
type Cache[T any] struct {
	cfg   Config[T]
	group singleflight.Group // one key: at most one fetch in flight

	mu      sync.Mutex
	val     T
	have    bool
	fetched time.Time
	failed  time.Time // when the last failed fetch ended; zero after a success
	failErr error
	running bool // a fetch is in flight
}

// New returns a cache with cfg's zero fields set to their defaults.
func New[T any](cfg Config[T]) *Cache[T] {
	cfg.TTL = cmp.Or(max(cfg.TTL, 0), DefaultTTL)
	cfg.Timeout = cmp.Or(max(cfg.Timeout, 0), DefaultTimeout)
	cfg.FailMemo = min(cmp.Or(max(cfg.FailMemo, 0), DefaultFailMemo), cfg.TTL)
	cfg.StaleWait = cmp.Or(max(cfg.StaleWait, 0), DefaultStaleWait)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Cache[T]{cfg: cfg}
}

// Get returns the document: the cached one while younger than TTL or while a
// failure is remembered or while a refresh is in flight; otherwise it starts
// a fetch, or joins the one in flight, and waits for it: at most StaleWait
// when a previous document can be served instead, and at most until ctx
// ends.
func (c *Cache[T]) Get(ctx context.Context) (T, error) {
	c.mu.Lock()
	now := c.cfg.Now()
	val, have := c.val, c.have
	// fallback answers a failure: with the previous document when there is one.
	fallback := func(err error) (T, error) {
		if have {
			return val, nil
		}
		var zero T
		return zero, err
	}
	switch {
	case have && (now.Sub(c.fetched) < c.cfg.TTL || c.running):
		// Fresh, or a refresh is already in flight: the requests that started
		// it wait for it, not this one.
		c.mu.Unlock()
		return val, nil
	case !c.failed.IsZero() && now.Sub(c.failed) < c.cfg.FailMemo:
		err := c.failErr
		c.mu.Unlock()
		return fallback(err)
	}
	c.mu.Unlock()

	ch := c.group.DoChan("", func() (any, error) { return c.refresh(ctx) })
	var wait <-chan time.Time
	if have {
		t := time.NewTimer(c.cfg.StaleWait)
		defer t.Stop()
		wait = t.C
	}
	select {
	case r := <-ch:
		if r.Err == nil {
			return r.Val.(T), nil
		}
		return fallback(r.Err)
	case <-wait:
		return val, nil
	case <-ctx.Done():
		return fallback(ctx.Err())
	}
}

// refresh runs one fetch, detached from the request that started it, and
// records its outcome when it ends.
func (c *Cache[T]) refresh(ctx context.Context) (T, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
	defer cancel()
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	val, err := c.cfg.Fetch(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = false
	if err != nil {
		c.cfg.Logger.Warn(c.cfg.Name+" unavailable", "err", err)
		err = fmt.Errorf("%w: %w", ErrFetchFailed, err)
		c.failed, c.failErr = c.cfg.Now(), err
		return val, err
	}
	c.val, c.have, c.fetched, c.failed, c.failErr = val, true, c.cfg.Now(), time.Time{}, nil
	return val, nil
}
