package publichost

import (
	"strings"
	"testing"
)

// TestProblem: a few hosts of each kind; internal/pdpp/webhookurl's tables
// cover the rest through the callback check.
func TestProblem(t *testing.T) {
	for _, tc := range []struct{ host, why string }{
		{"app.example", ""}, {"93.184.215.14", ""}, {"127.0.0.1", "loopback"}, {"fd00::1", "private"},
		{"64:ff9b::a00:1", "embeds"}, {"0x7f.1", "non-canonical"}, {"2130706433", "single-label"},
		{"a.b.2130706433", "non-canonical"}, {"metadata.goog", "metadata"}, {"::ffff:0:7f00:1", "non-public range"},
		{"168.63.129.16", "metadata"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := Problem(tc.host); (tc.why == "") != (got == "") || !strings.Contains(got, tc.why) {
				t.Errorf("Problem(%q) = %q, want %q", tc.host, got, tc.why)
			}
		})
	}
}
