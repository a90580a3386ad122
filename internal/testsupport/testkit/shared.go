package testkit

import (
	"os"
	"testing"
)

// MissingShared ends a test that needs the shared/ folder beside the checkout
// (the captured RS samples, the upstream OpenAPI) when that folder is not
// there. A developer's partial checkout skips; under CI (CI set in the
// environment), where shared/ is always laid beside the clone, it fails, so a
// wrong relative path can never turn the sample tests into silent skips.
func MissingShared(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf(format, args...)
}
