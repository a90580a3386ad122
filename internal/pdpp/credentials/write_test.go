package credentials

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func sampleFile() File {
	return File{
		ProviderURL:         provider,
		AuthorizationServer: "http://127.0.0.1:7662",
		Scope:               "streams:read",
		CreatedAt:           "2026-05-01T10:00:00Z",
		Client:              json.RawMessage(`{"client_id":"cli_demo"}`),
		Credential: Credential{
			AccessToken: fixtureTok,
			TokenType:   "Bearer",
			ExpiresAt:   "2027-01-01T00:00:00Z",
			GrantID:     "grt_0123456789abcdef",
			Scope:       "streams:read",
		},
	}
}

func TestWriteLoadRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(f *File)
		check  func(t *testing.T, tok Token, onDisk File)
	}{
		{
			name:   "full file",
			mutate: func(f *File) {},
			check: func(t *testing.T, tok Token, onDisk File) {
				if !tok.ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || tok.Scope != "streams:read" {
					t.Errorf("token = %+v", tok)
				}
				var client bytes.Buffer
				if err := json.Compact(&client, onDisk.Client); err != nil || client.String() != `{"client_id":"cli_demo"}` || onDisk.CreatedAt != "2026-05-01T10:00:00Z" {
					t.Errorf("file on disk = %+v", onDisk)
				}
			},
		},
		{
			name:   "unix expiry and no client",
			mutate: func(f *File) { f.Client = nil; f.Credential.ExpiresAt = "1798761600" },
			check: func(t *testing.T, tok Token, onDisk File) {
				if !tok.ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
					t.Errorf("ExpiresAt = %v", tok.ExpiresAt)
				}
				if onDisk.Client != nil {
					t.Errorf("client = %s", onDisk.Client)
				}
			},
		},
		{
			name:   "no expiry, created_at filled in",
			mutate: func(f *File) { f.Credential.ExpiresAt = ""; f.CreatedAt = "" },
			check: func(t *testing.T, tok Token, onDisk File) {
				if !tok.ExpiresAt.IsZero() {
					t.Errorf("ExpiresAt = %v", tok.ExpiresAt)
				}
				created, err := time.Parse(time.RFC3339, onDisk.CreatedAt)
				if err != nil || time.Since(created) > time.Hour || time.Since(created) < -time.Minute {
					t.Errorf("created_at = %q (%v)", onDisk.CreatedAt, err)
				}
			},
		},
		{
			name:   "other provider",
			mutate: func(f *File) { f.ProviderURL = "https://rs.example:8443" },
			check: func(t *testing.T, tok Token, onDisk File) {
				if filepath.Base(tok.Path) != "rs.example_8443.json" {
					t.Errorf("path = %q", tok.Path)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "cache")
			f := sampleFile()
			tc.mutate(&f)
			path, err := Write(root, f)
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			want, _ := Path(root, f.ProviderURL)
			if path != want {
				t.Fatalf("Write returned %q, want %q", path, want)
			}
			if runtime.GOOS != "windows" {
				for p, mode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700, root: 0o700} {
					info, err := os.Stat(p)
					if err != nil {
						t.Fatal(err)
					}
					if info.Mode().Perm() != mode {
						t.Errorf("%s mode = %04o, want %04o", p, info.Mode().Perm(), mode)
					}
				}
			}
			entries, err := os.ReadDir(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("clients dir holds %d entries, want only the credential file", len(entries))
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var onDisk File
			if err := json.Unmarshal(data, &onDisk); err != nil {
				t.Fatalf("written file is not JSON: %v", err)
			}
			tok, err := Load(root, f.ProviderURL, now)
			if err != nil {
				t.Fatalf("Load after Write: %v", err)
			}
			if tok.AccessToken != fixtureTok || tok.GrantID != "grt_0123456789abcdef" || tok.Warning != "" || tok.Path != path {
				t.Errorf("Load = %+v", tok)
			}
			tc.check(t, tok, onDisk)
		})
	}
}

func TestWriteReplacesExistingFile(t *testing.T) {
	root := t.TempDir()
	first := sampleFile()
	if _, err := Write(root, first); err != nil {
		t.Fatal(err)
	}
	second := sampleFile()
	second.Credential.AccessToken = "tok_second"
	path, err := Write(root, second)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Load(root, provider, now)
	if err != nil || tok.AccessToken != "tok_second" {
		t.Fatalf("Load after second Write = %+v, %v", tok, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("%d entries left in clients dir", len(entries))
	}
}

func TestWriteRejects(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(f *File)
		code    string
		wantMsg string
	}{
		{"owner at top level", func(f *File) { f.PDPPTokenKind = "owner" }, CodeOwnerTokenRefused, "pdpp_token_kind"},
		{"owner role in credential", func(f *File) { f.Credential.Role = "OWNER" }, CodeOwnerTokenRefused, "credential.role"},
		{"empty token", func(f *File) { f.Credential.AccessToken = "" }, CodeCredentialInvalid, "access_token"},
		{"token with newline", func(f *File) { f.Credential.AccessToken = "tok\nX-Evil: 1" }, CodeCredentialInvalid, "access_token"},
		{"DPoP token", func(f *File) { f.Credential.TokenType = "DPoP" }, CodeCredentialInvalid, "not Bearer"},
		{"bad expiry", func(f *File) { f.Credential.ExpiresAt = "tomorrow" }, CodeCredentialInvalid, "neither RFC 3339"},
		{"bad client JSON", func(f *File) { f.Client = json.RawMessage(`{"x":`) }, CodeCredentialInvalid, "client is not valid JSON"},
		{"bad provider", func(f *File) { f.ProviderURL = "rs.example" }, CodeInvalidProviderURL, "http"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			f := sampleFile()
			tc.mutate(&f)
			path, err := Write(root, f)
			if err == nil {
				t.Fatalf("Write = %q, want error", path)
			}
			checkErr(t, err, tc.code, tc.wantMsg)
			if _, err := os.Stat(filepath.Join(root, "clients")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("rejected Write created the cache directory (%v)", err)
			}
		})
	}
}

func TestWriteFailure(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(root, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Write(root, sampleFile())
	ce := checkErr(t, err, CodeWriteFailed, "cannot write credential file")
	if ce.Err == nil || !errors.Is(err, ce.Err) {
		t.Errorf("underlying cause not kept: %v", ce.Err)
	}
}

// FuzzLoad writes arbitrary bytes as the credential file: Load must never
// panic, must return a typed error or a token that can be sent as a
// bearer header, and must never put the file's token into an error.
func FuzzLoad(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join("testdata", e.Name())); err == nil && !e.IsDir() {
			f.Add(data)
		}
	}
	// One cache root per fuzz worker, rewritten on every input: creating and
	// removing a directory per input made the target too slow to fuzz.
	root, err := os.MkdirTemp("", "pdpp-fuzzload-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = os.RemoveAll(root) })
	f.Fuzz(func(t *testing.T, data []byte) {
		writeRaw(t, filepath.Join(root, "clients", fixtureFile), data, 0o600)
		tok, err := Load(root, provider, now)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Message == "" || !strings.Contains(ce.Message, fixFix) {
				t.Fatalf("untyped or unhelpful error: %v", err)
			}
			var parsed File
			if json.Unmarshal(data, &parsed) != nil {
				return
			}
			secret := parsed.Credential.AccessToken
			if strings.HasPrefix(secret, "tok_") && len(secret) >= 8 &&
				!strings.Contains(parsed.ProviderURL, secret) && strings.Contains(err.Error(), secret) {
				t.Fatalf("error reveals the token: %v", err)
			}
			return
		}
		if !validBearer(tok.AccessToken) || tok.TokenType != "Bearer" {
			t.Fatalf("unusable token %q", tok.AccessToken)
		}
		if !tok.ExpiresAt.IsZero() && !now.Before(tok.ExpiresAt) {
			t.Fatalf("expired token accepted: %v", tok.ExpiresAt)
		}
	})
}
