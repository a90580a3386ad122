package webhookurl

import (
	"net/url"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/publichost"
)

// TestSameRulesAsTheDemoAS: the demo authorization server, which may not
// import this package, fetches client metadata documents only from hosts
// these rules call public; its copy of the rules must give the same verdict
// on every host.
func TestSameRulesAsTheDemoAS(t *testing.T) {
	urls := []string{
		"https://127.0.0.1/", "https://127.1.2.3:8443/", "https://[::1]/", "https://10.0.0.1/", "https://172.16.5.4/",
		"https://192.168.1.1/", "https://169.254.169.254/", "https://[fe80::1%25eth0]/", "https://[fd00::1]/", "https://[fec0::1]/",
		"https://0.0.0.0/", "https://0.1.2.3/", "https://[::]/", "https://100.100.100.200/", "https://224.0.0.1/",
		"https://255.255.255.255/", "https://240.0.0.1/", "https://192.0.2.1/", "https://198.18.0.1/", "https://[2001:db8::1]/",
		"https://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]/", "https://[::127.0.0.1]/", "https://[64:ff9b::a00:1]/",
		"https://[2002:a9fe:a9fe::1]/", "https://[64:ff9b:1::1]/", "https://[100::1]/", "https://[2001::1]/",
		"https://0x7f.1/", "https://0x7f000001/", "https://2130706433/", "https://127.1/", "https://0177.0.0.1/",
		"https://localhost/", "https://localhost./", "https://api.localhost/", "https://printer.local/", "https://metadata/",
		"https://metadata.google.internal/", "https://METADATA.GOOGLE.INTERNAL./", "https://instance-data.ec2.internal/",
		"https://metadata.goog/", "https://metadata.tencentyun.com/", "https://metadata.packet.net/", "https://router.home.arpa/",
		"https://x.localdomain/", "https://1.0.0.127.in-addr.arpa/", "https://intranet/", "https://under_score.example.com/",
		"https://-bad.example.com/", "https://a.b.123/",
		// Public.
		"https://hooks.example.com/", "https://HOOKS.Example.COM./", "https://xn--bcher-kva.example/", "https://8.8.8.8/",
		"https://[2001:4860:4860::8888]/", "https://[::ffff:8.8.8.8]/", "https://[2002:808:808::1]/", "https://1.2.3.4.nip.io/",
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		host := u.Hostname()
		ours, theirs := publichost.Problem(host), demoas.NotPublicHost(host)
		if (ours == "") != (theirs == "") {
			t.Errorf("%s: webhook rule %q, demo AS rule %q", host, ours, theirs)
		}
	}
}
