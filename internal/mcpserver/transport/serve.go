package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeHTTP serves h on cfg.Listen (and h's probes and cfg.Metrics on
// cfg.AdminListener) until ctx is cancelled, then shuts down gracefully:
// /readyz answers 503 from that moment, the listener closes (at once, or
// after DrainDelay), in-flight requests, not cancelled, run to completion
// within ShutdownTimeout (then connections are closed) and it returns nil.
// Signal handling is the caller's.
func ServeHTTP(ctx context.Context, h http.Handler, cfg HTTPConfig) error {
	if cfg.AdminListener != nil {
		defer cfg.AdminListener.Close()
	}
	st, err := cfg.settle()
	if err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	raw, err := net.Listen("tcp", st.Listen)
	if err != nil {
		return fmt.Errorf("transport: listen: %w", err)
	}
	ln := newLimitListener(raw, st)
	if !isLoopbackListen(st.Listen) {
		if len(st.origins) == 0 {
			st.logger.Warn("listening beyond loopback without an Origin allowlist: browser requests carrying an Origin header will all be refused; set allowed origins explicitly",
				"listen", st.Listen)
		}
		if st.publicBase == nil {
			st.logger.Warn("listening beyond loopback without a public base URL: the resource URL is derived from each request's Host header",
				"listen", st.Listen)
		}
	}
	st.warnBounds()
	if st.OnListen != nil {
		st.OnListen(ln.Addr())
	}

	gated := drainGate(h, ctx)
	if st.AdminListener != nil {
		admin := newAdminServer(st, gated)
		go func() {
			st.logger.Info("serving probes and metrics", "addr", st.AdminListener.Addr().String(), "paths", "/healthz /readyz /metrics")
			if err := admin.Serve(st.AdminListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				st.logger.Error("admin listener stopped", "err", err)
			}
		}()
		// Closed last, once /mcp has drained: probes see "draining" until then.
		defer admin.Close()
	}
	srv := &http.Server{
		Handler:           gated,
		ReadHeaderTimeout: st.ReadHeaderTimeout,
		ReadTimeout:       st.ReadTimeout,
		WriteTimeout:      st.WriteTimeout,
		IdleTimeout:       st.IdleTimeout,
		ConnState:         ln.connState,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(st.logger.Handler(), slog.LevelWarn),
	}
	st.logger.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "endpoint", "/mcp")

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("transport: serve: %w", err)
	case <-ctx.Done():
	}

	if st.DrainDelay > 0 {
		st.logger.Info("draining: /readyz answers 503, still serving", "drain_delay", st.DrainDelay.String())
		select {
		case <-time.After(st.DrainDelay):
		case err := <-served:
			return fmt.Errorf("transport: serve: %w", err)
		}
	}
	srv.SetKeepAlivesEnabled(false)
	st.logger.Info("shutting down: finishing in-flight requests", "timeout", st.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), st.ShutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(sctx)
	if shutdownErr != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("transport: serve: %w", err)
	}
	if shutdownErr != nil {
		return fmt.Errorf("transport: shutdown: %w", shutdownErr)
	}
	st.logger.Info("stopped")
	return nil
}

// drainGate answers /readyz 503 from the moment serving's context ends, so
// a load balancer stops routing new work here while calls in flight finish.
func drainGate(h http.Handler, serving context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if serving.Err() != nil && r.URL.Path == "/readyz" {
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"draining"}`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// newAdminServer builds the server of the admin listener
// (HTTPConfig.AdminListener), whose connections are not counted in the
// public listener's bounds, so a flood that fills those never fails a
// kubelet probe or a scrape. /healthz and /readyz answer through probes,
// the public handler behind drainGate (the same readiness and 503
// "draining"); /metrics is HTTPConfig.Metrics, 404 when nil. It is meant
// for loopback or a port only the cluster reaches: nothing on it is
// authenticated.
func newAdminServer(st *settings, probes http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/healthz", probes)
	mux.Handle("/readyz", probes)
	if st.Metrics != nil {
		mux.Handle("/metrics", st.Metrics.Handler())
	}
	// Its peers are the kubelet and a scraper: short header and write
	// deadlines and small headers.
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(st.logger.Handler(), slog.LevelWarn),
	}
}
