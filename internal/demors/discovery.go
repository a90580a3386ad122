package demors

import "net/http"

// serveDiscovery answers GET / with a small unauthenticated index (also a readiness probe).
func (s *Server) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	_ = jsonReply(http.StatusOK, obj(
		"object", "pdpp_discovery_index",
		"role", "resource_server",
		"resource_name", "PDPP demo resource server",
		"links", obj(
			"well_known", "/.well-known/oauth-protected-resource",
			"schema", "/v1/schema",
			"core_query_base", "/v1",
		),
		"reference_revision", "pdpp-mcp-demors",
	)).write(w)
}

// serveProtectedResource answers the RFC 9728 metadata, naming its own origin as the
// authorization server: fixed tokens are issued at startup, and Config.OAuth serves one there.
func (s *Server) serveProtectedResource(w http.ResponseWriter, r *http.Request) {
	rc := reqCtxFrom(r.Context())
	_ = jsonReply(http.StatusOK, obj(
		"resource", rc.baseURL,
		"resource_name", "PDPP demo resource server",
		"authorization_servers", []string{rc.baseURL},
		"bearer_methods_supported", []string{"header"},
		"pdpp_provider_connect_version", "demo",
		"pdpp_self_export_supported", false,
		"pdpp_token_kinds_supported", []string{"client", "owner"},
		"pdpp_core_query_base", rc.baseURL+"/v1",
		"capabilities", obj(
			"lexical_retrieval", obj("supported", true, "endpoint", "/v1/search", "cross_stream", true,
				"default_limit", defaultSearchLimit, "max_limit", maxSearchLimit, "snippets", true,
				"score", obj("supported", true, "kind", "bm25", "order", "lower_is_better", "value_semantics", "implementation_relative")),
			"semantic_retrieval", obj("supported", true, "stability", "experimental", "endpoint", "/v1/search/semantic",
				"cross_stream", true, "query_input", "text", "snippets", true, "lexical_blending", false,
				"model", "token-overlap", "dimensions", s.store.SemanticVocabulary(), "distance_metric", "token_overlap",
				"default_limit", defaultSearchLimit, "max_limit", maxSearchLimit, "index_state", "built"),
			"hybrid_retrieval", obj("supported", true, "endpoint", "/v1/search/hybrid", "cross_stream", true,
				"default_limit", defaultSearchLimit, "max_limit", maxSearchLimit, "sources", []string{"lexical", "semantic"},
				"cursor_supported", false, "stability", "experimental"),
			"client_event_subscriptions", obj("supported", true, "endpoint", "/v1/event-subscriptions",
				// The demo delivers only these two events, once each, with no retries.
				"event_types", []any{
					obj("type", "pdpp.subscription.verify", "description", "sent after create; answer it with the challenge to activate the subscription"),
					obj("type", "pdpp.subscription.test", "description", "sent by the test-event route"),
				},
				"signing", obj("profile", "standard-webhooks", "algorithm", "HMAC-SHA256",
					"id_header", headerWebhookID, "timestamp_header", headerWebhookTimestamp, "signature_header", headerWebhookSignature),
				"delivery", obj("envelope", "CloudEvents 1.0 structured mode, POSTed as application/cloudevents+json",
					"semantics", "one attempt per event, no retries (demo)", "retries", "none: a failed delivery is not retried by the demo RS", "max_attempts", 1),
			),
		),
	)).write(w)
}
