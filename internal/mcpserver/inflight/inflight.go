package inflight

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Limiter is the process-wide bound on bytes in flight.
type Limiter struct {
	sem *semaphore.Weighted
	max int64

	mu   sync.Mutex
	held int64 // bytes reserved now, for Held and the idle hook
	peak int64 // highest held since the last idle moment
	// onIdle, when set, is called (outside mu) each time held falls back
	// to zero, with the peak reached since the previous idle moment.
	onIdle func(peak int64)
}

// New returns a Limiter of max bytes (at least 1).
func New(max int64) *Limiter {
	if max < 1 {
		max = 1
	}
	return &Limiter{sem: semaphore.NewWeighted(max), max: max}
}

// Max is the limit in bytes.
func (l *Limiter) Max() int64 { return l.max }

// Held returns the bytes reserved now.
func (l *Limiter) Held() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// OnIdle sets fn to be called each time the bytes reserved fall back to
// zero, with the highest reservation seen since the previous time. Set it
// before the Limiter is used.
func (l *Limiter) OnIdle(fn func(peak int64)) { l.onIdle = fn }

func (l *Limiter) add(n int64) {
	l.mu.Lock()
	l.held += n
	if l.held > l.peak {
		l.peak = l.held
	}
	l.mu.Unlock()
}

func (l *Limiter) sub(n int64) {
	// The count goes down before the semaphore lets anyone take the bytes
	// again, so held never shows more than max.
	l.mu.Lock()
	l.held -= n
	var peak int64
	idle := l.held == 0 && l.onIdle != nil
	if l.held == 0 {
		peak, l.peak = l.peak, 0
	}
	l.mu.Unlock()
	l.sem.Release(n)
	if idle {
		l.onIdle(peak)
	}
}

// BusyError is a reservation that could not be had: n bytes were wanted
// while the process already held its limit for other calls, and none freed
// up before the call's context ended (or n alone is over the limit).
type BusyError struct {
	Want, Max int64
	Err       error // the context's error, or nil when Want > Max
}

func (e *BusyError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("a reservation of %d bytes is over the server's limit of %d bytes in flight", e.Want, e.Max)
	}
	return fmt.Sprintf("no room for %d bytes within the call's deadline: the server holds its limit of %d bytes in flight for other calls", e.Want, e.Max)
}

func (e *BusyError) Unwrap() error { return e.Err }

// Account is one call's share of a Limiter. Its reservations are given back
// together when the last holder lets go: the call itself (Close) and each
// reply part that still carries the call's bytes (Retain). A nil *Account
// reserves nothing and never fails, so code can run without a Limiter.
type Account struct {
	l      *Limiter
	mu     sync.Mutex
	held   int64
	refs   int  // Open's reference plus one per Retain not yet released
	closed bool // Close was called
}

// Open starts an account for one call; Close it when the call is done. A
// nil Limiter gives a nil Account.
func (l *Limiter) Open() *Account {
	if l == nil {
		return nil
	}
	return &Account{l: l, refs: 1}
}

// Reserve takes n more bytes, waiting within ctx when the limiter is full.
// It fails with a *BusyError when ctx ends first, and at once when n alone
// is over the limit. x/sync's semaphore serves waiters in order, so a
// large reservation is not starved by a stream of small ones.
func (a *Account) Reserve(ctx context.Context, n int64) error {
	if a == nil || n <= 0 {
		return nil
	}
	if n > a.l.max {
		return &BusyError{Want: n, Max: a.l.max}
	}
	if err := a.l.sem.Acquire(ctx, n); err != nil {
		return &BusyError{Want: n, Max: a.l.max, Err: err}
	}
	a.took(n)
	return nil
}

// TryReserve takes n more bytes if they are free now (and nobody is
// waiting); it never waits.
func (a *Account) TryReserve(n int64) bool {
	if a == nil || n <= 0 {
		return true
	}
	if !a.l.sem.TryAcquire(n) {
		return false
	}
	a.took(n)
	return true
}

func (a *Account) took(n int64) {
	a.l.add(n)
	a.mu.Lock()
	done := a.refs == 0
	if !done {
		a.held += n
	}
	a.mu.Unlock()
	if done {
		// Reserved after everything was given back: nothing would ever
		// release it, so it goes back at once.
		a.l.sub(n)
	}
}

// Release gives back n of the bytes this account holds (at most what it
// holds), e.g. the unused part of a read buffer.
func (a *Account) Release(n int64) {
	if a == nil || n <= 0 {
		return
	}
	a.mu.Lock()
	n = min(n, a.held)
	a.held -= n
	a.mu.Unlock()
	if n > 0 {
		a.l.sub(n)
	}
}

// Held returns the bytes this account holds.
func (a *Account) Held() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// Retain keeps the account's reservations alive past Close until the
// returned function is called (at most once counts): for a reply part that
// still carries the call's bytes after the handler returned.
func (a *Account) Retain() (release func()) {
	if a == nil {
		return func() {}
	}
	a.mu.Lock()
	a.refs++
	a.mu.Unlock()
	var once sync.Once
	return func() { once.Do(a.drop) }
}

// Close ends the call's own hold; everything is given back once no
// retained part is left. Calling it more than once is a mistake that
// changes nothing.
func (a *Account) Close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	closed := a.closed
	a.closed = true
	a.mu.Unlock()
	if !closed {
		a.drop()
	}
}

func (a *Account) drop() {
	a.mu.Lock()
	a.refs--
	var n int64
	if a.refs == 0 {
		n, a.held = a.held, 0
	}
	a.mu.Unlock()
	if n > 0 {
		a.l.sub(n)
	}
}

type accountKey struct{}

// WithAccount returns ctx carrying a.
func WithAccount(ctx context.Context, a *Account) context.Context {
	return context.WithValue(ctx, accountKey{}, a)
}

// FromContext returns the account ctx carries, or nil.
func FromContext(ctx context.Context) *Account {
	a, _ := ctx.Value(accountKey{}).(*Account)
	return a
}

// IsBusy reports whether err is (or wraps) a *BusyError.
func IsBusy(err error) bool {
	var b *BusyError
	return errors.As(err, &b)
}
