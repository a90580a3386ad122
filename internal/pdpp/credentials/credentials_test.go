package credentials

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	provider    = "http://127.0.0.1:7663"
	fixtureFile = "127.0.0.1_7663.json"
	fixtureTok  = "tok_client_abc123"
	fixFix      = "pdpp connect http://127.0.0.1:7663"
)

// now is the clock used with the fixtures: after every "expired" expiry
// and before every "valid" one.
var now = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// install copies a testdata fixture into a fresh cache root and returns
// the root.
func install(t *testing.T, fixture string, mode os.FileMode) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "clients")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fixtureFile)
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is filtered by umask
		t.Fatal(err)
	}
	return root
}

// checkErr asserts the code, exit code, the fix and the absence of the
// token in an error.
func checkErr(t *testing.T, err error, code string, wantMsg ...string) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not *credentials.Error", err, err)
	}
	if ce.Code != code {
		t.Fatalf("code = %q, want %q (message %q)", ce.Code, code, ce.Message)
	}
	if ce.Param != ParamProviderURL {
		t.Errorf("param = %q", ce.Param)
	}
	wantExit := map[string]int{
		CodeNotConnected: 78, CodeCredentialInvalid: 78, CodeCredentialExpired: 78,
		CodeOwnerTokenRefused: 77, CodeInvalidProviderURL: 64, CodeWriteFailed: 74,
	}[code]
	if ce.ExitCode() != wantExit {
		t.Errorf("ExitCode() = %d, want %d", ce.ExitCode(), wantExit)
	}
	for _, w := range wantMsg {
		if !strings.Contains(ce.Message, w) {
			t.Errorf("message %q does not contain %q", ce.Message, w)
		}
	}
	if strings.Contains(err.Error(), fixtureTok) {
		t.Errorf("error reveals the access token: %q", err.Error())
	}
	return ce
}

func TestLoadFixtures(t *testing.T) {
	exp2027 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		fixture     string
		wantCode    string
		wantMsg     []string
		wantExpires time.Time
		wantScope   string
	}{
		{fixture: "valid.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-no-expiry.json", wantScope: "streams:read"},
		{fixture: "valid-null-expiry.json", wantScope: "streams:read"},
		{fixture: "valid-unix-number.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-unix-string.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-unix-fraction.json", wantExpires: exp2027.Add(500 * time.Millisecond), wantScope: "streams:read"},
		{fixture: "valid-offset-time.json", wantExpires: time.Date(2026, 6, 1, 0, 30, 0, 0, time.UTC), wantScope: "streams:read"},
		{fixture: "valid-lowercase-bearer.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-no-token-type.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-trailing-slash.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-non-owner-markers.json", wantExpires: exp2027, wantScope: "streams:read"},
		{fixture: "valid-minimal.json", wantExpires: exp2027, wantScope: "streams:read"},

		{fixture: "expired-rfc3339.json", wantCode: CodeCredentialExpired, wantMsg: []string{"expired at 2026-01-01T00:00:00Z"}},
		{fixture: "expired-unix-number.json", wantCode: CodeCredentialExpired, wantMsg: []string{"expired at 2026-01-01T00:00:00Z"}},
		{fixture: "expired-unix-string.json", wantCode: CodeCredentialExpired, wantMsg: []string{"expired at 2026-01-01T00:00:00Z"}},
		{fixture: "expired-offset-time.json", wantCode: CodeCredentialExpired, wantMsg: []string{"expired at 2026-05-31T23:30:00Z"}},

		{fixture: "no-access-token.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"no credential.access_token"}},
		{fixture: "empty-access-token.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"no credential.access_token"}},
		{fixture: "no-credential.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"no credential.access_token"}},
		{fixture: "access-token-with-space.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"cannot contain"}},
		{fixture: "access-token-not-string.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"not a valid credential file"}},
		{fixture: "wrong-token-type.json", wantCode: CodeCredentialInvalid, wantMsg: []string{`token_type "DPoP"`}},
		{fixture: "bad-expiry.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"neither RFC 3339 nor unix seconds"}},
		{fixture: "ms-expiry.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"milliseconds"}},
		{fixture: "bool-expiry.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"not a valid credential file"}},
		{fixture: "provider-mismatch.json", wantCode: CodeCredentialInvalid, wantMsg: []string{`"http://127.0.0.1:9999"`}},
		{fixture: "provider-scheme-mismatch.json", wantCode: CodeCredentialInvalid, wantMsg: []string{`"https://127.0.0.1:7663"`}},
		{fixture: "no-provider-url.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"no provider_url"}},
		{fixture: "malformed.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"not a valid credential file"}},
		{fixture: "array.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"does not hold a JSON object"}},
		{fixture: "null.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"does not hold a JSON object"}},
		{fixture: "empty.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"does not hold a JSON object"}},
		{fixture: "trailing-data.json", wantCode: CodeCredentialInvalid, wantMsg: []string{"data after"}},

		{fixture: "owner-top-pdpp-token-kind.json", wantCode: CodeOwnerTokenRefused, wantMsg: []string{"pdpp_token_kind", "never owner tokens"}},
		{fixture: "owner-top-role.json", wantCode: CodeOwnerTokenRefused, wantMsg: []string{"(role is"}},
		{fixture: "owner-credential-token-kind.json", wantCode: CodeOwnerTokenRefused, wantMsg: []string{"credential.token_kind"}},
		{fixture: "owner-credential-kind-capitalized.json", wantCode: CodeOwnerTokenRefused, wantMsg: []string{"credential.kind"}},
		{fixture: "owner-expired-no-token.json", wantCode: CodeOwnerTokenRefused, wantMsg: []string{"credential.pdpp_token_kind"}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			root := install(t, tc.fixture, 0o600)
			tok, err := Load(root, provider, now)
			if tc.wantCode != "" {
				ce := checkErr(t, err, tc.wantCode, append([]string{fixFix}, tc.wantMsg...)...)
				if ce.Path != filepath.Join(root, "clients", fixtureFile) || ce.ProviderURL != provider {
					t.Errorf("error names path %q provider %q", ce.Path, ce.ProviderURL)
				}
				if tok != (Token{}) {
					t.Errorf("token returned with error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := Token{
				AccessToken: fixtureTok, TokenType: "Bearer", ExpiresAt: tc.wantExpires,
				GrantID: "grt_0123456789abcdef", Scope: tc.wantScope, ProviderURL: provider,
				Path: filepath.Join(root, "clients", fixtureFile),
			}
			if !tok.ExpiresAt.Equal(want.ExpiresAt) {
				t.Errorf("ExpiresAt = %v, want %v", tok.ExpiresAt, want.ExpiresAt)
			}
			tok.ExpiresAt, want.ExpiresAt = time.Time{}, time.Time{}
			if tok != want {
				t.Errorf("Load = %+v, want %+v", tok, want)
			}
		})
	}
}

func TestLoadExpiryBoundary(t *testing.T) {
	exp := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		now  time.Time
		code string
	}{
		{"one nanosecond before", exp.Add(-time.Nanosecond), ""},
		{"exactly at expiry", exp, CodeCredentialExpired},
		{"after expiry", exp.Add(time.Hour), CodeCredentialExpired},
		{"same instant in another zone", exp.In(time.FixedZone("x", 5*3600)), CodeCredentialExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := install(t, "valid.json", 0o600)
			_, err := Load(root, provider, tc.now)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			checkErr(t, err, tc.code, fixFix)
		})
	}
}

func TestLoadFileSystemCases(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string)
		code    string
		wantMsg []string
	}{
		{
			name:    "missing file",
			setup:   func(t *testing.T, root string) {},
			code:    CodeNotConnected,
			wantMsg: []string{"not connected to http://127.0.0.1:7663", fixtureFile},
		},
		{
			name: "missing file next to another provider's file",
			setup: func(t *testing.T, root string) {
				writeRaw(t, filepath.Join(root, "clients", "127.0.0.1_9999.json"), []byte("{}"), 0o600)
			},
			code: CodeNotConnected,
		},
		{
			name: "directory in place of the file",
			setup: func(t *testing.T, root string) {
				if err := os.MkdirAll(filepath.Join(root, "clients", fixtureFile), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			code:    CodeCredentialInvalid,
			wantMsg: []string{"not a regular file"},
		},
		{
			name: "oversized file",
			setup: func(t *testing.T, root string) {
				data := append([]byte(`{"provider_url":"`+provider+`","x":"`), bytes.Repeat([]byte("a"), MaxFileBytes)...)
				writeRaw(t, filepath.Join(root, "clients", fixtureFile), append(data, []byte(`"}`)...), 0o600)
			},
			code:    CodeCredentialInvalid,
			wantMsg: []string{"larger than"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.setup(t, root)
			_, err := Load(root, provider, now)
			checkErr(t, err, tc.code, append([]string{fixFix}, tc.wantMsg...)...)
		})
	}
}

func writeRaw(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("file modes do not restrict reading here (Windows or running as root)")
	}
	root := install(t, "valid.json", 0o000)
	_, err := Load(root, provider, now)
	checkErr(t, err, CodeCredentialInvalid, "cannot be opened", fixFix)
}

func TestLoadDefaultCacheRoot(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := Load("", provider, now)
	ce := checkErr(t, err, CodeNotConnected, fixFix)
	if want := filepath.Join(".pdpp", "clients", fixtureFile); ce.Path != want {
		t.Fatalf("path = %q, want %q", ce.Path, want)
	}
	src, err := os.ReadFile(filepath.Join(testdataDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, filepath.Join(".pdpp", "clients", fixtureFile), src, 0o600)
	tok, err := Load("", provider, now)
	if err != nil || tok.AccessToken != fixtureTok {
		t.Fatalf("Load from default root = %+v, %v", tok, err)
	}
}

// testdataDir is the absolute testdata directory, for tests that change
// the working directory.
var testdataDir = func() string {
	d, err := filepath.Abs("testdata")
	if err != nil {
		panic(err)
	}
	return d
}()

func TestLoadPermissionWarning(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX file modes do not apply on Windows")
	}
	tests := []struct {
		mode    os.FileMode
		warning bool
	}{
		{0o600, false},
		{0o400, false},
		{0o640, true},
		{0o604, true},
		{0o644, true},
		{0o666, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%04o", tc.mode), func(t *testing.T) {
			root := install(t, "valid.json", tc.mode)
			tok, err := Load(root, provider, now)
			if err != nil {
				t.Fatalf("Load must not fail on loose permissions: %v", err)
			}
			if got := tok.Warning != ""; got != tc.warning {
				t.Fatalf("warning = %q, want warning: %v", tok.Warning, tc.warning)
			}
			if tc.warning && (!strings.Contains(tok.Warning, "chmod 600") || !strings.Contains(tok.Warning, fmt.Sprintf("%04o", tc.mode))) {
				t.Errorf("warning %q does not give mode and fix", tok.Warning)
			}
		})
	}
}

func TestLoadInvalidProviderURL(t *testing.T) {
	tests := []struct {
		url     string
		wantMsg string
	}{
		{"", "not an http or https URL"},
		{"127.0.0.1:7663", "not a URL"},
		{"localhost:7663", "not an http or https URL"},
		{"ftp://rs.example", "not an http or https URL"},
		{"http://", "no host"},
		{"http:rs.example", "no host"},
		{"/v1/streams", "not an http or https URL"},
		{"http://user:hunter2@rs.example", "user information"},
		{"http://rs.example?x=1", "query or fragment"},
		{"http://rs.example/#top", "query or fragment"},
		{"http://rs example", "not a URL"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			_, err := Load(t.TempDir(), tc.url, now)
			ce := checkErr(t, err, CodeInvalidProviderURL, tc.wantMsg, "http://127.0.0.1:7663")
			if strings.Contains(ce.Message, "hunter2") {
				t.Errorf("message reveals a password: %q", ce.Message)
			}
		})
	}
}

func TestFileName(t *testing.T) {
	tests := []struct {
		url  string
		want string
	}{
		{"http://127.0.0.1:7663", "127.0.0.1_7663.json"},
		{"http://127.0.0.1:7663/", "127.0.0.1_7663.json"},
		{"http://127.0.0.1:7663/base/path", "127.0.0.1_7663.json"},
		{"https://rs.example", "rs.example.json"},
		{"https://rs.example:443", "rs.example_443.json"},
		{"https://RS.Example:8443", "RS.Example_8443.json"},
		{"HTTP://rs.example", "rs.example.json"},
		{"http://my_host-1.local:80", "my_host-1.local_80.json"},
		{"http://[::1]:7663", "___1__7663.json"},
		{"http://[fe80::1%25eth0]:7663", "_fe80__1_eth0__7663.json"},
		{"http://bücher.example", "b_cher.example.json"},
		{"http://localhost", "localhost.json"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			got, err := FileName(tc.url)
			if err != nil {
				t.Fatalf("FileName(%q): %v", tc.url, err)
			}
			if got != tc.want {
				t.Fatalf("FileName(%q) = %q, want %q", tc.url, got, tc.want)
			}
			if strings.ContainsAny(got, `/\`) || got == ".json" {
				t.Fatalf("FileName(%q) = %q is not a plain file name", tc.url, got)
			}
		})
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		root string
		want string
	}{
		{"", filepath.Join(".pdpp", "clients", fixtureFile)},
		{"cache", filepath.Join("cache", "clients", fixtureFile)},
		{filepath.Join("a", "b"), filepath.Join("a", "b", "clients", fixtureFile)},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			got, err := Path(tc.root, provider)
			if err != nil || got != tc.want {
				t.Fatalf("Path(%q) = %q, %v; want %q", tc.root, got, err, tc.want)
			}
		})
	}
	if _, err := Path("", "nope"); err == nil {
		t.Fatal("Path accepted a malformed provider URL")
	}
}

func TestExpiryTime(t *testing.T) {
	tests := []struct {
		in      Expiry
		want    time.Time
		set     bool
		wantErr bool
	}{
		{"", time.Time{}, false, false},
		{"  ", time.Time{}, false, false},
		{"2027-01-01T00:00:00Z", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), true, false},
		{"2027-01-01T00:00:00.123456789Z", time.Date(2027, 1, 1, 0, 0, 0, 123456789, time.UTC), true, false},
		{"2027-01-01T01:00:00+01:00", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), true, false},
		{"1798761600", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), true, false},
		{"0", time.Unix(0, 0), true, false},
		{"-1", time.Unix(-1, 0), true, false},
		{"1798761600000", time.Time{}, true, true},
		{"2027-01-01", time.Time{}, true, true},
		{"2027-01-01 00:00:00", time.Time{}, true, true},
		{"NaN", time.Time{}, true, true},
		{"Inf", time.Time{}, true, true},
		{"1e400", time.Time{}, true, true},
		{"soon", time.Time{}, true, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.in), func(t *testing.T) {
			got, set, err := tc.in.Time()
			if (err != nil) != tc.wantErr || set != tc.set {
				t.Fatalf("Time() = %v, %v, %v; want set=%v err=%v", got, set, err, tc.set, tc.wantErr)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("Time() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpiryJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    Expiry
		wantErr bool
	}{
		{`"2027-01-01T00:00:00Z"`, "2027-01-01T00:00:00Z", false},
		{`1798761600`, "1798761600", false},
		{`1798761600.25`, "1798761600.25", false},
		{`null`, "", false},
		{`true`, "", true},
		{`{}`, "", true},
		{`[]`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var e Expiry
			err := json.Unmarshal([]byte(tc.in), &e)
			if (err != nil) != tc.wantErr || e != tc.want {
				t.Fatalf("Unmarshal(%s) = %q, %v; want %q err=%v", tc.in, e, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestTokenNeverPrinted(t *testing.T) {
	root := install(t, "valid.json", 0o600)
	tok, err := Load(root, provider, now)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("loaded", "credential", tok)
	for name, out := range map[string]string{
		"String": tok.String(), "%v": fmt.Sprintf("%v", tok), "%+v": fmt.Sprintf("%+v", tok), "slog": logs.String(),
	} {
		if strings.Contains(out, fixtureTok) {
			t.Errorf("%s output reveals the token: %s", name, out)
		}
		if !strings.Contains(out, "grt_0123456789abcdef") {
			t.Errorf("%s output lost the grant id: %s", name, out)
		}
	}
}

// FuzzFileName: no provider URL panics, and every accepted one maps to a
// plain file name inside the clients directory.
func FuzzFileName(f *testing.F) {
	for _, s := range []string{provider, "https://rs.example", "http://[::1]:7663", "http://a/../..", "http://%2e%2e", "file:///etc/passwd", "http://../"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		name, err := FileName(u)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != CodeInvalidProviderURL {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		base, ok := strings.CutSuffix(name, ".json")
		if !ok || base == "" {
			t.Fatalf("FileName(%q) = %q", u, name)
		}
		for _, c := range base {
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
				t.Fatalf("FileName(%q) = %q has %q", u, name, c)
			}
		}
		p, err := Path("root", u)
		if err != nil || filepath.Dir(p) != filepath.Join("root", "clients") {
			t.Fatalf("Path escapes the clients dir: %q, %v", p, err)
		}
	})
}
