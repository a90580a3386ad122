package rs

import (
	"encoding/json"
	"fmt"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// samplesDir holds the real reference RS answers (testdata/ at the module root).
var samplesDir = testkit.SamplesDir()

func rsError(status int, code string) *Error {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "x", "code": code, "message": "m"}})
	return &Error{Status: status, Envelope: b}
}

// TestClassify: each listed code decides whatever its status, RS trouble is
// told by status when no code is listed, and the token check reads a refusal
// of its own schema as unusable, never as unavailable.
func TestClassify(t *testing.T) {
	cases := []struct {
		name        string
		err         *Error
		call, check Class
	}{
		{"dead token", rsError(401, "context.active_false"), ClassToken, ClassToken},
		{"expired grant is a 403", rsError(403, "grant_expired"), ClassToken, ClassToken},
		{"revoked grant", rsError(403, "grant_revoked"), ClassToken, ClassToken},
		{"expired token context", rsError(401, "context.expired"), ClassToken, ClassToken},
		{"missing bearer", rsError(401, "authentication_error"), ClassToken, ClassToken},
		{"stream outside the grant is a 401", rsError(401, "context.stream_not_allowed"), ClassScope, ClassUnusable},
		{"connection outside the grant", rsError(401, "context.instance_mismatch"), ClassScope, ClassUnusable},
		{"stream outside the grant, documented form", rsError(403, "grant_stream_not_allowed"), ClassScope, ClassUnusable},
		{"package token on /v1", rsError(404, "not_found"), ClassRequest, ClassUnusable},
		{"schema read forbidden", rsError(403, "forbidden"), ClassRequest, ClassUnusable},
		{"unlisted 401", rsError(401, "something_new"), ClassRequest, ClassToken},
		{"AS unreachable from the RS", rsError(401, "context.authentication_failed"), ClassUnavailable, ClassUnavailable},
		{"RS 503", rsError(503, "unavailable"), ClassUnavailable, ClassUnavailable},
		{"RS 429", rsError(429, "rate_limited"), ClassUnavailable, ClassUnavailable},
		{"bad cursor", rsError(400, "invalid_cursor"), ClassRequest, ClassUnusable},
		{"conflict", rsError(409, "ambiguous_connection"), ClassRequest, ClassUnusable},
		{"timeout", AdapterError(CodeTimeout, "late", ""), ClassUnavailable, ClassUnavailable},
		{"unreachable", AdapterError(CodeUnreachable, "gone", ""), ClassUnavailable, ClassUnavailable},
		{"no token to send", AdapterError("credential_unavailable", "none", ""), ClassRequest, ClassUnavailable},
		{"oversized 200", &Error{Status: 200, Envelope: AdapterError("rs_response_too_large", "big", "").Envelope}, ClassRequest, ClassUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassOf(tc.err); got != tc.call {
				t.Errorf("ClassOf = %v, want %v", got, tc.call)
			}
			if got := CheckClassOf(tc.err); got != tc.check {
				t.Errorf("CheckClassOf = %v, want %v", got, tc.check)
			}
		})
	}
}

// TestClassifyBareStatus: RS answers without a JSON envelope, as Do turns
// them into errors: a bare 401 is RFC 6750's invalid_token, a bare 5xx RS
// trouble, a bare 403 about the request.
func TestClassifyBareStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   Class
	}{{401, ClassToken}, {502, ClassUnavailable}, {403, ClassRequest}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("no envelope"))
			}))
			defer srv.Close()
			c, err := New(srv.URL, staticToken("t"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(t.Context(), "/v1/streams", nil)
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("err = %v", err)
			}
			if got := ClassOf(e); got != tc.want {
				t.Fatalf("%s: class %v, want %v", e, got, tc.want)
			}
		})
	}
}

// TestCodeListsDisjoint: no code is in two lists.
func TestCodeListsDisjoint(t *testing.T) {
	seen := map[string]Class{}
	for _, c := range []Class{ClassToken, ClassScope, ClassUnavailable} {
		for _, code := range Codes(c) {
			if prev, ok := seen[code]; ok {
				t.Errorf("%s is listed as %v and %v", code, prev, c)
			}
			seen[code] = c
		}
	}
}

// TestClassifySamples: every error the real reference RS answered in the
// captured samples gets the class its meaning calls for.
func TestClassifySamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, "_index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	special := map[string]Class{
		"error-401-bad-token":                   ClassToken, // context.active_false
		"error-401-missing-token":               ClassToken, // authentication_error
		"error-unknown-stream":                  ClassScope, // 401 context.stream_not_allowed
		"error-field-window-unknown-connection": ClassScope, // 401 context.instance_mismatch
	}
	checked := 0
	for name, e := range index {
		if e.Status < 400 {
			continue
		}
		body, err := os.ReadFile(filepath.Join(samplesDir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		want, ok := special[name]
		if !ok {
			want = ClassRequest // bad arguments, unknown records, conflicts
		}
		got := ClassOf(&Error{Status: e.Status, Envelope: body})
		if got != want {
			t.Errorf("%s (%d): class %v, want %v", name, e.Status, got, want)
		}
		checked++
	}
	if checked < len(special) {
		t.Fatalf("only %d error samples checked", checked)
	}
}
