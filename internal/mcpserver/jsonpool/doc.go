// Package jsonpool lends jsontext decoders over JSON text already in
// memory: Get returns one reading its bytes in place (every value it
// returns is a slice of them, valid as long as they are), Put takes it
// back; at most 32 idle ones are kept. The transport, the argument decoder,
// unseen and the adapter walk messages and RS answers with them.
//
// jsontext cannot do this itself: jsontext.NewDecoder allocates a Decoder
// (and its source) per call, too much for the look every stdio line gets
// (BenchmarkPendingRequestID: no allocation) and for BenchmarkServerCalls,
// whose allocations per call it would raise by 2 to 4.
package jsonpool
