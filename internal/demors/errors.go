package demors

import (
	"fmt"
	"net/http"
)

// apiError is one RS error envelope: {"error": {code, message, type, ...}}.
type apiError struct {
	status  int
	code    string
	message string
	typ     string
	param   string
	// auth errors carry resource_metadata and next_step, and a WWW-Authenticate header.
	auth                 bool
	availableConnections []object
	retryWith            string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// reply turns the error into its envelope for the request.
func (e *apiError) reply(rc *reqCtx) *reply {
	body := obj("code", e.code, "message", e.message, "type", e.typ)
	if e.param != "" {
		body = body.set("param", e.param)
	}
	if e.auth {
		body = body.set("resource_metadata", rc.resourceMetadataURL()).set("next_step", authNextStep)
	}
	if e.availableConnections != nil {
		body = body.set("available_connections", e.availableConnections)
	}
	if e.retryWith != "" {
		body = body.set("retry_with", e.retryWith)
	}
	r := jsonReply(e.status, obj("error", body.set("request_id", rc.requestID)))
	if e.auth {
		r.header.Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", rc.resourceMetadataURL()))
	}
	return r
}

const authNextStep = "Fetch error.resource_metadata, then request a scoped client grant for this resource; " +
	"this demo resource server's grants come from its startup tokens or its own authorization server, and owner tokens are never accepted for grant-scoped tools."

const authFailedMessage = "Token introspection failed closed"

func errInactiveToken() *apiError    { return errAuth("context.active_false", authFailedMessage) }
func errStreamNotAllowed() *apiError { return errAuth("context.stream_not_allowed", authFailedMessage) }

func errAuth(code, msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: code, message: msg, typ: "authentication_error", auth: true}
}

func errNotFound(msg string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "not_found", message: msg, typ: "not_found_error"}
}

func errInvalid(param, format string, args ...any) *apiError {
	return errBadRequest("invalid_request", param, fmt.Sprintf(format, args...))
}
func errInvalidCursor() *apiError { return errBadRequest("invalid_cursor", "", "Malformed cursor") }
func errInvalidExpand(format string, args ...any) *apiError {
	return errBadRequest("invalid_expand", "expand", fmt.Sprintf(format, args...))
}
func errInvalidFieldPath(format string, args ...any) *apiError {
	return errBadRequest("invalid_field_path", "field", fmt.Sprintf(format, args...))
}

func errBadRequest(code, param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: msg, typ: "invalid_request_error", param: param}
}

func errFieldNotText(field, kind string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "field_not_text",
		message: fmt.Sprintf("field '%s' is %s, not a readable text field; non-text and binary fields are metadata-only", field, kind),
		typ:     "api_error"}
}

func errAmbiguous(message string, conns []object) *apiError {
	return &apiError{status: http.StatusConflict, code: "ambiguous_connection",
		message:              message,
		typ:                  "api_error",
		availableConnections: conns,
		retryWith:            "connection_id",
	}
}

func errForbidden(code, msg string) *apiError {
	return &apiError{status: http.StatusForbidden, code: code, message: msg, typ: "permission_error"}
}

func errConflict(code, msg string) *apiError {
	return &apiError{status: http.StatusConflict, code: code, message: msg, typ: "invalid_request_error"}
}

func errInternal() *apiError {
	return &apiError{status: http.StatusInternalServerError, code: "internal_error",
		message: "The demo resource server failed to answer this request", typ: "api_error"}
}
