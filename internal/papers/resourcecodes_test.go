package papers

import (
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
)

// TestResourceReadErrorCodes: a URI that names no paper resource is JSON-RPC
// invalid params; a paper, source or translation the snapshot lacks is
// resource-not-found (invalid params under 2026-07-28), over stdio and HTTP.
func TestResourceReadErrorCodes(t *testing.T) {
	e := newEnv(t, envOptions{})
	vit := id(snapshot.KeyViT)
	eachClient(t, e, func(t *testing.T, h *harness) {
		notFound := mcp.ErrResourceNotFound
		if mcp.IsModernProtocol(h.init.ProtocolVersion) {
			notFound = mcp.ErrInvalidParams
		}
		tests := []struct {
			uri  string
			want error
			code string
		}{
			{"paper://" + vit + "/translation/x%2F..", mcp.ErrInvalidParams, CodeValidation},
			{"paper://" + vit + "/summary/..", mcp.ErrInvalidParams, CodeValidation},
			{"paper://missing_paper/metadata", notFound, CodeNotFound},
			{"paper://" + id(snapshot.KeyNoSource) + "/source", notFound, CodeSourceNotAvailable},
			{"paper://" + vit + "/translation/fr", notFound, CodeTranslationNotAvailable},
		}
		for _, tc := range tests {
			t.Run(tc.uri, func(t *testing.T) {
				_, err := h.read(tc.uri)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.code) {
					t.Fatalf("want %v naming %s, got %v", tc.want, tc.code, err)
				}
			})
		}
	})
}
