package webhookurl

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	refusedHosted := []string{
		// Literal internal addresses.
		"https://127.0.0.1/hook",
		"https://127.1.2.3:8443/hook",
		"https://[::1]/hook",
		"https://10.0.0.1/hook",
		"https://172.16.5.4/hook",
		"https://192.168.1.1/hook",
		"https://169.254.169.254/latest/meta-data/",
		"https://[fe80::1%25eth0]/hook",
		"https://[fd00::1]/hook",
		"https://[fec0::1]/hook",
		"https://0.0.0.0/hook",
		"https://0.1.2.3/hook",
		"https://[::]/hook",
		"https://100.100.100.200/hook",
		"https://224.0.0.1/hook",
		"https://255.255.255.255/hook",
		"https://240.0.0.1/hook",
		// The same addresses in other spellings.
		"https://[::ffff:127.0.0.1]/hook",
		"https://[::ffff:7f00:1]/hook",
		"https://[::ffff:169.254.169.254]/hook",
		"https://[::127.0.0.1]/hook",
		"https://[64:ff9b::a00:1]/hook",
		"https://[2002:a9fe:a9fe::1]/hook",
		"https://0x7f.1/hook",
		"https://0x7f000001/hook",
		"https://2130706433/hook",
		"https://127.1/hook",
		"https://0177.0.0.1/hook",
		"https://017700000001/hook",
		"https://%31%32%37.0.0.1/hook",
		// IPv4-translated (::ffff:0:0:0/96), whatever it embeds.
		"https://[::ffff:0:7f00:1]/hook",
		"https://[::ffff:0:a9fe:a9fe]/hook",
		"https://[::ffff:0:127.0.0.1]/hook",
		"https://[::ffff:0:808:808]/hook",
		// Cloud metadata services at public addresses, in any spelling.
		"https://168.63.129.16/hook",
		"https://[::ffff:168.63.129.16]/hook",
		"https://[64:ff9b::a83f:8110]/hook",
		// Ports that cannot be dialled.
		"https://hooks.example.com:0/hook",
		"https://hooks.example.com:99999/hook",
		"https://hooks.example.com:65536/hook",
		"https://hooks.example.com:00443/hook",
		"https://8.8.8.8:0/hook",
		// Names that reach internal hosts.
		"https://localhost/hook",
		"https://localhost./hook",
		"https://LOCALHOST:8443/hook",
		"https://api.localhost/hook",
		"https://printer.local/hook",
		"https://metadata/computeMetadata/v1/",
		"https://metadata.google.internal/computeMetadata/v1/",
		"https://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/",
		"https://instance-data/latest/",
		"https://instance-data.ec2.internal/latest/",
		"https://metadata.goog/",
		"https://metadata.tencentyun.com/",
		"https://router.home.arpa/",
		"https://intranet/hook",
		"https://under_score.example.com/hook",
		"https://bücher.example/hook",
		"https://-bad.example.com/hook",
		// Not https.
		"http://127.0.0.1:8080/hook",
		"http://localhost/hook",
		"http://hooks.example.com/hook",
		"ftp://hooks.example.com/hook",
	}
	for _, raw := range refusedHosted {
		t.Run("refused/"+raw, func(t *testing.T) {
			if err := Check(raw, false); err == nil {
				t.Fatalf("%s accepted", raw)
			} else if !strings.Contains(err.Error(), "callback_url") {
				t.Errorf("error %q does not name callback_url", err)
			}
		})
	}
	accepted := []string{
		"https://hooks.example.com/pdpp",
		"https://hooks.example.com:8443/pdpp?x=1",
		"https://HOOKS.Example.COM./pdpp",
		"https://xn--bcher-kva.example/hook",
		"https://8.8.8.8/hook",
		"https://[2001:4860:4860::8888]/hook",
		"https://[::ffff:8.8.8.8]/hook",
		"https://168.63.129.17/hook",
		"https://hooks.example.com:1/hook",
		"https://hooks.example.com:65535/hook",
		"https://hooks.example.com:/hook", // an empty port is the default
		"https://1.2.3.4.nip.io/hook",     // what a name resolves to is the RS's to check
	}
	for _, raw := range accepted {
		t.Run("accepted/"+raw, func(t *testing.T) {
			if err := Check(raw, false); err != nil {
				t.Fatalf("%s refused: %v", raw, err)
			}
		})
	}
}

func TestCheckAllowPrivate(t *testing.T) {
	tests := []struct {
		raw string
		ok  bool
	}{
		{"https://127.0.0.1:9/hook", true},
		{"https://10.0.0.1/hook", true},
		{"https://metadata.google.internal/x", true},
		{"http://127.0.0.1:9/hook", true},
		{"http://127.0.0.2:9/hook", true},
		{"http://localhost:9/hook", true},
		{"http://[::1]:9/hook", true},
		{"http://[::ffff:127.0.0.1]:9/hook", true},
		{"http://10.0.0.8/hook", false},
		{"http://localhost.example.com/hook", false},
		{"ftp://127.0.0.1/hook", false},
		{"/relative", false},
		{"https://user:pw@127.0.0.1/hook", false},
		{"https://127.0.0.1/hook#frag", false},
		{" https://127.0.0.1/hook", false},
		{"https://127.0.0.1/" + strings.Repeat("a", MaxBytes), false},
		{"https://127.0.0.1:0/hook", false},
		{"http://127.0.0.1:99999/hook", false},
		{"https://168.63.129.16/hook", true}, // local development allows any https host
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			err := Check(tc.raw, true)
			if (err == nil) != tc.ok {
				t.Fatalf("Check(%q, true) = %v, want ok=%v", tc.raw, err, tc.ok)
			}
		})
	}
}

// FuzzCheck: a URL the hosted check accepts is https and its host parses as
// a public address or a multi-label DNS name.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com/x", "https://127.0.0.1/", "https://[::ffff:10.0.0.1]/", "https://0x7f.1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if Check(raw, false) != nil {
			return
		}
		if !strings.HasPrefix(strings.ToLower(raw), "https://") {
			t.Fatalf("%q accepted without https", raw)
		}
		if Check(raw, true) != nil {
			t.Fatalf("%q accepted hosted but refused for local development", raw)
		}
	})
}
