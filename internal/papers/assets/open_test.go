package assets

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOpen: Open reports the size a caller may reserve before reading (the
// file's, the Content-Length, -1 for a chunked answer), and its stream stops
// a chunked answer past MaxBytes with a too_large error; a slow body ends at
// the fetch timeout with a timeout error.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "md/local.md", strings.Repeat("l", 700))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/static/") {
		case "md/sized.md":
			_, _ = w.Write([]byte(strings.Repeat("s", 300)))
		case "md/chunked.md", "md/chunked-big.md":
			n := 300
			if strings.HasSuffix(r.URL.Path, "big.md") {
				n = 5000
			}
			for range n / 100 {
				_, _ = w.Write([]byte(strings.Repeat("c", 100)))
				w.(http.Flusher).Flush()
			}
		case "md/slow-body.md":
			_, _ = w.Write([]byte("start"))
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Minute):
			case <-r.Context().Done():
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	l, err := New(Config{Dir: dir, BaseURL: srv.URL + "/static/", Timeout: 300 * time.Millisecond, MaxBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		rel      string
		size     int64
		read     int
		readFail string // the Reason of the read's error
	}{
		{"md/local.md", 700, 700, ""},
		{"md/sized.md", 300, 300, ""},
		{"md/chunked.md", -1, 300, ""},
		{"md/chunked-big.md", -1, 0, ReasonTooLarge},
		{"md/slow-body.md", -1, 0, ReasonTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			rc, size, err := l.Open(t.Context(), tc.rel)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if size != tc.size {
				t.Fatalf("size %d, want %d", size, tc.size)
			}
			b, err := io.ReadAll(rc)
			var fe *FetchError
			switch {
			case tc.readFail == "" && (err != nil || len(b) != tc.read):
				t.Fatalf("read %d bytes, %v; want %d", len(b), err, tc.read)
			case tc.readFail != "" && (!errors.As(err, &fe) || fe.Reason != tc.readFail):
				t.Fatalf("read error %v, want %s", err, tc.readFail)
			}
		})
	}
}
