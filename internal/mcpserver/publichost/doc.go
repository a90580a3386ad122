// Package publichost decides whether a host may be reached from a hosted
// server on someone else's say-so (a webhook callback, a client metadata
// document): a public DNS name or a public unicast IP address. Literal
// loopback, private, link-local, unique-local, unspecified and other
// non-public addresses (also written IPv4-mapped, IPv4-translated, in NAT64
// or 6to4 form), names that are not plain DNS names (numeric forms such as
// 0x7f.1 or 2130706433 that some resolvers read as addresses, single-label
// names that resolve through search domains), reserved local suffixes and
// well-known cloud metadata names and addresses are not public. What a
// public name resolves to is judged again, with AddrProblem, by whoever dials.
package publichost
