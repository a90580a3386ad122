package inflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Limiter is the process-wide bound on bytes in flight, shared fairly
// between tenants (see Tenant).
//
// The rules, which docs/security.md repeats:
//
//   - Share: while k tenants hold or wait for bytes, each may hold
//     max/k. A tenant that holds nothing may always take one reservation
//     that fits in what is free, so one large body is never refused for
//     want of a share, but it cannot grow past its share while others
//     wait.
//   - Order: a reservation that fits and keeps its tenant within its
//     share is granted at once, whoever else waits, so a small
//     reservation is never queued behind a large one of another tenant.
//     Waiting reservations are served per tenant in arrival order and
//     between tenants in turn (round robin) as bytes free up.
//   - No starvation: a reservation that has waited starveAfter is served
//     before any later one that it would not leave room for.
//   - No hold-and-wait: a caller that must wait gives back what it holds
//     for the same purpose first (rs.readBody, a full reply), and a batch
//     writes and releases each answered item before its next item runs
//     (transport), so no holder of bytes ever waits for more.
//
// golang.org/x/sync's semaphore, used before, serves one FIFO for all: one
// tenant's queue of large reservations held everyone's small ones behind
// it, which a weighted semaphore cannot express, hence this small queue.
// Its bookkeeping is bounded by the accounts open: a tenant's entry lives
// while it holds or waits for bytes.
type Limiter struct {
	max int64

	mu      sync.Mutex
	held    int64              // bytes reserved now
	peak    int64              // highest held since the last idle moment
	tenants map[string]*tenant // tenants holding or waiting; at most one per reservation outstanding
	turn    []*tenant          // tenants with waiters, in the order they are served
	obs     Observer

	// onIdle, when set, is called (outside mu) each time held falls back
	// to zero, with the peak reached since the previous idle moment.
	onIdle func(peak int64)
}

// starveAfter is how long a waiting reservation may be overtaken by later
// ones that fit before it is served first.
var starveAfter = time.Second // a var only so tests can shorten it

// tenant is one tenant's holding and queue.
type tenant struct {
	key     string
	held    int64
	waiters []*waiter // in arrival order; bounded by the tenant's calls in flight
}

// waiter is one reservation waiting for bytes.
type waiter struct {
	t     *tenant
	n     int64
	since time.Time
	ready chan struct{} // closed when granted
	done  bool          // granted (under Limiter.mu)
}

// Observer receives what a Limiter does, for metrics: each wait that ended
// (granted or not) and each refusal, by reason. *metrics.Metrics is one.
type Observer interface {
	BudgetWait(d time.Duration)
	BudgetRefused(reason string)
}

// Refusal reasons given to Observer.BudgetRefused.
const (
	RefusedOverLimit = "over_limit" // one reservation larger than the whole limit
	RefusedDeadline  = "deadline"   // the call's deadline passed while it waited
	RefusedCancelled = "cancelled"  // the call was cancelled while it waited
)

// New returns a Limiter of max bytes (at least 1).
func New(max int64) *Limiter {
	if max < 1 {
		max = 1
	}
	return &Limiter{max: max, tenants: map[string]*tenant{}}
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

// Observe sets o to be told of waits and refusals. Set it before the
// Limiter is used.
func (l *Limiter) Observe(o Observer) { l.obs = o }

// tenantLocked returns key's entry, creating it.
func (l *Limiter) tenantLocked(key string) *tenant {
	t := l.tenants[key]
	if t == nil {
		t = &tenant{key: key}
		l.tenants[key] = t
	}
	return t
}

// dropIfIdleLocked forgets t once it holds and waits for nothing.
func (l *Limiter) dropIfIdleLocked(t *tenant) {
	if t.held == 0 && len(t.waiters) == 0 && l.tenants[t.key] == t {
		delete(l.tenants, t.key)
	}
}

// fitsLocked reports whether t may take n more bytes now, leaving reserve
// bytes free for a starving waiter.
func (l *Limiter) fitsLocked(t *tenant, n, reserve int64) bool {
	if l.held+n+reserve > l.max {
		return false
	}
	if t.held == 0 {
		return true
	}
	active := int64(max(len(l.tenants), 1))
	return t.held+n <= l.max/active
}

func (l *Limiter) grantLocked(t *tenant, n int64) {
	t.held += n
	l.held += n
	if l.held > l.peak {
		l.peak = l.held
	}
}

// starvingLocked returns the oldest waiter that has waited starveAfter.
func (l *Limiter) starvingLocked(now time.Time) *waiter {
	var old *waiter
	for _, t := range l.turn {
		if w := t.waiters[0]; now.Sub(w.since) >= starveAfter && (old == nil || w.since.Before(old.since)) {
			old = w
		}
	}
	return old
}

// serveLocked grants what waiting reservations it can: a starving one
// first, then each tenant's first waiter in turn, round after round, until
// a round grants nothing. Each round grants or stops, so it ends within
// as many rounds as there are waiters.
func (l *Limiter) serveLocked() {
	now := time.Now()
	for len(l.turn) > 0 {
		var reserve int64
		if w := l.starvingLocked(now); w != nil {
			if l.held+w.n <= l.max {
				l.grantHeadLocked(w.t) // a tenant's oldest waiter is its first
				continue
			}
			reserve = w.n // only it may have what frees up next
		}
		granted := false
		for i := 0; i < len(l.turn); {
			t := l.turn[i]
			if !l.fitsLocked(t, t.waiters[0].n, reserve) {
				i++
				continue
			}
			l.grantHeadLocked(t)
			granted = true
			if len(t.waiters) > 0 && i < len(l.turn) && l.turn[i] == t {
				// Its next waiter goes to the back of the turn.
				l.turn = append(append(l.turn[:i:i], l.turn[i+1:]...), t)
				continue
			}
		}
		if !granted {
			return
		}
	}
}

// grantHeadLocked grants t's first waiter and takes t out of the turn
// when it has no more.
func (l *Limiter) grantHeadLocked(t *tenant) {
	w := t.waiters[0]
	t.waiters = t.waiters[1:]
	l.grantLocked(t, w.n)
	w.done = true
	close(w.ready)
	if len(t.waiters) == 0 {
		l.leaveTurnLocked(t)
	}
}

func (l *Limiter) leaveTurnLocked(t *tenant) {
	l.turn = slices.DeleteFunc(l.turn, func(u *tenant) bool { return u == t })
}

// take reserves n bytes for the tenant key, waiting within ctx unless
// wait is false.
func (l *Limiter) take(ctx context.Context, key string, n int64, wait bool) error {
	l.mu.Lock()
	t := l.tenantLocked(key)
	if len(t.waiters) == 0 && l.fitsLocked(t, n, l.starvingReserveLocked()) {
		l.grantLocked(t, n)
		l.mu.Unlock()
		return nil
	}
	if !wait {
		l.dropIfIdleLocked(t)
		l.mu.Unlock()
		return errNoRoom
	}
	w := &waiter{t: t, n: n, since: time.Now(), ready: make(chan struct{})}
	t.waiters = append(t.waiters, w)
	if len(t.waiters) == 1 {
		l.turn = append(l.turn, t)
	}
	l.mu.Unlock()
	select {
	case <-w.ready:
		l.waited(w.since)
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if w.done {
		// Granted as the context ended: the bytes are the caller's.
		l.mu.Unlock()
		l.waited(w.since)
		return nil
	}
	t.waiters = slices.DeleteFunc(t.waiters, func(u *waiter) bool { return u == w })
	if len(t.waiters) == 0 {
		l.leaveTurnLocked(t)
	}
	// Leaving may let others through (a share grew, a starving reserve
	// went away).
	l.serveLocked()
	l.dropIfIdleLocked(t)
	l.mu.Unlock()
	l.waited(w.since)
	reason := RefusedCancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = RefusedDeadline
	}
	l.refused(reason)
	return ctx.Err()
}

// starvingReserveLocked is what an arriving reservation must leave free
// for a starving waiter.
func (l *Limiter) starvingReserveLocked() int64 {
	if len(l.turn) == 0 {
		return 0
	}
	if w := l.starvingLocked(time.Now()); w != nil {
		return w.n
	}
	return 0
}

var errNoRoom = errors.New("inflight: no room now")

func (l *Limiter) waited(since time.Time) {
	if l.obs != nil {
		l.obs.BudgetWait(time.Since(since))
	}
}

func (l *Limiter) refused(reason string) {
	if l.obs != nil {
		l.obs.BudgetRefused(reason)
	}
}

// give returns n bytes of the tenant key and serves the waiters they make
// room for. The count goes down before anyone may take the bytes again, so
// held never shows more than max.
func (l *Limiter) give(key string, n int64) {
	l.mu.Lock()
	t := l.tenantLocked(key) // present: it holds at least n
	t.held -= n
	l.held -= n
	var peak int64
	idle := l.held == 0 && l.onIdle != nil
	if l.held == 0 {
		peak, l.peak = l.peak, 0
	}
	l.serveLocked()
	l.dropIfIdleLocked(t)
	l.mu.Unlock()
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
	key    string // the tenant it reserves for
	mu     sync.Mutex
	held   int64
	refs   int       // Open's reference plus one per Retain not yet released
	closed sync.Once // Close's own drop
}

// OpenFor starts an account for one call of the tenant ctx carries (see
// WithTenant; none: the shared tenant ""); Close it when the call is done.
// A nil Limiter gives a nil Account.
func (l *Limiter) OpenFor(ctx context.Context) *Account {
	if l == nil {
		return nil
	}
	return &Account{l: l, key: Tenant(ctx), refs: 1}
}

// Open is OpenFor of the shared tenant "", for work of no one tenant.
func (l *Limiter) Open() *Account { return l.OpenFor(context.Background()) }

// Reserve takes n more bytes, waiting within ctx when the limiter is full
// or the tenant holds its share (see Limiter). It fails with a *BusyError
// when ctx ends first, and at once when n alone is over the limit.
func (a *Account) Reserve(ctx context.Context, n int64) error {
	if a == nil || n <= 0 {
		return nil
	}
	if n > a.l.max {
		a.l.refused(RefusedOverLimit)
		return &BusyError{Want: n, Max: a.l.max}
	}
	if err := a.l.take(ctx, a.key, n, true); err != nil {
		return &BusyError{Want: n, Max: a.l.max, Err: err}
	}
	a.took(n)
	return nil
}

// TryReserve takes n more bytes if they are free now within the tenant's
// share (and none of its own reservations waits); it never waits.
func (a *Account) TryReserve(n int64) bool {
	if a == nil || n <= 0 {
		return true
	}
	if n > a.l.max || a.l.take(context.Background(), a.key, n, false) != nil {
		return false
	}
	a.took(n)
	return true
}

func (a *Account) took(n int64) {
	a.mu.Lock()
	done := a.refs == 0
	if !done {
		a.held += n
	}
	a.mu.Unlock()
	if done {
		// Reserved after everything was given back: nothing would ever
		// release it, so it goes back at once.
		a.l.give(a.key, n)
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
		a.l.give(a.key, n)
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
	return sync.OnceFunc(a.drop)
}

// Close ends the call's own hold; everything is given back once no
// retained part is left. Calling it more than once is a mistake that
// changes nothing.
func (a *Account) Close() {
	if a != nil {
		a.closed.Do(a.drop)
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
		a.l.give(a.key, n)
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

type tenantKey struct{}

// WithTenant returns ctx naming the tenant whose calls it carries: the
// fair-share key of the Limiter (a token's digest, a client address; never
// a token itself).
func WithTenant(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, tenantKey{}, key)
}

// Tenant returns the tenant ctx names, or "".
func Tenant(ctx context.Context) string {
	k, _ := ctx.Value(tenantKey{}).(string)
	return k
}

// IsBusy reports whether err is (or wraps) a *BusyError.
func IsBusy(err error) bool {
	_, ok := errors.AsType[*BusyError](err)
	return ok
}
