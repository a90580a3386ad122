package inflight

import (
	"runtime/debug"
	"sync"
	"time"
)

// FreeWhenIdle returns a hook for Limiter.OnIdle that gives freed memory
// back to the operating system once the bytes in flight fall back to zero
// after a peak of at least minPeak: one collection and scavenge
// (runtime/debug.FreeOSMemory), at most once every `every`; one due sooner
// runs when the window ends. Without it a burst of large calls leaves the
// process resident at its peak for minutes: an idle process allocates
// nothing, so no collection runs to lower the heap goal that keeps the
// freed pages, until the runtime's forced collection every two minutes.
// free is the function run (nil: debug.FreeOSMemory).
func FreeWhenIdle(minPeak int64, every time.Duration, free func()) func(peak int64) {
	if free == nil {
		free = debug.FreeOSMemory
	}
	var mu sync.Mutex
	var last time.Time
	pending := false
	return func(peak int64) {
		if peak < minPeak {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if pending {
			return
		}
		pending = true
		wait := time.Until(last.Add(every))
		// Run on a goroutine of its own: the hook is called from a
		// release, which must not wait for a collection.
		// The window restarts before free runs, so a peak that ends while
		// it runs schedules the next release instead of being dropped.
		time.AfterFunc(max(wait, 0), func() {
			mu.Lock()
			last, pending = time.Now(), false
			mu.Unlock()
			free()
		})
	}
}
