package transport

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// The client address of a request, which every per-address bound counts
// against and the access log names, is the TCP peer's, unless the peer is a
// trusted proxy (HTTPConfig.TrustedProxies): then the right-most address of
// the forwarded header that is not itself a trusted proxy. Anything left of
// it was written by the client and is never believed; a peer outside the
// trusted networks has its forwarded headers ignored whole.

// Forwarded headers the client address may be read from (HTTPConfig.ForwardedHeader).
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"
)

// maxForwardedHops bounds the addresses of a forwarded header that are
// looked at, from the right: no deployment has more proxies in a row, and a
// client cannot make the walk longer by sending a long header.
const maxForwardedHops = 16

// proxySet is the parsed TrustedProxies with the header they write.
type proxySet struct {
	nets   []netip.Prefix // at most what the operator listed
	header string         // HeaderXForwardedFor or HeaderForwarded
}

// parseProxies parses a list of CIDRs (a bare address counts as its /32 or
// /128) and the header name.
func parseProxies(list []string, header string) (proxySet, error) {
	ps := proxySet{header: HeaderXForwardedFor}
	switch strings.ToLower(strings.TrimSpace(header)) {
	case "", "x-forwarded-for":
	case "forwarded":
		ps.header = HeaderForwarded
	default:
		return ps, fmt.Errorf("forwarded header %q: expected %s or %s", header, HeaderXForwardedFor, HeaderForwarded)
	}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if a, aerr := netip.ParseAddr(s); aerr == nil { // a bare address
			a = a.Unmap()
			p, err = netip.PrefixFrom(a, a.BitLen()), nil
		}
		if err != nil {
			return ps, fmt.Errorf("trusted proxy %q: expected a CIDR such as 10.0.0.0/8", s)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		ps.nets = append(ps.nets, p.Masked())
	}
	return ps, nil
}

func (ps proxySet) trusted(a netip.Addr) bool {
	return slices.ContainsFunc(ps.nets, func(p netip.Prefix) bool { return p.Contains(a) })
}

// resolve returns the client address of a request from its RemoteAddr and
// header: the peer when untrusted, else the right-most untrusted forwarded
// address, or the left-most looked at when all are trusted. An entry that
// does not parse (an obfuscated or "unknown" node) stops the walk at the hop
// before it. The zero Addr when peer does not parse.
func (ps proxySet) resolve(peer string, h http.Header) netip.Addr {
	ap, err := netip.ParseAddrPort(peer)
	if err != nil {
		return netip.Addr{}
	}
	client := ap.Addr().Unmap().WithZone("")
	if len(ps.nets) == 0 || !ps.trusted(client) {
		return client
	}
	for _, hop := range forwardedHops(h, ps.header) {
		a, ok := parseHop(hop, ps.header)
		if !ok {
			return client
		}
		client = a
		if !ps.trusted(a) {
			return client
		}
	}
	return client
}

// forwardedHops returns at most the last maxForwardedHops entries of the
// header's values, right-most first (several header lines count as one
// list).
func forwardedHops(h http.Header, name string) []string {
	var hops []string
	for _, v := range slices.Backward(h.Values(name)) {
		for _, hop := range slices.Backward(strings.Split(v, ",")) {
			if len(hops) == maxForwardedHops {
				return hops
			}
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// parseHop reads one hop: an X-Forwarded-For entry (an address, maybe with
// a port or brackets) or a Forwarded element's for= parameter (RFC 7239).
func parseHop(hop, header string) (netip.Addr, bool) {
	if header == HeaderForwarded {
		forwardedFor := "" // none: no address
		for pair := range strings.SplitSeq(hop, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.EqualFold(strings.TrimSpace(k), "for") {
				forwardedFor = strings.Trim(strings.TrimSpace(v), `"`)
				break
			}
		}
		hop = forwardedFor
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(hop, "["), "]"))
	if ap, perr := netip.ParseAddrPort(hop); perr == nil {
		a, err = ap.Addr(), nil
	}
	return a.Unmap().WithZone(""), err == nil
}

type clientAddrKey struct{}

// withClientAddr returns r with its client address (see resolve) in its
// context, once: an address already there is kept.
func (ps proxySet) withClientAddr(r *http.Request) *http.Request {
	if _, ok := r.Context().Value(clientAddrKey{}).(netip.Addr); ok {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), clientAddrKey{}, ps.resolve(r.RemoteAddr, r.Header)))
}

// clientAddrOf is r's client address as observe resolved it, or the peer's.
func clientAddrOf(r *http.Request) netip.Addr {
	if a, ok := r.Context().Value(clientAddrKey{}).(netip.Addr); ok {
		return a
	}
	return proxySet{}.resolve(r.RemoteAddr, nil)
}

// ClientAddr returns the client address of the hosted request ctx belongs
// to, as "address:0" (a form net/netip.ParseAddrPort reads), after the
// trusted proxies are looked through (HTTPConfig.TrustedProxies); "" outside
// a hosted request or when the peer's address did not parse. Products limit
// their own per-client work with it (the token check's rate).
func ClientAddr(ctx context.Context) string {
	a, ok := ctx.Value(clientAddrKey{}).(netip.Addr)
	if !ok || !a.IsValid() {
		return ""
	}
	return netip.AddrPortFrom(a, 0).String()
}

// clientKeyOf is the client key (see clientKey) of r's client address.
func clientKeyOf(r *http.Request) netip.Prefix { return addrKey(clientAddrOf(r)) }
