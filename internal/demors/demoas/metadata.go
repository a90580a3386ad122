package demoas

import "net/http"

// metadata is the RFC 8414 document. It names no scopes_supported: the reference
// authorization server refuses a registration that carries scope, and clients copy
// advertised scopes into their registration.
type metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	AuthorizationDetailsTypes         []string `json:"authorization_details_types_supported"`
	PDPPAuthorizationDetailsTypes     []string `json:"pdpp_authorization_details_types_supported"`
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, http.MethodGet, http.MethodHead)
		return
	}
	iss := issuer(r)
	writeJSON(w, http.StatusOK, metadata{
		Issuer:                            iss,
		AuthorizationEndpoint:             iss + "/oauth/authorize",
		TokenEndpoint:                     iss + "/oauth/token",
		RegistrationEndpoint:              iss + "/oauth/register",
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		// An https client_id names the client's metadata document (cimd.go).
		ClientIDMetadataDocumentSupported: true,
		AuthorizationDetailsTypes:         []string{DataAccessType},
		PDPPAuthorizationDetailsTypes:     []string{DataAccessType},
	})
}
