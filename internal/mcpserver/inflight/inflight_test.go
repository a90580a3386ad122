package inflight

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestAccountGivesBackWhenLastHolderLetsGo(t *testing.T) {
	cases := []struct {
		name     string
		retains  int  // parts retained before Close
		release  int  // of those, released before the check
		wantHeld bool // bytes still held after Close and the releases
	}{
		{"closed alone", 0, 0, false},
		{"one part still retained", 1, 0, true},
		{"every part released", 2, 2, false},
		{"one of two parts released", 2, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(100)
			a := l.Open()
			if err := a.Reserve(context.Background(), 60); err != nil {
				t.Fatal(err)
			}
			var rel []func()
			for range tc.retains {
				rel = append(rel, a.Retain())
			}
			a.Close()
			a.Close() // a second Close changes nothing
			for _, r := range rel[:tc.release] {
				r()
				r() // a second call of the same release changes nothing
			}
			if got := l.Held() > 0; got != tc.wantHeld {
				t.Fatalf("held %d after close, want held=%v", l.Held(), tc.wantHeld)
			}
			for _, r := range rel[tc.release:] {
				r()
			}
			if l.Held() != 0 {
				t.Fatalf("held %d after every holder let go", l.Held())
			}
		})
	}
}

func TestReserveWaitsWithinItsDeadline(t *testing.T) {
	cases := []struct {
		name    string
		want    int64
		freeIn  time.Duration // the other call closes after this; 0: never
		wait    time.Duration // the waiting call's deadline
		wantErr bool
	}{
		{"room frees up in time", 80, 20 * time.Millisecond, 5 * time.Second, false},
		{"no room within the deadline", 80, 0, 50 * time.Millisecond, true},
		{"over the limit alone fails at once", 101, 0, 5 * time.Second, true},
		{"fits beside the other", 30, 0, 50 * time.Millisecond, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(100)
			other := l.Open()
			if err := other.Reserve(context.Background(), 70); err != nil {
				t.Fatal(err)
			}
			if tc.freeIn > 0 {
				time.AfterFunc(tc.freeIn, other.Close)
			} else {
				defer other.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.wait)
			defer cancel()
			a := l.Open()
			defer a.Close()
			start := time.Now()
			err := a.Reserve(ctx, tc.want)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reserve(%d) = %v, want error %v", tc.want, err, tc.wantErr)
			}
			if err != nil {
				var busy *BusyError
				if !errors.As(err, &busy) || busy.Want != tc.want || busy.Max != 100 || !IsBusy(err) {
					t.Fatalf("error %v is not a BusyError naming %d of 100", err, tc.want)
				}
				if tc.want > 100 && time.Since(start) > time.Second {
					t.Errorf("a reservation over the limit waited %v", time.Since(start))
				}
				if a.Held() != 0 {
					t.Errorf("a failed reservation holds %d", a.Held())
				}
			} else if a.Held() != tc.want {
				t.Errorf("account holds %d, want %d", a.Held(), tc.want)
			}
		})
	}
}

func TestTryReserveAndRelease(t *testing.T) {
	l := New(100)
	a := l.Open()
	if !a.TryReserve(90) {
		t.Fatal("TryReserve(90) on an empty limiter failed")
	}
	b := l.Open()
	if b.TryReserve(20) {
		t.Fatal("TryReserve(20) succeeded with 90 of 100 held")
	}
	a.Release(50)
	a.Release(1000) // more than held: gives back what is held
	if a.Held() != 0 || l.Held() != 0 {
		t.Fatalf("after releases: account %d, limiter %d", a.Held(), l.Held())
	}
	if !b.TryReserve(100) {
		t.Fatal("TryReserve(100) on an empty limiter failed")
	}
	b.Close()
	a.Close()
	if l.Held() != 0 {
		t.Fatalf("limiter holds %d after every account closed", l.Held())
	}
}

func TestReserveAfterCloseIsGivenBack(t *testing.T) {
	l := New(100)
	a := l.Open()
	a.Close()
	if err := a.Reserve(context.Background(), 40); err != nil {
		t.Fatal(err)
	}
	if l.Held() != 0 {
		t.Fatalf("a reservation on a closed account is still held: %d", l.Held())
	}
}

func TestOnIdleReportsThePeak(t *testing.T) {
	l := New(100)
	var mu sync.Mutex
	var peaks []int64
	l.OnIdle(func(p int64) { mu.Lock(); peaks = append(peaks, p); mu.Unlock() })
	a, b := l.Open(), l.Open()
	_ = a.Reserve(context.Background(), 30)
	_ = b.Reserve(context.Background(), 50)
	a.Close()
	b.Close()
	c := l.Open()
	_ = c.Reserve(context.Background(), 10)
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(peaks) != 2 || peaks[0] != 80 || peaks[1] != 10 {
		t.Fatalf("idle peaks %v, want [80 10]", peaks)
	}
}

func TestNilAccountReservesNothing(t *testing.T) {
	var l *Limiter
	a := l.Open()
	if a != nil {
		t.Fatal("a nil limiter opened an account")
	}
	if err := a.Reserve(context.Background(), 1<<40); err != nil || !a.TryReserve(1<<40) || a.Held() != 0 {
		t.Fatal("a nil account reserved or failed")
	}
	a.Retain()()
	a.Release(1)
	a.Close()
	if FromContext(WithAccount(context.Background(), a)) != nil {
		t.Fatal("a nil account came back from the context as non-nil")
	}
}

func TestConcurrentAccountsNeverPassTheLimit(t *testing.T) {
	l := New(1000)
	var mu sync.Mutex
	var over bool
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := l.Open()
			defer a.Close()
			for j := range 20 {
				if err := a.Reserve(context.Background(), int64(50+(i*7+j)%200)); err != nil {
					t.Error(err)
					return
				}
				if h := l.Held(); h > 1000 {
					mu.Lock()
					over = true
					mu.Unlock()
				}
				a.Release(a.Held())
			}
		}()
	}
	wg.Wait()
	if over || l.Held() != 0 {
		t.Fatalf("limit passed: %v, held at the end %d", over, l.Held())
	}
}

func TestFreeWhenIdle(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	free := func() { mu.Lock(); at = append(at, time.Now()); mu.Unlock() }
	runs := func() int { mu.Lock(); defer mu.Unlock(); return len(at) }
	hook := FreeWhenIdle(1000, 200*time.Millisecond, free)
	hook(999) // below the peak that matters
	time.Sleep(50 * time.Millisecond)
	if runs() != 0 {
		t.Fatal("a small peak freed memory")
	}
	hook(5000)
	deadline := time.Now().Add(5 * time.Second)
	for runs() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if runs() != 1 {
		t.Fatal("a large peak did not free memory")
	}
	// Two more idle moments within the window: one release, at its end.
	hook(5000)
	hook(5000)
	for runs() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 {
		t.Fatalf("%d releases, want 2", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 190*time.Millisecond {
		t.Fatalf("releases %v apart, want at least the window", gap)
	}
}
