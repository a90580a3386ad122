package webhookurl

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/publichost"
)

// MaxBytes bounds a callback URL.
const MaxBytes = 2048

// Check returns nil when raw may be sent to the RS as a callback URL, and an
// error whose text says why not (for a message naming the argument)
// otherwise. Without allowPrivate only https to a public host passes. With
// allowPrivate (local development) any https host passes, and http too on a
// loopback host (localhost, 127.0.0.0/8, ::1).
func Check(raw string, allowPrivate bool) error {
	if raw != strings.TrimSpace(raw) || raw == "" {
		return fmt.Errorf("callback_url must be a URL without surrounding white space")
	}
	if len(raw) > MaxBytes {
		return fmt.Errorf("callback_url is longer than %d characters", MaxBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("callback_url must be an absolute URL such as https://hooks.example.com/pdpp")
	}
	if u.User != nil {
		return fmt.Errorf("callback_url must not carry user credentials")
	}
	if u.Fragment != "" {
		return fmt.Errorf("callback_url must not have a #fragment")
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return fmt.Errorf("callback_url port %q is not a port number from 1 to 65535; give a port from 1 to 65535, or none for the scheme's default", clip(p))
	}
	host := u.Hostname()
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if allowPrivate && isLoopbackHost(host) {
			return nil
		}
		if allowPrivate {
			return fmt.Errorf("callback_url must use https; http is accepted only on a loopback host (localhost, 127.0.0.0/8, ::1), not %q", clip(host))
		}
		return fmt.Errorf("callback_url must use https, not http")
	default:
		return fmt.Errorf("callback_url must use https, not %q", clip(u.Scheme))
	}
	if allowPrivate {
		return nil
	}
	if why := publichost.Problem(host); why != "" {
		return fmt.Errorf("callback_url host %q %s; give the public https address of the receiver (this server refuses internal callback addresses unless its operator allows them for local development)", clip(host), why)
	}
	return nil
}

// validPort reports whether port (as url.Port returns it: digits) can be
// dialled. url.Parse checks only that a port is digits, so 0 and 99999
// pass it; a leading zero is refused too, as a spelling that parsers read
// differently.
func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return len(port) <= 5 && port[0] != '0' && err == nil && n >= 1 && n <= 65535
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.WithZone("").Unmap().IsLoopback()
}

// clip shortens an untrusted part of the URL for a message.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
