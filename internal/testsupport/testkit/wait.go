package testkit

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Patience bounds how long a test waits for something another goroutine or
// process does asynchronously (a log line written after the reply, a
// metric counted after it, a webhook delivered). It is generous so that a
// slow, loaded, race-enabled run does not fail a correct program; waits
// return as soon as their condition holds, so a passing run never pays it.
const Patience = 20 * time.Second

// pollEvery is the pause between two checks of a condition.
const pollEvery = 5 * time.Millisecond

// Eventually checks cond until it holds or within has passed, and reports
// whether it held: at most within/5ms+2 times, the last after the deadline
// (so a condition true during the final pause is still seen).
func Eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pollEvery)
	}
}

// CPUBudget is a CPU-time bound as a test asserts it: d, or ten times d
// under the race detector.
func CPUBudget(d time.Duration) time.Duration {
	if RaceEnabled {
		return 10 * d
	}
	return d
}

// Buffer is a bytes.Buffer that server goroutines and a test may write and
// read at the same time, e.g. as a log sink.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitCount waits (up to within) until s occurs at least n times in the
// buffer, and returns the buffer's contents then.
func (l *Buffer) WaitCount(s string, n int, within time.Duration) string {
	var out string
	Eventually(within, func() bool {
		out = l.String()
		return strings.Count(out, s) >= n
	})
	return out
}
