package store

import (
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

func TestMain(m *testing.M) { testkit.RunInTempDir(m, "paper-store-test-", &fixtureDir) }
