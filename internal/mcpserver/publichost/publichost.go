package publichost

import (
	"net/netip"
	"slices"
	"strings"
)

// Problem says why host (as url.Hostname returns it: no brackets, no port)
// is not a public host, or returns "".
func Problem(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return AddrProblem(ip)
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !dnsName(name) {
		return "is neither a DNS name (letters, digits and hyphens in dot-separated labels; write international names in their xn-- form) nor an IP address in its canonical form"
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return "is a single-label name, which resolves to local or internal hosts"
	}
	if last := labels[len(labels)-1]; strings.TrimLeft(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return "is a numeric address in a non-canonical form"
	}
	for _, suffix := range localSuffixes {
		if name == suffix || strings.HasSuffix(name, "."+suffix) {
			return "is in the reserved local domain ." + suffix
		}
	}
	if slices.Contains(metadataHosts, name) {
		return "is a cloud metadata service"
	}
	return ""
}

// localSuffixes are domains that never name a public host: special-use names
// (RFC 6761, RFC 6762, RFC 8375) and the private-use .internal, under which
// cloud providers name their metadata services (metadata.google.internal,
// instance-data.ec2.internal).
var localSuffixes = []string{"localhost", "local", "localdomain", "internal", "home.arpa", "in-addr.arpa", "ip6.arpa"}

// metadataHosts are public-looking names of cloud metadata services, which
// answer the machine that asks with its own credentials. Single-label names
// (metadata, instance-data) are refused already.
var metadataHosts = []string{
	"metadata.goog",
	"metadata.tencentyun.com",
	"metadata.platformequinix.com",
	"metadata.packet.net",
}

// metadataAddrs are public IPv4 addresses at which a cloud answers the
// machine that asks with its own configuration or credentials.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("168.63.129.16"), // Azure wire server (and its DNS and health probes)
}

// nonPublic4 are IPv4 ranges that netip's predicates do not flag but that
// never hold a public receiver.
var nonPublic4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network": 0.x reaches the local host
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier NAT; a metadata address of some clouds)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
}

// nonPublic6 are IPv6 ranges likewise.
var nonPublic6 = []netip.Prefix{
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("2001::/23"),      // IETF protocol assignments (Teredo and others)
	// IPv4-translated (SIIT, RFC 2765): ::ffff:0:a.b.c.d names an IPv4 host
	// only inside a translator, never a public receiver, and some stacks
	// reach the embedded address (::ffff:0:7f00:1 is 127.0.0.1).
	netip.MustParsePrefix("::ffff:0:0:0/96"),
}

// Prefixes whose addresses embed an IPv4 address, judged by that address.
var (
	compat4 = netip.MustParsePrefix("::/96")        // IPv4-compatible (deprecated)
	nat64   = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix
	sixTo4  = netip.MustParsePrefix("2002::/16")    // 6to4
)

// AddrProblem says why ip is not a public unicast address, or returns "".
func AddrProblem(ip netip.Addr) string {
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
	if ip.Is4() && slices.Contains(metadataAddrs, ip) {
		return "is a cloud metadata service"
	}
	ranges, b := nonPublic4, ip.As16()
	if ip.Is6() {
		ranges = nonPublic6
		var v4 []byte
		switch {
		case compat4.Contains(ip), nat64.Contains(ip):
			v4 = b[12:16]
		case sixTo4.Contains(ip):
			v4 = b[2:6]
		}
		if v4 != nil {
			if why := AddrProblem(netip.AddrFrom4([4]byte(v4))); why != "" {
				return "embeds an IPv4 address that " + why
			}
		}
	}
	for _, p := range ranges {
		if p.Contains(ip) {
			return "is in the non-public range " + p.String()
		}
	}
	return ""
}

// dnsName reports whether s is a host name of letters, digits and hyphens in
// dot-separated labels of 1 to 63 characters (no leading or trailing
// hyphen), at most 253 characters in all.
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' ||
			strings.TrimLeft(label, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
	}
	return true
}
