// Package inflight bounds the bytes the process holds for calls in flight:
// resource-server bodies being read and replies being built. One Limiter of
// a fixed number of bytes is shared by every call of the process, fairly
// between tenants (a token's digest, or a client address, named by
// WithTenant): each tenant may hold its share while others wait, and a
// small reservation is never queued behind a large one of another tenant.
// Each call reserves through its own Account, which gives everything back
// once the call and the reply that carries its bytes are done. A
// reservation that cannot be had at once waits within the call's deadline
// and then fails with a *BusyError, so a burst of large calls queues or is
// refused instead of growing the heap.
package inflight
