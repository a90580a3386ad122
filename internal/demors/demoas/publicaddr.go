package demoas

import (
	"net/netip"
	"strings"
)

// The rules below decide which hosts this server fetches a client metadata
// document from. They are the rules the adapter applies to webhook callback
// URLs (package internal/pdpp/webhookurl, which this package may not import;
// a test of internal/pdpp/cli holds the two to the same answers): a public DNS
// name or a public IP address, never loopback, private, link-local,
// unique-local or other non-public ranges (also in IPv4-mapped, NAT64 or 6to4
// form), numeric names in non-canonical forms, single-label names, reserved
// local suffixes or cloud metadata names. The address a name resolves to is
// judged again when the fetch dials it (see documentFetcher).

// NotPublicHost says why host (no brackets, no port) is not a public host, or
// returns "" when it is.
func NotPublicHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return notPublicAddr(ip)
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !isDNSName(name) {
		return "is neither a DNS name nor an IP address in its canonical form"
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return "is a single-label name, which resolves to local or internal hosts"
	}
	if last := labels[len(labels)-1]; isAllDigits(last) || strings.HasPrefix(last, "0x") {
		return "is a numeric address in a non-canonical form"
	}
	for _, suffix := range []string{"localhost", "local", "localdomain", "internal", "home.arpa", "in-addr.arpa", "ip6.arpa"} {
		if name == suffix || strings.HasSuffix(name, "."+suffix) {
			return "is in the reserved local domain ." + suffix
		}
	}
	for _, m := range []string{"metadata.goog", "metadata.tencentyun.com", "metadata.platformequinix.com", "metadata.packet.net"} {
		if name == m {
			return "is a cloud metadata service"
		}
	}
	return ""
}

var (
	// Ranges netip's predicates do not flag but that hold no public host.
	nonPublicV4 = prefixes("0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4",
		"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
	nonPublicV6 = prefixes("fec0::/10", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "2001::/23")
	// Prefixes whose addresses embed an IPv4 address, judged by that address.
	v4Compat = netip.MustParsePrefix("::/96")
	v4NAT64  = netip.MustParsePrefix("64:ff9b::/96")
	v4In6to4 = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// notPublicAddr says why ip is not a public unicast address, or returns "".
func notPublicAddr(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.IsUnspecified():
		return "is the unspecified address"
	case ip.IsLoopback():
		return "is a loopback address"
	case ip.IsPrivate():
		return "is a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "is a link-local address"
	case !ip.IsGlobalUnicast():
		return "is not a unicast address"
	}
	if ip.Is4() {
		for _, p := range nonPublicV4 {
			if p.Contains(ip) {
				return "is in the non-public range " + p.String()
			}
		}
		return ""
	}
	b := ip.As16()
	var embedded netip.Addr
	switch {
	case v4Compat.Contains(ip), v4NAT64.Contains(ip):
		embedded = netip.AddrFrom4([4]byte(b[12:16]))
	case v4In6to4.Contains(ip):
		embedded = netip.AddrFrom4([4]byte(b[2:6]))
	}
	if embedded.IsValid() {
		if why := notPublicAddr(embedded); why != "" {
			return "embeds an IPv4 address that " + why
		}
	}
	for _, p := range nonPublicV6 {
		if p.Contains(ip) {
			return "is in the non-public range " + p.String()
		}
	}
	return ""
}

// isDNSName: letters, digits and hyphens in dot-separated labels of 1 to 63
// characters (no leading or trailing hyphen), at most 253 characters.
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
