package credentials

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write stores f in the cache under cacheRoot at Path(cacheRoot,
// f.ProviderURL) and returns that path. Directories are created with mode
// 0700 and the file with mode 0600; the file is written to a temporary
// name and renamed into place, so a reader never sees a partial file. An
// empty CreatedAt is set to the current UTC time. Write refuses what Load
// would refuse: a missing or malformed access token or provider URL, a
// non-Bearer token type, an unreadable expiry, and owner markers.
func Write(cacheRoot string, f File) (string, error) {
	path, err := Path(cacheRoot, f.ProviderURL)
	if err != nil {
		return "", err
	}
	bad := func(format string, args ...any) error {
		return newErr(CodeCredentialInvalid, f.ProviderURL, path, nil, "refusing to write %s: %s", path, fmt.Sprintf(format, args...))
	}
	if m := f.ownerField(); m != "" {
		return "", newErr(CodeOwnerTokenRefused, f.ProviderURL, path, nil, "refusing to write %s: %s is \"owner\"; only grant-scoped client tokens belong in the cache", path, m)
	}
	if m := f.Credential.ownerField(); m != "" {
		return "", newErr(CodeOwnerTokenRefused, f.ProviderURL, path, nil, "refusing to write %s: credential.%s is \"owner\"; only grant-scoped client tokens belong in the cache", path, m)
	}
	if !validBearer(f.Credential.AccessToken) {
		return "", bad("credential.access_token is empty or contains spaces or control characters")
	}
	if tt := f.Credential.TokenType; tt != "" && !strings.EqualFold(tt, "bearer") {
		return "", bad("token_type %q is not Bearer", tt)
	}
	if _, _, err := f.Credential.ExpiresAt.Time(); err != nil {
		return "", bad("%v", err)
	}
	if len(f.Client) > 0 && !json.Valid(f.Client) {
		return "", bad("client is not valid JSON")
	}
	f.CreatedAt = cmp.Or(f.CreatedAt, time.Now().UTC().Format(time.RFC3339))
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", bad("cannot encode the file: %v", err)
	}
	data = append(data, '\n')

	failed := func(err error) error {
		return newErr(CodeWriteFailed, f.ProviderURL, path, err, "cannot write credential file %s: %v", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", failed(err)
	}
	tmp, err := os.CreateTemp(dir, ".credential-*.tmp")
	if err != nil {
		return "", failed(err)
	}
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", failed(err)
	}
	return path, nil
}
