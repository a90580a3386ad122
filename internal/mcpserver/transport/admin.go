package transport

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The admin listener (HTTPConfig.AdminListener, flag --admin-listen) serves
// /healthz, /readyz and /metrics apart from /mcp: its connections are not
// counted in the public listener's bounds, so a flood that fills those
// never fails a kubelet probe or a scrape. /healthz and /readyz answer as
// on the public listener (the same handler, so the same readiness and the
// same 503 "draining" once shutdown began); /metrics is HTTPConfig.Metrics,
// 404 when that is nil. It is meant for loopback or a port only the
// cluster reaches: nothing on it is authenticated.

// Bounds of the admin server: its peers are the kubelet and a scraper, so
// short header and write deadlines and small headers.
const (
	adminReadHeaderTimeout = 5 * time.Second
	adminWriteTimeout      = 30 * time.Second
	adminIdleTimeout       = 2 * time.Minute
	adminMaxHeaderBytes    = 16 << 10
)

// newAdminServer builds the admin listener's server: probes through
// probes (the public handler behind drainGate), /metrics from st.Metrics.
func newAdminServer(st *settings, probes http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/healthz", probes)
	mux.Handle("/readyz", probes)
	if st.Metrics != nil {
		mux.Handle("/metrics", st.Metrics.Handler())
	}
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: adminReadHeaderTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(st.logger.Handler(), slog.LevelWarn),
	}
}

// serveAdmin serves srv on ln until srv is closed; an error other than
// the close is logged.
func serveAdmin(srv *http.Server, ln net.Listener, log *slog.Logger) {
	log.Info("serving probes and metrics", "addr", ln.Addr().String(), "paths", "/healthz /readyz /metrics")
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("admin listener stopped", "err", err)
	}
}
