package demors_test

import (
	"slices"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// groupsOf renders groups as "key=count".
func groupsOf(body map[string]any) []string {
	var out []string
	for _, g := range list(body["groups"]) {
		out = append(out, str(at(g, "key"))+"="+itoa(int(num(at(g, "count")))))
	}
	return out
}

func TestAggregate(t *testing.T) {
	r := newRS(t)
	// Reference values computed from the records themselves.
	var durations []float64
	for _, rec := range list(r.get(t, "/v1/streams/videos/records?limit=100&fields=duration_seconds&connection_id=cin_demo_loom_main", demors.GrantClient).mustStatus(t, 200).body["data"]) {
		durations = append(durations, num(at(rec, "data", "duration_seconds")))
	}
	sum := 0.0
	for _, d := range durations {
		sum += d
	}
	langs := map[string]int{}
	for _, rec := range list(r.get(t, "/v1/streams/transcripts/records?limit=100&fields=language", demors.GrantNarrow).mustStatus(t, 200).body["data"]) {
		langs[str(at(rec, "data", "language"))]++
	}
	cases := []struct {
		name, path, grant string
		check             func(t *testing.T, body map[string]any)
	}{
		{"count across connections", "/v1/streams/transcripts/aggregate?metric=count", demors.GrantClient, func(t *testing.T, b map[string]any) {
			if b["value"] != 48.0 || b["filtered_record_count"] != 48.0 || b["object"] != "aggregation" {
				t.Errorf("count = %v / %v", b["value"], b["filtered_record_count"])
			}
		}},
		{"count one connection", "/v1/streams/transcripts/aggregate?metric=count&connection_id=cin_demo_loom_peer", demors.GrantClient, func(t *testing.T, b map[string]any) {
			if b["value"] != 8.0 {
				t.Errorf("count = %v", b["value"])
			}
		}},
		{"group by language", "/v1/streams/transcripts/aggregate?metric=count&group_by=language", demors.GrantNarrow, func(t *testing.T, b map[string]any) {
			want := []string{"en=" + itoa(langs["en"]), "it=" + itoa(langs["it"])}
			if langs["it"] > langs["en"] {
				want[0], want[1] = want[1], want[0]
			}
			if got := groupsOf(b); !slices.Equal(got, want) || b["other_count"] != 0.0 || b["limit"] != 10.0 {
				t.Errorf("groups = %v other %v, want %v", got, b["other_count"], want)
			}
		}},
		{"group limit fills other_count", "/v1/streams/transcripts/aggregate?metric=count&group_by=language&limit=1", demors.GrantNarrow, func(t *testing.T, b map[string]any) {
			if len(list(b["groups"])) != 1 || num(b["other_count"]) != float64(min(langs["en"], langs["it"])) {
				t.Errorf("groups %v other %v", groupsOf(b), b["other_count"])
			}
		}},
		{"group by month", "/v1/streams/videos/aggregate?metric=count&group_by_time=created_at&granularity=month&connection_id=cin_demo_loom_main", demors.GrantClient, func(t *testing.T, b map[string]any) {
			if got := groupsOf(b); !slices.Equal(got, []string{"2026-01-01=31", "2026-02-01=9"}) || b["time_zone"] != "UTC" {
				t.Errorf("months = %v tz %v", got, b["time_zone"])
			}
		}},
		{"group by week starts Monday", "/v1/streams/notes/aggregate?metric=count&group_by_time=created_at&granularity=week&limit=3", demors.GrantClient, func(t *testing.T, b map[string]any) {
			// note-0 is 2026-01-03 (Saturday): its ISO week starts on Monday 2025-12-29.
			if got := groupsOf(b); len(got) != 3 || got[0] != "2025-12-29=1" || num(b["other_count"]) == 0 {
				t.Errorf("weeks = %v other %v", got, b["other_count"])
			}
		}},
		{"sum", "/v1/streams/videos/aggregate?metric=sum&field=duration_seconds&connection_id=cin_demo_loom_main", demors.GrantClient, func(t *testing.T, b map[string]any) {
			if b["value"] != sum || b["field"] != "duration_seconds" {
				t.Errorf("sum = %v, want %v", b["value"], sum)
			}
		}},
		{"min and max", "/v1/streams/videos/aggregate?metric=max&field=duration_seconds&connection_id=cin_demo_loom_main", demors.GrantClient, func(t *testing.T, b map[string]any) {
			if b["value"] != slices.Max(durations) {
				t.Errorf("max = %v, want %v", b["value"], slices.Max(durations))
			}
		}},
		{"count distinct", "/v1/streams/transcripts/aggregate?metric=count_distinct&field=language", demors.GrantNarrow, func(t *testing.T, b map[string]any) {
			if b["value"] != 2.0 {
				t.Errorf("distinct languages = %v", b["value"])
			}
		}},
		{"filters apply", "/v1/streams/transcripts/aggregate?metric=count&filter[language]=it", demors.GrantNarrow, func(t *testing.T, b map[string]any) {
			if num(b["value"]) != float64(langs["it"]) {
				t.Errorf("filtered count = %v, want %d", b["value"], langs["it"])
			}
		}},
		{"grouped metric carries values", "/v1/streams/notes/aggregate?metric=count_distinct&field=folder&group_by=folder", demors.GrantClient, func(t *testing.T, b map[string]any) {
			for _, g := range list(b["groups"]) {
				if at(g, "value") != 1.0 {
					t.Errorf("group %v", g)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, r.get(t, tc.path, tc.grant).mustStatus(t, 200).body)
		})
	}
}

func TestAggregateErrors(t *testing.T) {
	r := newRS(t)
	cases := []struct{ name, path, param string }{
		{"unknown metric", "/v1/streams/transcripts/aggregate?metric=median", "metric"},
		{"sum without field", "/v1/streams/transcripts/aggregate?metric=sum", "field"},
		{"sum on undeclared field", "/v1/streams/transcripts/aggregate?metric=sum&field=language", "field"},
		{"group by undeclared field", "/v1/streams/transcripts/aggregate?metric=count&group_by=text", "group_by"},
		{"group_by with group_by_time", "/v1/streams/transcripts/aggregate?metric=count&group_by=language&group_by_time=created_at&granularity=day", "group_by"},
		{"group_by_time without granularity", "/v1/streams/transcripts/aggregate?metric=count&group_by_time=created_at", "granularity"},
		{"unknown granularity", "/v1/streams/transcripts/aggregate?metric=count&group_by_time=created_at&granularity=fortnight", "granularity"},
		{"other time zone", "/v1/streams/transcripts/aggregate?metric=count&group_by_time=created_at&granularity=day&time_zone=Europe/Rome", "time_zone"},
		{"ungranted field", "/v1/streams/transcripts/aggregate?metric=count_distinct&field=video_id", "field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.get(t, tc.path, demors.GrantNarrow).mustStatus(t, 400)
			if resp.errCode() != "invalid_request" || resp.errField("param") != tc.param {
				t.Errorf("error = %s, want param %q", resp.raw, tc.param)
			}
		})
	}
}
