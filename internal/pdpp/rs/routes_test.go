package rs

import (
	"context"
	"testing"
)

func TestRoute(t *testing.T) {
	tok := func(context.Context) (string, error) { return "t", nil }
	tests := []struct {
		base, path, want string
	}{
		{"http://rs.example", "/v1/schema", "/v1/schema"},
		{"http://rs.example", "/v1/streams/videos/records", "/v1/streams/{stream}/records"},
		{"http://rs.example", "/v1/streams/videos/records/rec-123", "/v1/streams/{stream}/records/{id}"},
		{"http://rs.example", "/v1/streams/videos/records/rec%2F1/field-window", "/v1/streams/{stream}/records/{id}/field-window"},
		{"http://rs.example", "/v1/streams/videos/aggregate", "/v1/streams/{stream}/aggregate"},
		{"http://rs.example", "/v1/search/hybrid", "/v1/search/hybrid"},
		{"http://rs.example", "/v1/event-subscriptions/sub_9/test-event", "/v1/event-subscriptions/{subscription_id}/test-event"},
		{"http://rs.example", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource"},
		{"http://rs.example/pdpp", "/pdpp/v1/blobs/blob_1", "/v1/blobs/{blob_id}"},
		{"http://rs.example/pdpp", "/v1/blobs/blob_1", RouteOther},
		{"http://rs.example", "/v1/streams/videos/records/a/b/c", RouteOther},
		{"http://rs.example", "/v1/streams//records", RouteOther},
		{"http://rs.example", "/secret-token-in-path", RouteOther},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			c, err := New(tc.base, tok, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Route(tc.path); got != tc.want {
				t.Errorf("Route(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
