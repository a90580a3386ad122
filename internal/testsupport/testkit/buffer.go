package testkit

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

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
