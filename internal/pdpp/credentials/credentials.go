package credentials

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// DefaultCacheRoot is used when the cache root is empty.
const DefaultCacheRoot = ".pdpp"

// MaxFileBytes bounds a credential file.
const MaxFileBytes = 1 << 20

// File is one credential cache file.
type File struct {
	ProviderURL         string          `json:"provider_url"`
	AuthorizationServer string          `json:"authorization_server,omitempty"`
	Scope               string          `json:"scope,omitempty"`
	CreatedAt           string          `json:"created_at"`
	Client              json.RawMessage `json:"client,omitempty"`
	Credential          Credential      `json:"credential"`
	OwnerMarkers
}

// Credential is the token part of a File.
type Credential struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type,omitempty"`
	ExpiresAt   Expiry `json:"expires_at,omitempty"`
	GrantID     string `json:"grant_id,omitempty"`
	Scope       string `json:"scope,omitempty"`
	OwnerMarkers
}

// OwnerMarkers are the fields that mark a token as an owner token. Any of
// them equal to "owner" (case-insensitive), at the top level of the file
// or inside credential, makes Load refuse the file.
type OwnerMarkers struct {
	PDPPTokenKind string `json:"pdpp_token_kind,omitempty"`
	TokenKind     string `json:"token_kind,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Role          string `json:"role,omitempty"`
}

// ownerField returns the JSON name of the first marker equal to "owner",
// or "".
func (m OwnerMarkers) ownerField() string {
	for _, f := range []struct{ name, value string }{
		{"pdpp_token_kind", m.PDPPTokenKind},
		{"token_kind", m.TokenKind},
		{"kind", m.Kind},
		{"role", m.Role},
	} {
		if strings.EqualFold(strings.TrimSpace(f.value), "owner") {
			return f.name
		}
	}
	return ""
}

// Expiry is a credential's expires_at as written in the file: RFC 3339
// text, or unix seconds given as a JSON number or a string. Empty means
// the credential does not expire. It is written back as a JSON string.
type Expiry string

// UnmarshalJSON accepts a string, a number (kept as its literal text) or
// null (empty).
func (e *Expiry) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*e = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = Expiry(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("expires_at must be an RFC 3339 string or unix seconds: %w", err)
		}
		*e = Expiry(n.String())
	}
	return nil
}

// maxUnixSeconds keeps unix-second values to plausible dates (year < 5000)
// so that a millisecond timestamp is reported instead of read as a date
// far in the future.
const maxUnixSeconds = 95617584000

// Time parses the expiry. set is false when it is empty.
func (e Expiry) Time() (t time.Time, set bool, err error) {
	s := strings.TrimSpace(string(e))
	if s == "" {
		return time.Time{}, false, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true, nil
	}
	if c := s[0]; c == '-' || c >= '0' && c <= '9' {
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			if math.Abs(f) > maxUnixSeconds {
				return time.Time{}, true, fmt.Errorf("expires_at %q is out of range for unix seconds (milliseconds?)", s)
			}
			sec, frac := math.Modf(f)
			return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true, nil
		}
	}
	return time.Time{}, true, fmt.Errorf("expires_at %q is neither RFC 3339 nor unix seconds", s)
}

// Token is a loaded, usable client credential.
type Token struct {
	AccessToken string
	TokenType   string
	ExpiresAt   time.Time // zero when the credential does not expire
	GrantID     string
	Scope       string
	ProviderURL string
	Path        string
	// Warning is non-empty when the file loaded but should be fixed (it is
	// readable by group or others); the caller logs it.
	Warning string
}

// String describes the token without revealing it.
func (t Token) String() string {
	return fmt.Sprintf("credential{provider=%s grant=%s path=%s access_token=[redacted]}", t.ProviderURL, t.GrantID, t.Path)
}

// LogValue keeps the token out of structured logs.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider_url", t.ProviderURL),
		slog.String("grant_id", t.GrantID),
		slog.String("path", t.Path),
		slog.String("access_token", "[redacted]"),
	)
}

// parseProviderURL checks that providerURL is an absolute http(s) URL with
// a host and nothing that cannot belong to a provider base URL.
func parseProviderURL(providerURL string) (*url.URL, error) {
	const example = "pass the resource server's base URL, e.g. http://127.0.0.1:7663"
	u, err := url.Parse(providerURL)
	if err != nil {
		return nil, newErr(CodeInvalidProviderURL, "", "", err, "provider URL %q is not a URL; %s", providerURL, example)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, newErr(CodeInvalidProviderURL, "", "", nil, "provider URL %q is not an http or https URL; %s", u.Redacted(), example)
	case u.Host == "" || u.Opaque != "":
		return nil, newErr(CodeInvalidProviderURL, "", "", nil, "provider URL %q has no host; %s", u.Redacted(), example)
	case u.User != nil:
		return nil, newErr(CodeInvalidProviderURL, "", "", nil, "provider URL %q carries user information; remove it and %s", u.Redacted(), example)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, newErr(CodeInvalidProviderURL, "", "", nil, "provider URL %q has a query or fragment; %s", u.Redacted(), example)
	}
	return u, nil
}

// FileName returns the cache file name for a provider: the URL's host as
// written (host:port when the URL names a port, the bare host when it does
// not; case is kept and default ports are not added or removed) with every
// character outside [A-Za-z0-9.-] replaced by one "_", plus ".json". So
// http://127.0.0.1:7663 gives 127.0.0.1_7663.json and https://rs.example
// gives rs.example.json. Only the host matters: URLs that differ in path
// share a file, and Load rejects a file written for another provider URL.
func FileName(providerURL string) (string, error) {
	u, err := parseProviderURL(providerURL)
	if err != nil {
		return "", err
	}
	return strings.Map(func(c rune) rune {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			return c
		}
		return '_'
	}, u.Host) + ".json", nil
}

// Path returns <cacheRoot>/clients/<FileName(providerURL)>; an empty
// cacheRoot means DefaultCacheRoot.
func Path(cacheRoot, providerURL string) (string, error) {
	name, err := FileName(providerURL)
	if err != nil {
		return "", err
	}
	return filepath.Join(cmp.Or(cacheRoot, DefaultCacheRoot), "clients", name), nil
}

// sameProvider compares two provider URLs by scheme, host (both
// case-insensitive) and path (ignoring a trailing "/").
func sameProvider(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) &&
		strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimRight(ua.Path, "/") == strings.TrimRight(ub.Path, "/")
}

// validBearer reports whether a token can be sent in an Authorization
// header: visible ASCII only, no spaces.
func validBearer(tok string) bool {
	return tok != "" && !strings.ContainsFunc(tok, func(r rune) bool { return r < 0x21 || r > 0x7e })
}

// Load reads the credential for providerURL from the cache under
// cacheRoot and checks it against now. Failures are *Error with Code
// CodeNotConnected, CodeCredentialInvalid, CodeCredentialExpired,
// CodeOwnerTokenRefused or CodeInvalidProviderURL.
func Load(cacheRoot, providerURL string, now time.Time) (Token, error) {
	path, err := Path(cacheRoot, providerURL)
	if err != nil {
		return Token{}, err
	}
	fix := fmt.Sprintf("run `pdpp connect %s` to authorize this client, then start the server again", providerURL) // the remedy every load error names
	invalid := func(cause error, format string, args ...any) error {
		return newErr(CodeCredentialInvalid, providerURL, path, cause, "credential file %s %s; %s", path, fmt.Sprintf(format, args...), fix)
	}

	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Token{}, newErr(CodeNotConnected, providerURL, path, err,
			"this client is not connected to %s (no credential file at %s); %s", providerURL, path, fix)
	}
	if err != nil {
		return Token{}, invalid(err, "cannot be opened (%v)", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return Token{}, invalid(err, "cannot be read (%v)", err)
	}
	if !info.Mode().IsRegular() {
		return Token{}, invalid(nil, "is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return Token{}, invalid(err, "cannot be read (%v)", err)
	}
	if len(data) > MaxFileBytes {
		return Token{}, invalid(nil, "is larger than %d bytes", MaxFileBytes)
	}

	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Token{}, invalid(nil, "does not hold a JSON object")
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&f); err != nil {
		return Token{}, invalid(err, "is not a valid credential file (%v)", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Token{}, invalid(nil, "has data after its JSON object")
	}

	owner := f.OwnerMarkers.ownerField()
	where := owner
	if owner == "" {
		owner = f.Credential.OwnerMarkers.ownerField()
		where = "credential." + owner
	}
	if owner != "" {
		return Token{}, newErr(CodeOwnerTokenRefused, providerURL, path, nil,
			"credential file %s holds an owner token (%s is \"owner\"); this server only uses grant-scoped client tokens and never owner tokens, so %s",
			path, where, fix)
	}

	switch {
	case strings.TrimSpace(f.ProviderURL) == "":
		return Token{}, invalid(nil, "names no provider_url")
	case !sameProvider(f.ProviderURL, providerURL):
		return Token{}, invalid(nil, "was written for provider %q, not %q", f.ProviderURL, providerURL)
	}
	tok := strings.TrimSpace(f.Credential.AccessToken)
	if tok == "" {
		return Token{}, invalid(nil, "has no credential.access_token")
	}
	if !validBearer(tok) {
		return Token{}, invalid(nil, "has a credential.access_token with characters a bearer token cannot contain")
	}
	if tt := strings.TrimSpace(f.Credential.TokenType); tt != "" && !strings.EqualFold(tt, "bearer") {
		return Token{}, invalid(nil, "has token_type %q; only Bearer tokens are supported", tt)
	}
	exp, set, err := f.Credential.ExpiresAt.Time()
	if err != nil {
		return Token{}, invalid(err, "has an unreadable expiry: %v", err)
	}
	if set && !now.Before(exp) {
		return Token{}, newErr(CodeCredentialExpired, providerURL, path, nil,
			"the credential in %s expired at %s; %s", path, exp.UTC().Format(time.RFC3339), fix)
	}

	t := Token{
		AccessToken: tok,
		TokenType:   "Bearer",
		ExpiresAt:   exp, // zero when not set
		GrantID:     f.Credential.GrantID,
		Scope:       cmp.Or(f.Credential.Scope, f.Scope),
		ProviderURL: providerURL,
		Path:        path,
	}
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
		t.Warning = fmt.Sprintf("credential file %s is readable by group or others (mode %04o); restrict it with `chmod 600 %s`",
			path, info.Mode().Perm(), path)
	}
	return t, nil
}
