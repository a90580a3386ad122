package credentials

import "fmt"

// Error codes returned in Error.Code.
const (
	CodeNotConnected       = "not_connected"
	CodeCredentialInvalid  = "credential_invalid"
	CodeCredentialExpired  = "credential_expired"
	CodeOwnerTokenRefused  = "owner_token_refused"
	CodeInvalidProviderURL = "invalid_provider_url"
	CodeWriteFailed        = "credential_write_failed"
)

// Process exit codes (BSD sysexits) carried by Error.ExitCode.
const (
	ExitUsage  = 64 // EX_USAGE: the provider URL argument is malformed
	ExitIOErr  = 74 // EX_IOERR: the cache file could not be written
	ExitNoPerm = 77 // EX_NOPERM: an owner token was refused
	ExitConfig = 78 // EX_CONFIG: missing, invalid or expired credential
)

// ParamProviderURL is the Param of every Error: the credential is looked up
// by provider URL.
const ParamProviderURL = "provider_url"

// Error is a credential cache failure. Message says what is wrong and names
// the fix (`pdpp connect <provider-url>`); it never contains a token.
type Error struct {
	Code    string
	Param   string
	Message string
	// ProviderURL and Path identify the credential that was looked up
	// (Path is empty when the provider URL itself was malformed).
	ProviderURL string
	Path        string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the process exit status for this failure: 77 for a refused
// owner token, 64 for a malformed provider URL, 74 for a failed write and
// 78 for a missing, invalid or expired credential.
func (e *Error) ExitCode() int {
	if code, ok := map[string]int{CodeOwnerTokenRefused: ExitNoPerm, CodeInvalidProviderURL: ExitUsage, CodeWriteFailed: ExitIOErr}[e.Code]; ok {
		return code
	}
	return ExitConfig
}

func newErr(code, providerURL, path string, cause error, format string, args ...any) *Error {
	return &Error{
		Code:        code,
		Param:       ParamProviderURL,
		Message:     fmt.Sprintf(format, args...),
		ProviderURL: providerURL,
		Path:        path,
		Err:         cause,
	}
}
