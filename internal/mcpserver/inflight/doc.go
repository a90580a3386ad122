// Package inflight bounds the bytes the process holds for calls in flight:
// resource-server bodies being read and replies being built. One Limiter, a
// weighted semaphore (golang.org/x/sync/semaphore) of a fixed number of
// bytes, is shared by every call of the process; each call reserves through
// its own Account, which gives everything back once the call and the reply
// that carries its bytes are done. A reservation that cannot be had at once
// waits within the call's deadline and then fails with a *BusyError, so a
// burst of large calls queues or is refused instead of growing the heap.
package inflight
