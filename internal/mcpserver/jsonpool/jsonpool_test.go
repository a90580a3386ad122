package jsonpool

import (
	"io"
	"testing"
)

// TestReaderReadsInPlace: values are slices of the text read, a repeated
// name and invalid UTF-8 are taken, and a reused Reader starts afresh.
func TestReaderReadsInPlace(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"a":1,"a":"x"}`, `"x"`},
		{"{\"a\":\"\xff\"}", "\"\xff\""},
		{` {"a" : [1, 2]} `, `[1, 2]`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			text := []byte(tc.text)
			r := Get(text)
			defer Put(r)
			if tok, err := r.ReadToken(); err != nil || tok.Kind() != '{' {
				t.Fatalf("first token %v, %v", tok, err)
			}
			var last []byte
			for r.PeekKind() == '"' {
				if _, err := r.ReadValue(); err != nil {
					t.Fatal(err)
				}
				v, err := r.ReadValue()
				if err != nil {
					t.Fatal(err)
				}
				last = v
			}
			if _, err := r.ReadToken(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ReadToken(); err != io.EOF {
				t.Fatalf("after the object: %v", err)
			}
			if string(last) != tc.want {
				t.Fatalf("last value %s, want %s", last, tc.want)
			}
			if len(last) > 0 && &last[0] != &text[len(text)-len(tc.want)-len(trailing(tc.text))] {
				t.Fatal("value is a copy, not a slice of the text")
			}
		})
	}
}

// trailing is what follows the last value of text: its closing brace and
// white space.
func trailing(text string) string {
	i := len(text)
	for i > 0 && (text[i-1] == ' ' || text[i-1] == '}') {
		i--
	}
	return text[i:]
}

func TestGetAllocatesNothingOnceWarm(t *testing.T) {
	text := []byte(`{"id":1,"method":"ping"}`)
	Put(Get(text))
	if n := testing.AllocsPerRun(100, func() {
		r := Get(text)
		for {
			if _, err := r.ReadToken(); err != nil {
				break
			}
		}
		Put(r)
	}); n != 0 {
		t.Fatalf("%v allocations per walk", n)
	}
}
