// Package reqid carries the correlation data of one hosted call: a request id
// (accepted from a sane incoming X-Request-Id or generated) and the W3C trace
// context (traceparent, tracestate). The transport puts them in the request
// context; the RS client copies them onto every upstream request, the access
// log and adapter error envelopes show the id, so one failure can be followed
// from a client's report to the RS log.
package reqid
