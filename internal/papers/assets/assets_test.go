package assets

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// load reads the asset at rel whole through Open, as the handlers read it.
func load(l *Loader, rel string) ([]byte, error) {
	rc, _, err := l.Open(context.Background(), rel)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// assetServer serves files from a map and records requested paths; a path
// listed in slow answers only after delay.
type assetServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newAssetServer(t *testing.T, files map[string]string, slow map[string]time.Duration, status map[string]int) *assetServer {
	t.Helper()
	as := &assetServer{}
	as.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		as.paths = append(as.paths, r.URL.EscapedPath())
		as.mu.Unlock()
		p := strings.TrimPrefix(r.URL.Path, "/static/")
		if d, ok := slow[p]; ok {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if code, ok := status[p]; ok {
			w.WriteHeader(code)
			return
		}
		body, ok := files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(as.Close)
	return as
}

func (as *assetServer) requested() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.paths...)
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "summary/aa.json", `{"local":true}`)
	writeFile(t, dir, "md/big.md", strings.Repeat("x", 2048))
	outside := t.TempDir()
	writeFile(t, outside, "secret.md", "secret")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "md", "escape.md")); err != nil {
		t.Fatal(err)
	}
	srv := newAssetServer(t, map[string]string{
		"summary/aa.json":      `{"remote":true}`,
		"summary/bb.json":      `{"remote":"bb"}`,
		"md_translate/zh/h.md": "中文",
		"md/with space.md":     "spaced",
		"md/remote-big.md":     strings.Repeat("y", 4096),
	}, map[string]time.Duration{"md/slow.md": time.Minute}, map[string]int{"md/boom.md": 500})
	// Only the timeout case needs a short timeout; the other remote cases
	// get room to answer on a loaded machine.
	both, err := New(Config{Dir: dir, BaseURL: srv.URL + "/static/", Timeout: 10 * time.Second, MaxBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer both.Close()
	short, err := New(Config{Dir: dir, BaseURL: srv.URL + "/static/", Timeout: 200 * time.Millisecond, MaxBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	localOnly, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer localOnly.Close()
	tests := []struct {
		name       string
		l          *Loader
		rel        string
		want       string
		wantReason string
		wantStatus int
	}{
		{"local file first", both, "summary/aa.json", `{"local":true}`, "", 0},
		{"remote when not local", both, "summary/bb.json", `{"remote":"bb"}`, "", 0},
		{"remote cjk path", both, "md_translate/zh/h.md", "中文", "", 0},
		{"remote path escaped", both, "md/with space.md", "spaced", "", 0},
		{"404 is not found", both, "summary/none.json", "", ReasonNotFound, 404},
		{"500 is an http status", both, "md/boom.md", "", ReasonHTTPStatus, 500},
		{"timeout", short, "md/slow.md", "", ReasonTimeout, 0},
		{"local too large", both, "md/big.md", "", ReasonTooLarge, 0},
		{"remote too large", both, "md/remote-big.md", "", ReasonTooLarge, 0},
		{"local only: missing", localOnly, "summary/bb.json", "", ReasonNotFound, 0},
		{"symlink out of the root", localOnly, "md/escape.md", "", ReasonUnreadable, 0},
		{"traversal", both, "../secret.md", "", ReasonInvalidPath, 0},
		{"absolute", both, "/etc/passwd", "", ReasonInvalidPath, 0},
		{"dot segment", both, "md/./x.md", "", ReasonInvalidPath, 0},
		{"backslash", both, `md\..\x.md`, "", ReasonInvalidPath, 0},
		{"empty", both, "", "", ReasonInvalidPath, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			b, err := load(tc.l, tc.rel)
			if tc.wantReason == "" {
				if err != nil || string(b) != tc.want {
					t.Fatalf("Load = %q, %v; want %q", b, err, tc.want)
				}
				return
			}
			var fe *FetchError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v (%T), want a *FetchError", err, err)
			}
			if fe.Reason != tc.wantReason || fe.Status != tc.wantStatus {
				t.Fatalf("reason %q status %d, want %q %d (%v)", fe.Reason, fe.Status, tc.wantReason, tc.wantStatus, err)
			}
			if strings.Contains(fe.Error(), srv.URL) || strings.Contains(fe.Error(), dir) {
				t.Fatalf("error names the internal location: %v", fe)
			}
			// Far above the 200 ms timeout, far below the minute the server
			// holds the request.
			if tc.wantReason == ReasonTimeout && time.Since(start) > 10*time.Second {
				t.Fatalf("timeout took %s", time.Since(start))
			}
		})
	}
	for _, p := range srv.requested() {
		if !strings.HasPrefix(p, "/static/") {
			t.Errorf("request outside the base path: %s", p)
		}
		if strings.Contains(p, "summary/aa.json") {
			t.Errorf("local asset fetched remotely: %s", p)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"nothing", Config{}, "give a local asset folder"},
		{"relative url", Config{BaseURL: "static/"}, "absolute http(s) URL"},
		{"ftp", Config{BaseURL: "ftp://x/"}, "absolute http(s) URL"},
		{"query", Config{BaseURL: "https://x/static?sig=1"}, "query"},
		{"missing folder", Config{Dir: filepath.Join(t.TempDir(), "none")}, "folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := New(tc.cfg)
			if err == nil {
				l.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %q lacks %q", err, tc.want)
			}
		})
	}
	l, err := New(Config{BaseURL: "https://assets.example/root/"})
	if err != nil {
		t.Fatal(err)
	}
	if l.timeout != DefaultTimeout {
		t.Fatalf("default timeout %s", l.timeout)
	}
}
