package splice

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// reply is what an MCP library would encode: a result whose structured
// output carries values.
func encodeReply(t *testing.T, values ...any) []byte {
	t.Helper()
	structured := map[string]any{"detail": "full"}
	for i, v := range values {
		structured["data"+string(rune('a'+i))] = v
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "shown <b>"}}, "structuredContent": structured}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSplicedRepliesCarryTheValuesAsTheyCame(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   []string // the values as they must appear in the written reply
	}{
		{"one body of <", []string{`{"data":["<<<<"]}`}, []string{`{"data":["<<<<"]}`}},
		{"html and an ampersand", []string{`{"t":"<p>a & b</p>"}`}, []string{`{"t":"<p>a & b</p>"}`}},
		{"two values in order", []string{`[1,2]`, `{"x":"<"}`}, []string{`[1,2]`, `{"x":"<"}`}},
		{"pretty-printed is compacted", []string{"{\n  \"a\": \"<\",\r\n  \"b\": [1, 2]\n}\n"}, []string{`{"a":"<","b":[1,2]}`}},
		{"edge whitespace trimmed", []string{"  \"x\" \t"}, []string{`"x"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore()
			ctx := WithStore(context.Background(), s)
			released := 0
			var vals []any
			for _, v := range tc.values {
				vals = append(vals, Value(ctx, []byte(v), func() { released++ }))
			}
			encoded := encodeReply(t, vals...)
			if !s.Pending() {
				t.Fatal("store holds nothing after Value")
			}
			if released != 0 {
				t.Fatalf("%d values released before they were written", released)
			}
			var out bytes.Buffer
			if err := s.Expand(&out, encoded); err != nil {
				t.Fatal(err)
			}
			if released != len(tc.values) || s.Pending() {
				t.Fatalf("after writing: %d of %d released, pending %v", released, len(tc.values), s.Pending())
			}
			for _, w := range tc.want {
				if !bytes.Contains(out.Bytes(), []byte(w)) {
					t.Errorf("written reply lacks %s verbatim:\n%s", w, out.Bytes())
				}
			}
			if bytes.Contains(out.Bytes(), []byte("splice:")) {
				t.Errorf("a placeholder was left in the reply: %s", out.Bytes())
			}
			// The reply decodes to what the library would have sent with the
			// values encoded in place.
			var raws []any
			for _, v := range tc.values {
				raws = append(raws, json.RawMessage(bytes.TrimSpace([]byte(v))))
			}
			var got, want any
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("written reply is not JSON: %v\n%s", err, out.Bytes())
			}
			_ = json.Unmarshal(encodeReply(t, raws...), &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("written reply decodes to\n%v\nwant\n%v", got, want)
			}
			if bytes.IndexByte(out.Bytes(), '\n') >= 0 {
				t.Errorf("written reply has a raw line break")
			}
		})
	}
}

func TestValueWithoutAStoreIsRawJSON(t *testing.T) {
	released := false
	v := Value(context.Background(), []byte(`{"a":"<"}`), func() { released = true })
	if _, ok := v.(json.RawMessage); !ok || !released {
		t.Fatalf("Value without a store = %T (released %v), want json.RawMessage released at once", v, released)
	}
	s := NewStore()
	ctx := WithStore(context.Background(), s)
	released = false
	v = Value(ctx, []byte("\"\xff\""), func() { released = true })
	if _, ok := v.(json.RawMessage); !ok || !released || s.Pending() {
		t.Fatalf("invalid UTF-8 was stored: %T", v)
	}
	s.Close()
	released = false
	v = Value(ctx, []byte(`1`), func() { released = true })
	if _, ok := v.(json.RawMessage); !ok || !released {
		t.Fatalf("a closed store took a value: %T", v)
	}
}

func TestTakeLeavesForeignPlaceholders(t *testing.T) {
	s, other := NewStore(), NewStore()
	ctx := WithStore(context.Background(), s)
	mine := Value(ctx, []byte(`"mine"`), nil)
	theirs := Value(WithStore(context.Background(), other), []byte(`"theirs"`), nil)
	unknown := string(s.prefix[1:]) + "999"
	b := encodeReply(t, mine, theirs, unknown)
	parts, size, done := s.Take(b)
	defer done()
	joined := bytes.Join(parts, nil)
	if int64(len(joined)) != size {
		t.Errorf("size %d, parts hold %d bytes", size, len(joined))
	}
	if !bytes.Contains(joined, []byte(`"mine"`)) || bytes.Contains(joined, []byte(`"theirs"`)) {
		t.Errorf("only this store's value should be spliced: %s", joined)
	}
	if !bytes.Contains(joined, []byte(`"`+unknown+`"`)) {
		t.Errorf("an unknown id was not left as it is: %s", joined)
	}
	if !other.Pending() {
		t.Errorf("the other store lost its value")
	}
}

func TestValuesNotWrittenAreDropped(t *testing.T) {
	t.Run("on close", func(t *testing.T) {
		s := NewStore()
		ctx := WithStore(context.Background(), s)
		released := 0
		for range 3 {
			Value(ctx, []byte(`[]`), func() { released++ })
		}
		s.Close()
		if released != 3 || s.Pending() {
			t.Fatalf("close released %d of 3", released)
		}
	})
	t.Run("past MaxAge, when a value is added", func(t *testing.T) {
		s := NewStore()
		ctx := WithStore(context.Background(), s)
		released := 0
		Value(ctx, []byte(`[]`), func() { released++ })
		s.mu.Lock()
		for id, e := range s.entries {
			e.born = time.Now().Add(-MaxAge - time.Second)
			s.entries[id] = e
		}
		s.mu.Unlock()
		Value(ctx, []byte(`{}`), nil)
		s.mu.Lock()
		n := len(s.entries)
		s.mu.Unlock()
		if released != 1 || n != 1 {
			t.Fatalf("stale value released %d times, %d entries left (want 1, 1)", released, n)
		}
	})
}

func TestExpandWithoutPlaceholdersWritesOnce(t *testing.T) {
	s := NewStore()
	var w countingWriter
	b := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	if err := s.Expand(&w, b); err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 || w.buf.String() != string(b) {
		t.Fatalf("%d writes of %q", w.writes, w.buf.String())
	}
	if strings.Contains(string(s.prefix), "\\") {
		t.Fatalf("prefix %q needs escaping", s.prefix)
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.buf.Write(p) }

func TestCloseReleasesTakenValues(t *testing.T) {
	s := NewStore()
	ctx := WithStore(context.Background(), s)
	released := 0
	v := Value(ctx, []byte(`"x"`), func() { released++ })
	_, _, done := s.Take(encodeReply(t, v))
	if released != 0 {
		t.Fatal("Take released the value before it was written")
	}
	s.Close()
	done()
	if released != 1 {
		t.Fatalf("released %d times, want once", released)
	}
}
