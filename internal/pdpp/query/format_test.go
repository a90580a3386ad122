package query

import (
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
)

// TestFieldLimitAgreesWithCatalogFormat checks that MaxFieldNameBytes, which
// messages and callers quote, is the limit the catalog format "field"
// enforces.
func TestFieldLimitAgreesWithCatalogFormat(t *testing.T) {
	if MaxFieldNameBytes != mcptools.FormatField.MaxBytes {
		t.Fatalf("MaxFieldNameBytes %d, catalog format max_bytes %d", MaxFieldNameBytes, mcptools.FormatField.MaxBytes)
	}
	if !ValidFieldName(strings.Repeat("a", MaxFieldNameBytes)) {
		t.Errorf("name at the limit refused")
	}
	if ValidFieldName(strings.Repeat("a", MaxFieldNameBytes+1)) {
		t.Errorf("name over the limit accepted")
	}
}
