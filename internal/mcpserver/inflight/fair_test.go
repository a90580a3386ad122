package inflight

import (
	"context"
	"sync"
	"testing"
	"time"
)

func tenantCtx(key string) context.Context { return WithTenant(context.Background(), key) }

// tenants is how many tenants hold or wait for bytes now.
func tenants(l *Limiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tenants)
}

// reserveAsync starts a Reserve on a and reports its error on the channel.
func reserveAsync(a *Account, ctx context.Context, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- a.Reserve(ctx, n) }()
	return done
}

// waitFor fails the test unless ch yields within d.
func waitFor(t *testing.T, ch <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %v", what, d)
		return nil
	}
}

// stillWaiting fails the test if ch yields within d.
func stillWaiting(t *testing.T, ch <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s: did not wait (err %v)", what, err)
	case <-time.After(d):
	}
}

func TestFairShares(t *testing.T) {
	t.Run("a small reservation passes a large one of another tenant", func(t *testing.T) {
		l := New(100)
		a := l.OpenFor(tenantCtx("a"))
		defer a.Close()
		if err := a.Reserve(context.Background(), 40); err != nil {
			t.Fatal(err)
		}
		big := l.OpenFor(tenantCtx("a"))
		defer big.Close()
		bigDone := reserveAsync(big, context.Background(), 90) // waits: 40 held
		stillWaiting(t, bigDone, 30*time.Millisecond, "the large reservation")
		b := l.OpenFor(tenantCtx("b"))
		defer b.Close()
		if err := waitFor(t, reserveAsync(b, context.Background(), 5), time.Second, "the small reservation"); err != nil {
			t.Fatal(err)
		}
		a.Close()
		b.Close()
		if err := waitFor(t, bigDone, time.Second, "the large reservation once room freed"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a tenant over its share waits while another waits", func(t *testing.T) {
		l := New(100)
		a := l.OpenFor(tenantCtx("a"))
		defer a.Close()
		if err := a.Reserve(context.Background(), 60); err != nil {
			t.Fatal(err)
		}
		b := l.OpenFor(tenantCtx("b"))
		defer b.Close()
		bDone := reserveAsync(b, context.Background(), 50) // 40 free: waits
		stillWaiting(t, bDone, 30*time.Millisecond, "b")
		// Two tenants: a's share is 50, and it holds 60.
		if a.TryReserve(10) {
			t.Fatal("a took more while over its share with b waiting")
		}
		aMore := reserveAsync(a, context.Background(), 10)
		stillWaiting(t, aMore, 30*time.Millisecond, "a over its share")
		a.Release(20) // a holds 40, 60 free: b first (a is still at its share with 10 more)
		if err := waitFor(t, bDone, time.Second, "b"); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(t, aMore, time.Second, "a within its share"); err != nil {
			t.Fatal(err)
		}
		if a.Held() != 50 || b.Held() != 50 || l.Held() != 100 {
			t.Fatalf("held a=%d b=%d all=%d, want 50, 50, 100", a.Held(), b.Held(), l.Held())
		}
	})
	t.Run("a starving reservation is served before later ones", func(t *testing.T) {
		defer func(d time.Duration) { starveAfter = d }(starveAfter)
		starveAfter = 50 * time.Millisecond
		l := New(100)
		holders := make([]*Account, 4)
		for i := range holders {
			holders[i] = l.OpenFor(tenantCtx(string(rune('p' + i))))
			_ = holders[i].Reserve(context.Background(), 20)
		}
		big := l.OpenFor(tenantCtx("big"))
		defer big.Close()
		bigDone := reserveAsync(big, context.Background(), 60) // 20 free
		time.Sleep(2 * starveAfter)
		holders[0].Close() // 40 free: still short of 60, and kept for it
		late := l.OpenFor(tenantCtx("late"))
		defer late.Close()
		lateDone := reserveAsync(late, context.Background(), 10)
		stillWaiting(t, lateDone, 30*time.Millisecond, "a later small reservation")
		holders[1].Close() // 60 free: the starving one goes first
		if err := waitFor(t, bigDone, time.Second, "the starving reservation"); err != nil {
			t.Fatal(err)
		}
		for _, h := range holders[2:] {
			h.Close()
		}
		if err := waitFor(t, lateDone, time.Second, "the later one"); err != nil {
			t.Fatal(err)
		}
	})
}

// recorder is an Observer for tests.
type recorder struct {
	mu      sync.Mutex
	waits   int
	refused map[string]int
}

func (r *recorder) BudgetWait(time.Duration) { r.mu.Lock(); r.waits++; r.mu.Unlock() }
func (r *recorder) BudgetRefused(reason string) {
	r.mu.Lock()
	r.refused[reason]++
	r.mu.Unlock()
}

func TestObserverAndTenantBookkeeping(t *testing.T) {
	l := New(100)
	rec := &recorder{refused: map[string]int{}}
	l.Observe(rec)
	a := l.OpenFor(tenantCtx("a"))
	if err := a.Reserve(context.Background(), 101); err == nil {
		t.Fatal("a reservation over the limit passed")
	}
	_ = a.Reserve(context.Background(), 80)
	b := l.OpenFor(tenantCtx("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := b.Reserve(ctx, 50); !IsBusy(err) {
		t.Fatalf("want busy, got %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	done := reserveAsync(b, cctx, 50)
	time.Sleep(10 * time.Millisecond)
	ccancel()
	_ = waitFor(t, done, time.Second, "the cancelled reservation")
	rec.mu.Lock()
	got := [4]int{rec.waits, rec.refused[RefusedOverLimit], rec.refused[RefusedDeadline], rec.refused[RefusedCancelled]}
	rec.mu.Unlock()
	if got != [4]int{2, 1, 1, 1} {
		t.Fatalf("waits, over_limit, deadline, cancelled = %v, want [2 1 1 1]", got)
	}
	if n := tenants(l); n != 1 {
		t.Fatalf("%d tenants known, want 1 (only a holds)", n)
	}
	a.Close()
	b.Close()
	if tenants(l) != 0 || l.Held() != 0 {
		t.Fatalf("after every account closed: %d tenants, %d held", tenants(l), l.Held())
	}
}
