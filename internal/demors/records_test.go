package demors_test

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

func dataKeys(rec any) []string {
	var out []string
	for k := range object(at(rec, "data")) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRecordsPaging(t *testing.T) {
	r := newRS(t)
	t.Run("default page", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts/records", demors.GrantNarrow).mustStatus(t, 200).body
		data := list(body["data"])
		if len(data) != 25 || body["has_more"] != true || str(body["next_cursor"]) == "" {
			t.Fatalf("default page: %d records, has_more %v, cursor %v", len(data), body["has_more"], body["next_cursor"])
		}
		if str(at(data, 0, "id")) != "tr-39" || str(at(data, 1, "id")) != "tr-38" {
			t.Errorf("default order is not newest first: %v, %v", at(data, 0, "id"), at(data, 1, "id"))
		}
	})
	for _, order := range []string{"desc", "asc"} {
		t.Run("cursor walk "+order, func(t *testing.T) {
			path := q("/v1/streams/transcripts/records", "limit", "7", "fields", "id,created_at", "order", order)
			var ids []string
			var last string
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("cursor never ended")
				}
				body := r.get(t, path, demors.GrantNarrow).mustStatus(t, 200).body
				for _, rec := range list(body["data"]) {
					ids = append(ids, str(at(rec, "id")))
					ts := str(at(rec, "emitted_at"))
					if last != "" && (order == "asc") != (ts > last) {
						t.Fatalf("order %s broken at %s (%s after %s)", order, at(rec, "id"), ts, last)
					}
					last = ts
				}
				if body["has_more"] != true {
					if _, has := body["next_cursor"]; has {
						t.Error("last page carries next_cursor")
					}
					break
				}
				path = str(at(body, "links", "next"))
			}
			if len(ids) != 40 || len(uniq(ids)) != 40 {
				t.Errorf("walked %d ids (%d distinct), want 40", len(ids), len(uniq(ids)))
			}
		})
	}
	t.Run("limit clamp", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts/records?limit=500&fields=id", demors.GrantNarrow).mustStatus(t, 200).body
		if n := len(list(body["data"])); n != 40 {
			t.Errorf("records = %d", n)
		}
		w := at(body, "meta", "warnings", 0)
		if str(at(w, "code")) != "limit_clamped" || at(w, "detail", "max_limit") != 100.0 || at(w, "detail", "requested_limit") != 500.0 || str(at(w, "param")) != "limit" {
			t.Errorf("warning = %v", w)
		}
	})
	t.Run("count exact", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts/records?limit=1&count=exact", demors.GrantClient).mustStatus(t, 200).body
		if at(body, "meta", "count", "kind") != "exact" || at(body, "meta", "count", "value") != 48.0 {
			t.Errorf("meta.count = %v", at(body, "meta", "count"))
		}
	})
	t.Run("changes since", func(t *testing.T) {
		body := r.get(t, "/v1/streams/notes/records?changes_since=beginning&limit=100", demors.GrantClient).mustStatus(t, 200).body
		if n := len(list(body["data"])); n != 12 || str(at(body, "data", 0, "id")) != "note-0" {
			t.Fatalf("changes from the beginning: %d records, first %v", n, at(body, "data", 0, "id"))
		}
		next := str(body["next_changes_since"])
		if next == "" {
			t.Fatal("no next_changes_since")
		}
		again := r.get(t, q("/v1/streams/notes/records", "changes_since", next), demors.GrantClient).mustStatus(t, 200).body
		if n := len(list(again["data"])); n != 0 {
			t.Errorf("%d changes after the last token, want 0", n)
		}
		mid := r.get(t, q("/v1/streams/notes/records", "changes_since", "2026-01-20T00:00:00Z"), demors.GrantClient).mustStatus(t, 200).body
		if str(at(mid, "data", 0, "id")) != "note-6" {
			t.Errorf("changes since a time start at %v, want note-6", at(mid, "data", 0, "id"))
		}
	})
}

func uniq(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

func TestRecordsMultiConnection(t *testing.T) {
	r := newRS(t)
	body := r.get(t, "/v1/streams/transcripts/records?limit=3&fields=id,language", demors.GrantClient).mustStatus(t, 200).body
	conns := map[string]int{}
	for _, rec := range list(body["data"]) {
		conns[str(at(rec, "connection_id"))]++
		if at(rec, "connector_instance_id") != at(rec, "connection_id") || str(at(rec, "display_name")) == "" {
			t.Errorf("record lacks connection identity: %v", rec)
		}
	}
	if conns["cin_demo_loom_main"] != 3 || conns["cin_demo_loom_peer"] != 3 {
		t.Errorf("fan-in per connection = %v, want 3 and 3", conns)
	}
	if body["has_more"] != true || body["next_cursor"] != nil || at(body, "links", "next") != nil {
		t.Errorf("fan-in page: has_more %v next_cursor %v", body["has_more"], body["next_cursor"])
	}
	if !slices.Contains(warningCodes(body), "partial_results") {
		t.Errorf("warnings = %v, want partial_results", warningCodes(body))
	}
	one := r.get(t, "/v1/streams/transcripts/records?limit=3&connection_id=cin_demo_loom_peer", demors.GrantClient).mustStatus(t, 200).body
	for _, rec := range list(one["data"]) {
		if at(rec, "connection_id") != "cin_demo_loom_peer" {
			t.Errorf("connection_id scope leaked %v", at(rec, "connection_id"))
		}
	}
	if str(one["next_cursor"]) == "" {
		t.Error("single-connection page has no cursor")
	}
}

func TestRecordsProjectionAndFilters(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, path, grant string
		check             func(t *testing.T, data []any)
	}{
		{"narrow grant never returns ungranted fields", "/v1/streams/transcripts/records?limit=3", demors.GrantNarrow,
			func(t *testing.T, data []any) {
				for _, rec := range data {
					if got := dataKeys(rec); !slices.Equal(got, []string{"created_at", "id", "language", "text"}) {
						t.Errorf("narrow data keys = %v", got)
					}
				}
			}},
		{"projection", "/v1/streams/videos/records?limit=2&fields=id,title&connection_id=cin_demo_loom_main", demors.GrantClient,
			func(t *testing.T, data []any) {
				for _, rec := range data {
					if got := dataKeys(rec); !slices.Equal(got, []string{"id", "title"}) {
						t.Errorf("projected keys = %v", got)
					}
				}
			}},
		{"exact filter", "/v1/streams/transcripts/records?limit=100&filter[language]=it&fields=id,language", demors.GrantNarrow,
			func(t *testing.T, data []any) {
				if len(data) == 0 || len(data) == 40 {
					t.Fatalf("filter kept %d of 40", len(data))
				}
				for _, rec := range data {
					if at(rec, "data", "language") != "it" {
						t.Errorf("filter leaked %v", at(rec, "data"))
					}
				}
			}},
		{"range filter", "/v1/streams/videos/records?limit=100&filter[created_at][gte]=2026-02-01T00:00:00Z&filter[created_at][lt]=2026-02-05", demors.GrantOwner,
			func(t *testing.T, data []any) {
				var ids []string
				for _, rec := range data {
					ids = append(ids, str(at(rec, "id")))
				}
				if !slices.Equal(ids, []string{"vid-34", "vid-33", "vid-32", "vid-31"}) {
					t.Errorf("range kept %v", ids)
				}
			}},
		{"integer range filter", "/v1/streams/videos/records?limit=100&filter[duration_seconds][lte]=600&connection_id=cin_demo_loom_main", demors.GrantClient,
			func(t *testing.T, data []any) {
				for _, rec := range data {
					if num(at(rec, "data", "duration_seconds")) > 600 {
						t.Errorf("duration filter leaked %v", at(rec, "data", "duration_seconds"))
					}
				}
			}},
		{"expand video", "/v1/streams/transcripts/records?limit=2&fields=id,video_id&expand=video&expand_limit[video]=2&connection_id=cin_demo_loom_main", demors.GrantClient,
			func(t *testing.T, data []any) {
				for _, rec := range data {
					v := at(rec, "expanded", "video")
					if str(at(v, "id")) != str(at(rec, "data", "video_id")) || str(at(v, "stream")) != "videos" || str(at(v, "connection_id")) != "cin_demo_loom_main" {
						t.Errorf("expanded video = %v for %v", v, at(rec, "data"))
					}
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := r.get(t, tc.path, tc.grant).mustStatus(t, 200).body
			tc.check(t, list(body["data"]))
		})
	}
}

func TestRecordsBadRequests(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, path, grant string
		status            int
		code, param       string
	}{
		{"malformed cursor", "/v1/streams/transcripts/records?cursor=garbage", demors.GrantNarrow, 400, "invalid_cursor", ""},
		{"cursor of another stream", "", demors.GrantClient, 400, "invalid_cursor", ""},
		{"limit zero", "/v1/streams/transcripts/records?limit=0", demors.GrantNarrow, 400, "invalid_request", "limit"},
		{"bad order", "/v1/streams/transcripts/records?order=sideways", demors.GrantNarrow, 400, "invalid_request", "order"},
		{"unknown field in projection", "/v1/streams/transcripts/records?fields=id,bogus", demors.GrantNarrow, 400, "invalid_request", "fields"},
		{"ungranted field in projection", "/v1/streams/transcripts/records?fields=id,video_id", demors.GrantNarrow, 400, "invalid_request", "fields"},
		{"unknown filter field", "/v1/streams/transcripts/records?filter[bogus]=x", demors.GrantNarrow, 400, "invalid_request", "filter"},
		{"range on undeclared field", "/v1/streams/transcripts/records?filter[language][gte]=a", demors.GrantNarrow, 400, "invalid_request", "filter"},
		{"filter on ungranted field", "/v1/streams/transcripts/records?filter[video_id]=vid-1", demors.GrantNarrow, 400, "invalid_request", "filter"},
		{"exact filter on object", "/v1/streams/videos/records?filter[metadata]=x", demors.GrantClient, 400, "invalid_request", "filter"},
		{"filter value of wrong type", "/v1/streams/videos/records?filter[duration_seconds][gte]=long", demors.GrantClient, 400, "invalid_request", "filter"},
		{"unknown operator", "/v1/streams/videos/records?filter[created_at][near]=2026-01-01", demors.GrantClient, 400, "invalid_request", "filter"},
		{"bare filter", "/v1/streams/videos/records?filter=title", demors.GrantClient, 400, "invalid_request", "filter"},
		{"expand on a stream without relations", "/v1/streams/videos/records?expand=transcripts", demors.GrantClient, 400, "invalid_expand", "expand"},
		{"expand into an ungranted stream", "/v1/streams/transcripts/records?expand=video", demors.GrantNarrow, 400, "invalid_expand", "expand"},
		{"expand_limit without expand", "/v1/streams/transcripts/records?expand_limit[video]=2", demors.GrantClient, 400, "invalid_request", "expand_limit"},
		{"expand_limit not a number", "/v1/streams/transcripts/records?expand=video&expand_limit[video]=lots", demors.GrantClient, 400, "invalid_request", "expand_limit"},
		{"expand_limit out of range", "/v1/streams/transcripts/records?expand=video&expand_limit[video]=0", demors.GrantClient, 400, "invalid_request", "expand_limit"},
		{"bad changes_since", "/v1/streams/notes/records?changes_since=yesterday", demors.GrantClient, 400, "invalid_request", "changes_since"},
		{"unknown sort", "/v1/streams/notes/records?sort=title", demors.GrantClient, 400, "invalid_request", "sort"},
	}
	cursor := str(r.get(t, "/v1/streams/notes/records?limit=1", demors.GrantClient).mustStatus(t, 200).body["next_cursor"])
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = q("/v1/streams/videos/records", "cursor", cursor, "connection_id", "cin_demo_loom_main")
			}
			resp := r.get(t, path, tc.grant).mustStatus(t, tc.status)
			if resp.errCode() != tc.code {
				t.Errorf("code = %q, want %q (%s)", resp.errCode(), tc.code, resp.raw)
			}
			if p, _ := resp.errField("param").(string); p != tc.param {
				t.Errorf("param = %q, want %q", p, tc.param)
			}
		})
	}
}

func TestRecordDetail(t *testing.T) {
	r := newRS(t)
	t.Run("ambiguous id", func(t *testing.T) {
		resp := r.get(t, "/v1/streams/transcripts/records/tr-5?fields=id", demors.GrantClient).mustStatus(t, 409)
		if resp.errCode() != "ambiguous_connection" || resp.errField("retry_with") != "connection_id" {
			t.Fatalf("error = %s", resp.raw)
		}
		got := connectionIDs(resp.errField("available_connections"))
		if !slices.Equal(got, []string{"cin_demo_loom_main", "cin_demo_loom_peer"}) {
			t.Errorf("available_connections = %v", got)
		}
		if !strings.Contains(str(resp.errField("message")), "tr-5") {
			t.Errorf("message does not name the record: %v", resp.errField("message"))
		}
	})
	t.Run("id only in one connection", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts/records/tr-20", demors.GrantClient).mustStatus(t, 200).body
		if body["connection_id"] != "cin_demo_loom_main" {
			t.Errorf("connection_id = %v", body["connection_id"])
		}
	})
	for _, conn := range []string{"cin_demo_loom_main", "cin_demo_loom_peer"} {
		t.Run("with "+conn, func(t *testing.T) {
			body := r.get(t, q("/v1/streams/transcripts/records/tr-5", "connection_id", conn), demors.GrantClient).mustStatus(t, 200).body
			if body["connection_id"] != conn || body["connector_key"] != "https://registry.pdpp.dev/connectors/loom" || body["object"] != "record" {
				t.Errorf("record envelope = %v %v %v", body["connection_id"], body["connector_key"], body["object"])
			}
			compact, err := json.Marshal(body["data"])
			if err != nil {
				t.Fatal(err)
			}
			// Go's encoder escapes <>&; the data holds none, so sizes agree byte for byte.
			if int(num(body["record_json_bytes"])) != len(compact) {
				t.Errorf("record_json_bytes = %v, data is %d bytes", body["record_json_bytes"], len(compact))
			}
			n := len([]rune(str(at(body, "data", "text"))))
			if n < 20000 || n > 25000 {
				t.Errorf("transcript text is %d characters", n)
			}
		})
	}
	t.Run("narrow record", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts/records/tr-5", demors.GrantNarrow).mustStatus(t, 200).body
		if got := dataKeys(body); !slices.Equal(got, []string{"created_at", "id", "language", "text"}) {
			t.Errorf("narrow record keys = %v", got)
		}
	})
	t.Run("expand on detail", func(t *testing.T) {
		body := r.get(t, "/v1/streams/transcripts/records/tr-5?connection_id=cin_demo_loom_peer&expand=video", demors.GrantClient).mustStatus(t, 200).body
		if str(at(body, "expanded", "video", "id")) != "vid-5" || at(body, "expanded", "video", "connection_id") != "cin_demo_loom_peer" {
			t.Errorf("expanded = %v", at(body, "expanded"))
		}
	})
	t.Run("note with attachment", func(t *testing.T) {
		body := r.get(t, "/v1/streams/notes/records/note-0", demors.GrantClient).mustStatus(t, 200).body
		att := at(body, "data", "attachment")
		if !strings.HasPrefix(str(at(att, "blob_id")), "blob_") || str(at(att, "media_type")) != "application/pdf" || num(at(att, "size_bytes")) < 1000 {
			t.Errorf("attachment = %v", att)
		}
	})
}
