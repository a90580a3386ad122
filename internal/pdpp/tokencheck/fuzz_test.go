package tokencheck

import (
	"encoding/json"
	"testing"
)

// FuzzTokenKind: a schema document that names the bearer an owner in any
// of the fields read is never taken for anything else, and only a document
// that says "client" (or a grant scope) yields the client kind.
func FuzzTokenKind(f *testing.F) {
	f.Add([]byte(`{"bearer":{"token_kind":"client"}}`))
	f.Add([]byte(`{"bearer":{"token_kind":"client","pdpp_token_kind":"owner"}}`))
	f.Add([]byte(`{"bearer":{"scope":"grant"}}`))
	f.Add([]byte(`{"bearer":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"bearer":{"token_kind":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		kind, _, ok := tokenKind(body)
		var doc struct {
			Bearer *struct {
				TokenKind string `json:"token_kind"`
				Kind      string `json:"pdpp_token_kind"`
				Scope     string `json:"scope"`
			} `json:"bearer"`
		}
		if json.Unmarshal(body, &doc) != nil || doc.Bearer == nil {
			if kind != "" {
				t.Fatalf("kind %q (ok %v) from a document without a readable bearer: %q", kind, ok, body)
			}
			return
		}
		b := doc.Bearer
		owner := b.TokenKind == "owner" || b.Kind == "owner" || b.Scope == "owner"
		if owner && kind != "owner" {
			t.Fatalf("owner marker read as %q: %q", kind, body)
		}
		if kind == "client" && b.TokenKind != "client" && b.Kind != "client" && b.Scope != "grant" {
			t.Fatalf("client kind without a client marker: %q", body)
		}
	})
}
