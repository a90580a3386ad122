package cmdkit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// TestAdminListenerAddressInUse: an admin address in use that was asked for
// is an unavailable exit naming --admin-listen; the default one in use is a
// warning, and the server serves /mcp without it (two servers on one host).
func TestAdminListenerAddressInUse(t *testing.T) {
	t.Run("asked for", func(t *testing.T) {
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		h := HTTPFlags{AdminListen: busy.Addr().String()}
		err = h.ServeWithMetrics(context.Background(), slog.New(slog.DiscardHandler), http.NotFoundHandler(),
			transport.HTTPConfig{Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}, nil)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUnavailable || !strings.Contains(err.Error(), "--admin-listen") {
			t.Fatalf("want an unavailable exit naming --admin-listen, got %v", err)
		}
	})
	t.Run("the default", func(t *testing.T) {
		// The default address is in use either way: held here, or by
		// whatever else holds it on this host.
		if busy, err := net.Listen("tcp", DefaultAdminListen); err == nil {
			defer busy.Close()
		}
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		h := HTTPFlags{AdminListen: DefaultAdminListen}
		ctx, cancel := context.WithCancel(context.Background())
		bound := make(chan net.Addr, 1)
		served := make(chan error, 1)
		go func() {
			served <- h.ServeWithMetrics(ctx, log, http.NotFoundHandler(),
				transport.HTTPConfig{Listen: "127.0.0.1:0", Logger: log, OnListen: func(a net.Addr) { bound <- a }}, nil)
		}()
		select {
		case <-bound:
		case err := <-served:
			t.Fatalf("served nothing: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("not bound within 20 s")
		}
		cancel()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "admin listener: the default address is in use") {
			t.Fatalf("no warning about the default admin address:\n%s", logs.String())
		}
	})
}
