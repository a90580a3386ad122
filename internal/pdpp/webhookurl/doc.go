// Package webhookurl decides whether a webhook callback URL may be handed to
// the resource server: an absolute https URL whose host is a public DNS name
// or a public IP address. Literal loopback, private, link-local, unique-local,
// unspecified and other non-public addresses (also written IPv4-mapped, in
// NAT64 or 6to4 form), names that are not plain DNS names (numeric forms
// such as 0x7f.1 or 2130706433 that some resolvers read as addresses,
// single-label names that resolve through search domains), reserved local
// suffixes and well-known cloud metadata names are refused, unless the
// operator allows private callbacks for local development. What a public
// name resolves to, and where a redirect leads, only the resource server
// can see when it delivers: those checks remain its own.
package webhookurl
