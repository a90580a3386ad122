package demors

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
)

const (
	defaultWindowChars = 4096
	maxWindowChars     = 16384
	defaultBeforeChars = 256
	defaultAfterChars  = 768
)

// window is a character range [start, end) of a text of total code points.
type window struct {
	start, end, total, limit int
	matchStart, matchEnd     int // -1 when no match
}

func (w window) object(text []rune) object {
	var next, prev, ms, me any
	if w.end < w.total {
		next = w.end
	}
	if w.start > 0 {
		prev = max(0, w.start-w.limit)
	}
	if w.matchStart >= 0 {
		ms, me = w.matchStart, w.matchEnd
	}
	return obj(
		"complete", w.start == 0 && w.end == w.total,
		"end_chars", w.end,
		"has_more", w.end < w.total,
		"limit_chars", w.limit,
		"match_end_chars", me,
		"match_start_chars", ms,
		"next_offset_chars", next,
		"previous_offset_chars", prev,
		"start_chars", w.start,
		"text", string(text[w.start:w.end]),
		"total_chars", w.total,
	)
}

// findMatch returns the code-point range of q's first case-insensitive occurrence in text
// on word boundaries, or (-1, -1).
func findMatch(text []rune, q string) (int, int) {
	needle := []rune(strings.ToLower(q))
	if len(needle) == 0 {
		return -1, -1
	}
	for i := 0; i+len(needle) <= len(text); i++ {
		end := i + len(needle)
		if !slices.EqualFunc(text[i:end], needle, func(t, n rune) bool { return unicode.ToLower(t) == n }) ||
			isWordRune(needle[0]) && i > 0 && isWordRune(text[i-1]) ||
			isWordRune(needle[len(needle)-1]) && end < len(text) && isWordRune(text[end]) {
			continue
		}
		return i, end
	}
	return -1, -1
}

// jsonKind names a non-text JSON value the way the reference RS's error message does.
func jsonKind(v any) string {
	switch v.(type) {
	case json.Number, float64, int, int64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "not text"
}

func nonNegative(name string, v *int, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < 0 {
		return 0, errInvalid(name, "%s must be zero or a positive integer", name)
	}
	return *v, nil
}

func (s api) GetFieldWindow(ctx context.Context, req rsserver.GetFieldWindowRequestObject) (rsserver.GetFieldWindowResponseObject, error) {
	rc, stream, id, p := reqCtxFrom(ctx), req.Stream, req.Id, req.Params
	connID, warnings := connectionParam(rc, p.ConnectionId)
	if strings.TrimSpace(p.Field) == "" {
		return nil, errInvalidFieldPath("field is required and must be a non-empty string")
	}
	sc, err := s.resolveStream(rc, stream, connID)
	if err != nil {
		return nil, err
	}
	fd, declared := sc.stream.Field(p.Field)
	if !declared {
		return nil, errInvalidFieldPath("field '%s' is not a top-level field of stream '%s'", p.Field, sc.stream.Name)
	}
	if !rc.grant.grantsField(sc.conns, sc.stream.Name, p.Field) {
		return nil, errInvalidFieldPath("field '%s' of stream '%s' is not granted", p.Field, sc.stream.Name)
	}
	rec, err := s.locateRecord(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	v, present := rec.Data[p.Field]
	if !present || v == nil {
		return nil, errInvalidFieldPath("field '%s' has no value on record '%s'", p.Field, rec.ID)
	}
	str, isText := v.(string)
	if !isText || fd.PDPPType == "blob" {
		kind := jsonKind(v)
		if fd.PDPPType == "blob" {
			kind = "a blob reference"
		}
		return nil, errFieldNotText(p.Field, kind)
	}
	text := []rune(str)
	total := len(text)
	limit := defaultWindowChars
	if p.LimitChars != nil {
		if *p.LimitChars < 1 {
			return nil, errInvalid("limit_chars", "limit_chars must be between 1 and %d", maxWindowChars)
		}
		limit = *p.LimitChars
		if limit > maxWindowChars {
			warnings = append(warnings, limitClampedWarning("limit_chars", limit, maxWindowChars,
				"Requested limit_chars=%d exceeds the maximum window of %d characters; returned at most %[2]d. Continue with next_offset_chars."))
			limit = maxWindowChars
		}
	}
	offset, err := nonNegative("offset_chars", p.OffsetChars, 0)
	if err != nil {
		return nil, err
	}
	ms, me := findMatch(text, strings.TrimSpace(val(p.Q)))
	w := window{total: total, matchStart: ms, matchEnd: me}
	if ms >= 0 {
		before, err := nonNegative("before_chars", p.BeforeChars, defaultBeforeChars)
		if err != nil {
			return nil, err
		}
		after, err := nonNegative("after_chars", p.AfterChars, defaultAfterChars)
		if err != nil {
			return nil, err
		}
		w.start = max(0, ms-before)
		w.end = min(total, me+after)
		// Keep within limit_chars (when given) and the maximum, trimming the trailing context,
		// then the leading; the match itself stays.
		bound := maxWindowChars
		if p.LimitChars != nil {
			bound = limit
		}
		if w.end-w.start > bound {
			w.end = max(me, w.start+bound)
			if w.end-w.start > bound {
				w.start = max(0, min(ms, w.end-bound))
			}
		}
		w.limit = w.end - w.start
	} else {
		w.start = min(offset, total)
		w.end = min(total, w.start+limit)
		w.limit = limit
	}
	return jsonReply(200, obj(
		"field", obj("path", p.Field, "type", cmp.Or(fd.PDPPType, "string")),
		"object", "field_window",
		"record_id", rec.ID,
		"stream", rec.Stream,
		"connection_id", rec.ConnectionID,
		"url", rc.path,
		"window", w.object(text),
		"links", obj("self", rc.selfLink()),
		"meta", meta(warnings),
	)), nil
}
