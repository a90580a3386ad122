package demors_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// connectorIDs lists connectors[].connector_id.
func connectorIDs(body map[string]any) []string {
	var out []string
	for _, c := range list(body["connectors"]) {
		out = append(out, str(at(c, "connector_id")))
	}
	return out
}

func streamNames(connector any) []string {
	var out []string
	for _, s := range list(at(connector, "streams")) {
		out = append(out, str(at(s, "name")))
	}
	return out
}

func connectionIDs(v any) []string {
	var out []string
	for _, c := range list(v) {
		out = append(out, str(at(c, "connection_id")))
	}
	return out
}

func TestSchemaCompact(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, path, grant string
		connectors        []string
		loomStreams       []string
		loomConnections   []string
		kind              string
		check             func(t *testing.T, body map[string]any)
	}{
		{
			name: "client sees three connections", path: "/v1/schema?view=compact", grant: demors.GrantClient,
			connectors: []string{"loom", "notes"}, loomStreams: []string{"videos", "transcripts"},
			loomConnections: []string{"cin_demo_loom_main", "cin_demo_loom_peer"}, kind: "client",
			check: func(t *testing.T, body map[string]any) {
				caps := at(body, "connectors", 0, "streams", 0, "field_capabilities")
				if got := str(at(caps, "title")); got != "t=string,role=primary-title,eq,lex,sem" {
					t.Errorf("videos.title flags = %q", got)
				}
				if got := str(at(caps, "metadata")); got != "t=object" {
					t.Errorf("videos.metadata flags = %q", got)
				}
				if got := str(at(body, "connectors", 1, "streams", 0, "field_capabilities", "attachment")); got != "t=blob,role=media" {
					t.Errorf("notes.attachment flags = %q", got)
				}
				if n := len(list(at(body, "connectors", 0, "streams", 0, "expand_capabilities"))); n != 0 {
					t.Errorf("videos declares %d expand capabilities, want none", n)
				}
				video := at(body, "connectors", 0, "streams", 1, "expand_capabilities", 0)
				if str(at(video, "name")) != "video" || at(video, "usable") != true || str(at(video, "cardinality")) != "has_one" {
					t.Errorf("transcripts expand = %v", video)
				}
				if at(body, "bearer", "grant_id") != "grt_demo_client" || at(body, "connector_count") != 2.0 || at(body, "stream_count") != 3.0 {
					t.Errorf("bearer/counts wrong: %v %v %v", at(body, "bearer"), at(body, "connector_count"), at(body, "stream_count"))
				}
			},
		},
		{
			name: "narrow grant is one stream with a field scope", path: "/v1/schema?view=compact", grant: demors.GrantNarrow,
			connectors: []string{"loom"}, loomStreams: []string{"transcripts"},
			loomConnections: []string{"cin_demo_loom_main"}, kind: "client",
			check: func(t *testing.T, body map[string]any) {
				caps := at(body, "connectors", 0, "streams", 0, "field_capabilities")
				if got := str(at(caps, "video_id")); got != "t=string,g=false" {
					t.Errorf("ungranted video_id flags = %q", got)
				}
				video := at(body, "connectors", 0, "streams", 0, "expand_capabilities", 0)
				if at(video, "usable") != false || str(at(video, "reason")) != "related_stream_not_granted" {
					t.Errorf("expand video under narrow grant = %v", video)
				}
			},
		},
		{
			name: "owner token reports owner", path: "/v1/schema?view=compact", grant: demors.GrantOwner,
			connectors: []string{"loom", "notes"}, loomStreams: []string{"videos", "transcripts"},
			loomConnections: []string{"cin_demo_loom_main", "cin_demo_loom_peer"}, kind: "owner",
		},
		{
			name: "stream scope", path: "/v1/schema?view=compact&stream=transcripts", grant: demors.GrantClient,
			connectors: []string{"loom"}, loomStreams: []string{"transcripts"},
			loomConnections: []string{"cin_demo_loom_main", "cin_demo_loom_peer"}, kind: "client",
		},
		{
			name: "connection scope", path: "/v1/schema?view=compact&connection_id=cin_demo_loom_peer", grant: demors.GrantClient,
			connectors: []string{"loom"}, loomStreams: []string{"videos", "transcripts"},
			loomConnections: []string{"cin_demo_loom_peer"}, kind: "client",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := r.get(t, tc.path, tc.grant).mustStatus(t, 200).body
			if body["object"] != "schema" || body["detail"] != "compact" {
				t.Errorf("object/detail = %v/%v", body["object"], body["detail"])
			}
			if got := connectorIDs(body); !slices.Equal(got, tc.connectors) {
				t.Fatalf("connectors = %v, want %v", got, tc.connectors)
			}
			loom := list(body["connectors"])[0]
			if got := streamNames(loom); !slices.Equal(got, tc.loomStreams) {
				t.Errorf("loom streams = %v, want %v", got, tc.loomStreams)
			}
			if got := connectionIDs(at(loom, "granted_connections")); !slices.Equal(got, tc.loomConnections) {
				t.Errorf("granted_connections = %v, want %v", got, tc.loomConnections)
			}
			if got := str(at(body, "bearer", "token_kind")); got != tc.kind {
				t.Errorf("bearer.token_kind = %q, want %q", got, tc.kind)
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
}

func TestSchemaFull(t *testing.T) {
	r := newRS(t)
	body := r.get(t, "/v1/schema?stream=transcripts", demors.GrantNarrow).mustStatus(t, 200).body
	st := at(body, "connectors", 0, "streams", 0)
	if str(at(st, "object")) != "stream_metadata" {
		t.Fatalf("stream object = %v", at(st, "object"))
	}
	cases := []struct {
		field                    string
		granted, lexical, filter bool
		role                     string
		rangeOps                 int
	}{
		{"id", true, false, true, "", 0},
		{"video_id", false, false, false, "", 0},
		{"language", true, false, true, "", 0},
		{"text", true, true, true, "secondary", 0},
		{"created_at", true, false, true, "event-time", 4},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c := at(st, "field_capabilities", tc.field)
			if at(c, "granted") != tc.granted {
				t.Errorf("granted = %v", at(c, "granted"))
			}
			if at(c, "lexical_search", "usable") != tc.lexical {
				t.Errorf("lexical_search = %v", at(c, "lexical_search"))
			}
			if at(c, "exact_filter", "usable") != tc.filter {
				t.Errorf("exact_filter = %v", at(c, "exact_filter"))
			}
			if str(at(c, "role")) != tc.role {
				t.Errorf("role = %v", at(c, "role"))
			}
			if len(list(at(c, "range_filter", "operators"))) != tc.rangeOps {
				t.Errorf("range_filter = %v", at(c, "range_filter"))
			}
			if !tc.granted && str(at(c, "lexical_search", "reason")) == "" && at(c, "aggregation", "count_distinct", "reason") != "field_not_granted" {
				t.Errorf("ungranted field lacks field_not_granted reason: %v", c)
			}
			if at(c, "schema", "type") == nil {
				t.Errorf("field schema has no type: %v", at(c, "schema"))
			}
		})
	}
	if got := connectionIDs(at(st, "granted_connections")); !slices.Equal(got, []string{"cin_demo_loom_main"}) {
		t.Errorf("granted_connections = %v", got)
	}
}

func TestSchemaErrors(t *testing.T) {
	r := newRS(t)
	cases := []struct{ name, path, grant, code string }{
		{"stream outside grant", "/v1/schema?stream=notes", demors.GrantNarrow, "context.stream_not_allowed"},
		{"connection outside grant", "/v1/schema?connection_id=cin_demo_notes", demors.GrantNarrow, "context.instance_mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.get(t, tc.path, tc.grant).mustStatus(t, 401)
			if resp.errCode() != tc.code {
				t.Errorf("code = %q, want %q", resp.errCode(), tc.code)
			}
		})
	}
}

func TestStreams(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, path, grant string
		want              []string // "stream@connection=count"
	}{
		{"client", "/v1/streams", demors.GrantClient, []string{
			"videos@cin_demo_loom_main=40", "videos@cin_demo_loom_peer=8",
			"transcripts@cin_demo_loom_main=40", "transcripts@cin_demo_loom_peer=8",
			"notes@cin_demo_notes=12",
		}},
		{"narrow", "/v1/streams", demors.GrantNarrow, []string{"transcripts@cin_demo_loom_main=40"}},
		{"one connection", "/v1/streams?connection_id=cin_demo_loom_peer", demors.GrantClient, []string{
			"videos@cin_demo_loom_peer=8", "transcripts@cin_demo_loom_peer=8",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := r.get(t, tc.path, tc.grant).mustStatus(t, 200).body
			var got []string
			for _, s := range list(body["data"]) {
				got = append(got, str(at(s, "name"))+"@"+str(at(s, "connection_id"))+"="+itoa(int(num(at(s, "record_count")))))
				if at(s, "connector_instance_id") != at(s, "connection_id") || str(at(s, "freshness", "status")) == "" {
					t.Errorf("stream entry incomplete: %v", s)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("streams = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("metadata", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts", demors.GrantClient).mustStatus(t, 200).body
		ids := list(body["instance_ids"])
		if body["object"] != "stream_metadata" || len(ids) != 2 || !strings.HasPrefix(str(at(body, "links", "self")), "/v1/streams/transcripts") {
			t.Errorf("metadata = %v / %v", body["object"], ids)
		}
		if str(at(body, "query", "expand", 0, "name")) != "video" {
			t.Errorf("query.expand = %v", at(body, "query"))
		}
	})
}
