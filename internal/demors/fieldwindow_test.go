package demors_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// fullText fetches a text field through the record endpoint.
func fullText(t *testing.T, r *rs, stream, id, conn, field string) string {
	t.Helper()
	path := "/v1/streams/" + stream + "/records/" + id + "?fields=" + field
	if conn != "" {
		path += "&connection_id=" + conn
	}
	return str(at(r.get(t, path, demors.GrantClient).mustStatus(t, 200).body, "data", field))
}

func TestFieldWindow(t *testing.T) {
	r := newRS(t)
	text := []rune(fullText(t, r, "transcripts", "tr-5", "cin_demo_loom_main", "text"))
	total := len(text)
	needle := strings.Index(string(text), "needle5 ")
	matchStart := utf8.RuneCountInString(string(text)[:needle])
	note := []rune(fullText(t, r, "notes", "note-11", "", "body"))
	title := []rune(fullText(t, r, "videos", "vid-5", "cin_demo_loom_main", "title"))
	type want struct {
		start, end, limit, total int
		complete, hasMore        bool
		next, prev               any
		matchStart               any
		text                     []rune
	}
	base := "/v1/streams/transcripts/records/tr-5/field-window?field=text&connection_id=cin_demo_loom_main"
	cases := []struct {
		name, path, grant string
		want              want
		warnings          []string
	}{
		{"default window", base, demors.GrantClient,
			want{0, 4096, 4096, total, false, true, 4096.0, nil, nil, text[:4096]}, nil},
		{"offset near the end", base + "&offset_chars=" + itoa(total-500) + "&limit_chars=1000", demors.GrantClient,
			want{total - 500, total, 1000, total, false, false, nil, float64(total - 1500), nil, text[total-500:]}, nil},
		{"first-match window", base + "&q=NEEDLE5&before_chars=80&after_chars=120", demors.GrantClient,
			want{matchStart - 80, matchStart + 7 + 120, 207, total, false, true, float64(matchStart + 127), float64(matchStart - 80 - 207), float64(matchStart), text[matchStart-80 : matchStart+127]}, nil},
		{"no match keeps the offset window", base + "&q=absentword&limit_chars=50", demors.GrantClient,
			want{0, 50, 50, total, false, true, 50.0, nil, nil, text[:50]}, nil},
		{"limit clamped", base + "&limit_chars=20000", demors.GrantClient,
			want{0, 16384, 16384, total, false, true, 16384.0, nil, nil, text[:16384]}, []string{"limit_clamped"}},
		{"single connection needs no connection_id", "/v1/streams/transcripts/records/tr-5/field-window?field=text&limit_chars=200", demors.GrantNarrow,
			want{0, 200, 200, total, false, true, 200.0, nil, nil, text[:200]}, nil},
		{"short field is complete", "/v1/streams/videos/records/vid-5/field-window?field=title&connection_id=cin_demo_loom_main", demors.GrantClient,
			want{0, len(title), 4096, len(title), true, false, nil, nil, nil, title}, nil},
		{"code points, not bytes", "/v1/streams/notes/records/note-11/field-window?field=body&limit_chars=100000", demors.GrantClient,
			want{0, len(note), 16384, len(note), true, false, nil, nil, nil, note}, []string{"limit_clamped"}},
		{"offset counted in code points", "/v1/streams/notes/records/note-11/field-window?field=body&offset_chars=40&limit_chars=30", demors.GrantClient,
			want{40, 70, 30, len(note), false, true, 70.0, 10.0, nil, note[40:70]}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := r.get(t, tc.path, tc.grant).mustStatus(t, 200).body
			if body["object"] != "field_window" || str(at(body, "field", "type")) != "string" {
				t.Errorf("envelope = %v %v", body["object"], body["field"])
			}
			w := object(body["window"])
			got := want{int(num(w["start_chars"])), int(num(w["end_chars"])), int(num(w["limit_chars"])), int(num(w["total_chars"])),
				w["complete"] == true, w["has_more"] == true, w["next_offset_chars"], w["previous_offset_chars"], w["match_start_chars"], []rune(str(w["text"]))}
			gotText, wantText := string(got.text), string(tc.want.text)
			got.text, tc.want.text = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("window = %+v\nwant     %+v", got, tc.want)
			}
			if gotText != wantText {
				t.Errorf("window text differs from the field's code points [%d:%d]", tc.want.start, tc.want.end)
			}
			if tc.want.matchStart != nil && num(w["match_end_chars"]) != num(tc.want.matchStart)+7 {
				t.Errorf("match_end_chars = %v", w["match_end_chars"])
			}
			if !slices.Equal(warningCodes(body), tc.warnings) {
				t.Errorf("warnings = %v, want %v", warningCodes(body), tc.warnings)
			}
		})
	}
	if len(note) == len(fullText(t, r, "notes", "note-11", "", "body")) {
		t.Error("note-11 has no multi-byte characters, so the code-point cases prove nothing")
	}
}

func TestFieldWindowErrors(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, path, grant string
		status            int
		code              string
	}{
		{"missing field", "/v1/streams/transcripts/records/tr-5/field-window?connection_id=cin_demo_loom_main", demors.GrantClient, 400, "invalid_field_path"},
		{"empty field", "/v1/streams/transcripts/records/tr-5/field-window?field=&connection_id=cin_demo_loom_main", demors.GrantClient, 400, "invalid_field_path"},
		{"unknown field", "/v1/streams/transcripts/records/tr-5/field-window?field=bogus&connection_id=cin_demo_loom_main", demors.GrantClient, 400, "invalid_field_path"},
		{"ungranted field", "/v1/streams/transcripts/records/tr-5/field-window?field=video_id", demors.GrantNarrow, 400, "invalid_field_path"},
		{"null field", "/v1/streams/notes/records/note-8/field-window?field=attachment", demors.GrantClient, 400, "invalid_field_path"},
		{"integer field", "/v1/streams/videos/records/vid-5/field-window?field=duration_seconds&connection_id=cin_demo_loom_main", demors.GrantClient, 422, "field_not_text"},
		{"JSON object field", "/v1/streams/videos/records/vid-5/field-window?field=metadata&connection_id=cin_demo_loom_main", demors.GrantClient, 422, "field_not_text"},
		{"blob field", "/v1/streams/notes/records/note-0/field-window?field=attachment", demors.GrantClient, 422, "field_not_text"},
		{"ambiguous record", "/v1/streams/transcripts/records/tr-5/field-window?field=text&limit_chars=100", demors.GrantClient, 409, "ambiguous_connection"},
		{"unknown record", "/v1/streams/transcripts/records/tr-99/field-window?field=text", demors.GrantClient, 404, "not_found"},
		{"unknown connection", "/v1/streams/transcripts/records/tr-5/field-window?field=text&connection_id=cin_doesnotexist", demors.GrantClient, 401, "context.instance_mismatch"},
		{"negative offset", "/v1/streams/transcripts/records/tr-5/field-window?field=text&offset_chars=-1", demors.GrantNarrow, 400, "invalid_request"},
		{"zero limit", "/v1/streams/transcripts/records/tr-5/field-window?field=text&limit_chars=0", demors.GrantNarrow, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.get(t, tc.path, tc.grant).mustStatus(t, tc.status)
			if resp.errCode() != tc.code {
				t.Errorf("code = %q, want %q: %s", resp.errCode(), tc.code, resp.raw)
			}
		})
	}
}
