package evidence

import (
	"encoding/json"
	"slices"
	"strconv"
)

// AppendJSON appends v's structured output to b: the bytes json.Marshal(v)
// writes, member for member, without reflection or a sorted copy of each
// continuation's arguments. Every compact window reply is encoded this way,
// so its cost is a few appends (TestWindowAppendJSONMatchesMarshal holds the
// two encodings equal).
func (v *WindowView) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendMarshalString(b, v.ID)
	b = append(b, `,"field_path":`...)
	b = appendMarshalString(b, v.FieldPath)
	if v.Text != "" {
		b = append(b, `,"text":`...)
		b = appendMarshalString(b, v.Text)
	}
	w := &v.Window
	b = append(b, `,"window":{"start_chars":`...)
	b = strconv.AppendInt(b, int64(w.StartChars), 10)
	b = append(b, `,"end_chars":`...)
	b = strconv.AppendInt(b, int64(w.EndChars), 10)
	b = append(b, `,"total_chars":`...)
	b = strconv.AppendInt(b, int64(w.TotalChars), 10)
	b = append(b, `,"complete":`...)
	b = strconv.AppendBool(b, w.Complete)
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, w.HasMore)
	if w.MatchStartChars != nil {
		b = append(b, `,"match_start_chars":`...)
		b = strconv.AppendInt(b, int64(*w.MatchStartChars), 10)
	}
	if w.MatchEndChars != nil {
		b = append(b, `,"match_end_chars":`...)
		b = strconv.AppendInt(b, int64(*w.MatchEndChars), 10)
	}
	b = append(b, '}')
	if v.Next != nil {
		b = append(b, `,"next":`...)
		b = v.Next.appendJSON(b)
	}
	if v.Previous != nil {
		b = append(b, `,"previous":`...)
		b = v.Previous.appendJSON(b)
	}
	if v.NextCursor != "" {
		b = append(b, `,"next_cursor":`...)
		b = appendMarshalString(b, v.NextCursor)
	}
	if v.Detail != "" {
		b = append(b, `,"detail":`...)
		b = appendMarshalString(b, v.Detail)
	}
	if t := v.TextAt; t != nil {
		b = append(b, `,"text_at":{"content":`...)
		b = strconv.AppendInt(b, int64(t.Content), 10)
		b = append(b, `,"start_byte":`...)
		b = strconv.AppendInt(b, int64(t.StartByte), 10)
		b = append(b, `,"end_byte":`...)
		b = strconv.AppendInt(b, int64(t.EndByte), 10)
		b = append(b, `,"chars":`...)
		b = strconv.AppendInt(b, int64(t.Chars), 10)
		b = append(b, '}')
	}
	if v.Full != nil {
		b = append(b, `,"full":`...)
		b = v.Full.appendJSON(b)
	}
	return append(b, '}')
}

// appendJSON appends c as json.Marshal writes it: the tool, then the
// arguments with their names in byte order. A continuation has a handful of
// arguments, sorted here in a fixed-size array.
func (c *Continuation) appendJSON(b []byte) []byte {
	b = append(b, `{"tool":`...)
	b = appendMarshalString(b, c.Tool)
	if c.Arguments == nil {
		return append(b, `,"arguments":null}`...)
	}
	var store [8]string
	keys := store[:0]
	for k := range c.Arguments {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, `,"arguments":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMarshalString(b, k)
		b = append(b, ':')
		b = appendMarshalValue(b, c.Arguments[k])
	}
	return append(b, "}}"...)
}

// appendMarshalString appends s as json.Marshal quotes it (HTML characters
// escaped): as itself when nothing in it needs escaping, the common case.
func appendMarshalString(b []byte, s string) []byte {
	if plainJSONString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// appendMarshalValue appends one argument value as json.Marshal writes it.
func appendMarshalValue(b []byte, v any) []byte {
	switch t := v.(type) {
	case string:
		return appendMarshalString(b, t)
	case int:
		return strconv.AppendInt(b, int64(t), 10)
	case int64:
		return strconv.AppendInt(b, t, 10)
	case bool:
		return strconv.AppendBool(b, t)
	}
	vb, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, vb...)
}
