package testkit

import (
	"bytes"
	"sync"
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
