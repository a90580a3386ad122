package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names, for dashboards, alerts and tests.
const (
	NameHTTPRequests  = "mcp_http_requests_total"
	NameToolCalls     = "mcp_tool_calls_total"
	NameToolDuration  = "mcp_tool_call_duration_seconds"
	NameToolsInFlight = "mcp_tool_calls_in_flight"
	NameBatchSize     = "mcp_jsonrpc_batch_size"
	NameRSRequests    = "mcp_rs_requests_total"
	NameRSDuration    = "mcp_rs_request_duration_seconds"
	NameAuthRefusals  = "mcp_auth_refusals_total"
	NameShed          = "mcp_http_requests_shed_total"
	NameBodyTimeouts  = "mcp_http_body_read_timeouts_total"
	NameBudgetHeld    = "mcp_inflight_bytes_held"
	NameBudgetMax     = "mcp_inflight_bytes_max"
	NameBudgetWait    = "mcp_inflight_wait_seconds"
	NameBudgetRefused = "mcp_inflight_refusals_total"
	NameBodyReaders   = "mcp_http_body_readers"
	NameUnverified    = "mcp_http_unverified_requests"
)

// Metrics are the instruments of one server instance. A nil *Metrics is valid
// and records nothing, so callers need no "metrics on?" checks.
type Metrics struct {
	reg          *prometheus.Registry
	httpRequests *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	batchSize    prometheus.Histogram
	rsRequests   *prometheus.CounterVec
	rsDuration   *prometheus.HistogramVec
	authRefusals *prometheus.CounterVec
	shed         *prometheus.CounterVec
	bodyTimeouts prometheus.Counter
	budgetWait   prometheus.Histogram
	budgetRefuse *prometheus.CounterVec
	watchOnce    sync.Once     // WatchBudget registers its gauges once
	readersOnce  sync.Once     // WatchBodyReaders likewise
	unverifOnce  sync.Once     // WatchUnverified likewise
	errorCodes   *boundedLabel // error_code values of toolCalls

	checksOnce sync.Once // WatchTokenChecks registers its instruments once, setting checks
	checks     *checkInstruments
}

// maxErrorCodes bounds the distinct error_code values of mcp_tool_calls_total.
// The code of an RS error is the RS's own, so an RS answering ever new codes
// would otherwise add series (and registry memory) without end; the adapter's
// and the PDPP reference RS's codes together are far fewer.
const maxErrorCodes = 64

// boundedLabel admits at most max distinct label values; values seen after
// that, like any value Label refuses, become "other".
type boundedLabel struct {
	mu   sync.Mutex
	max  int
	seen map[string]struct{} // at most max entries
}

// value is Label(v) while fewer than max distinct values were admitted or v is
// one of them, and "other" otherwise; "" (no code) is always itself.
func (b *boundedLabel) value(v string) string {
	v = Label(v)
	if v == "other" || v == "" {
		return v
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return "other"
	}
	b.seen[v] = struct{}{}
	return v
}

// latencyBuckets span a cached answer (ms) to a call at the RS timeout.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// counterVec, histogramVec and gaugeFunc make one instrument each.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func histogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels)
}

func gaugeFunc(name, help string, f func() float64) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
}

// New returns instruments registered in a fresh private registry, together
// with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg:          prometheus.NewRegistry(),
		httpRequests: counterVec(NameHTTPRequests, "HTTP requests answered, by route (/mcp, probes, metadata, other) and status code.", "route", "status"),
		toolCalls:    counterVec(NameToolCalls, "Tool calls finished, by tool, outcome (ok, tool_error, failure) and error code (empty when ok).", "tool", "outcome", "error_code"),
		toolDuration: histogramVec(NameToolDuration, "Tool call latency in seconds, by tool and outcome.", "tool", "outcome"),
		inFlight:     prometheus.NewGauge(prometheus.GaugeOpts{Name: NameToolsInFlight, Help: "Tool calls being served now."}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: NameBatchSize, Help: "Messages per JSON-RPC batch (protocol 2025-03-26 only).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		rsRequests:   counterVec(NameRSRequests, "Requests to the resource server, by method, route template and status (a code, or timeout, unreachable, cancelled).", "method", "route", "status"),
		rsDuration:   histogramVec(NameRSDuration, "Resource server request latency in seconds, by method and route template.", "method", "route"),
		authRefusals: counterVec(NameAuthRefusals, "Requests refused for authentication or authorization, by reason.", "reason"),
		shed:         counterVec(NameShed, "Requests refused at once, before any work, to protect the server, by reason: server_busy (the concurrent request cap was reached), body_readers_busy and client_body_readers_busy (the places for reading request bodies, in all or for one client address, were taken).", "reason"),
		bodyTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameBodyTimeouts, Help: "Requests refused because their body did not arrive within the body read timeout.",
		}),
		budgetWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: NameBudgetWait, Help: "Time reservations of the bytes-in-flight budget waited for room, in seconds (granted or not; reservations granted at once are not counted).", Buckets: latencyBuckets,
		}),
		budgetRefuse: counterVec(NameBudgetRefused, "Reservations of the bytes-in-flight budget refused, by reason: over_limit (larger than the whole budget), deadline (the call's deadline passed while it waited), cancelled (the call ended while it waited).", "reason"),
		errorCodes:   &boundedLabel{max: maxErrorCodes, seen: map[string]struct{}{}},
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.toolCalls, m.toolDuration, m.inFlight, m.batchSize,
		m.rsRequests, m.rsDuration, m.authRefusals, m.shed, m.bodyTimeouts,
		m.budgetWait, m.budgetRefuse,
	)
	return m
}

// Registry is the private registry (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, MaxRequestsInFlight: 4})
}

// HTTPRequest counts one answered HTTP request; route must be one of a fixed
// set chosen by the caller (never a raw path).
func (m *Metrics) HTTPRequest(route string, status int) {
	if m != nil {
		m.httpRequests.WithLabelValues(Label(route), strconv.Itoa(status)).Inc()
	}
}

// ToolStarted marks a tool call in flight; call the returned func once with
// its outcome when it ends.
func (m *Metrics) ToolStarted(tool string) func(outcome, errorCode string) {
	if m == nil {
		return func(string, string) {}
	}
	start := time.Now()
	m.inFlight.Inc()
	tool = Label(tool)
	return func(outcome, errorCode string) {
		m.inFlight.Dec()
		outcome = Label(outcome)
		m.toolCalls.WithLabelValues(tool, outcome, m.errorCodes.value(errorCode)).Inc()
		m.toolDuration.WithLabelValues(tool, outcome).Observe(time.Since(start).Seconds())
	}
}

// Batch records the size of one JSON-RPC batch.
func (m *Metrics) Batch(n int) {
	if m != nil {
		m.batchSize.Observe(float64(n))
	}
}

// RSRequest records one resource-server request; route is a template such as
// /v1/streams/{stream}/records, status a code or a failure kind.
func (m *Metrics) RSRequest(method, route, status string, d time.Duration) {
	if m == nil {
		return
	}
	method, route = Label(method), Label(route)
	m.rsRequests.WithLabelValues(method, route, Label(status)).Inc()
	m.rsDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// AuthRefused counts one refused request.
func (m *Metrics) AuthRefused(reason string) {
	if m != nil {
		m.authRefusals.WithLabelValues(Label(reason)).Inc()
	}
}

// Shed counts one request refused at once to protect the server; reason is
// a fixed code such as server_busy.
func (m *Metrics) Shed(reason string) {
	if m != nil {
		m.shed.WithLabelValues(Label(reason)).Inc()
	}
}

// BodyReadTimeout counts one request whose body did not arrive in time.
func (m *Metrics) BodyReadTimeout() {
	if m != nil {
		m.bodyTimeouts.Inc()
	}
}

// maxLabelLen bounds a label value; longer values become "other".
const maxLabelLen = 64

// WatchBudget exports the bytes-in-flight budget: held, read at each
// scrape, and its max. Only the first call registers anything.
func (m *Metrics) WatchBudget(held func() int64, max int64) {
	if m != nil {
		m.watchOnce.Do(func() {
			m.reg.MustRegister(
				gaugeFunc(NameBudgetHeld, "Bytes the bytes-in-flight budget holds now, for RS bodies and replies of all calls.", func() float64 { return float64(held()) }),
				gaugeFunc(NameBudgetMax, "The bytes-in-flight budget.", func() float64 { return float64(max) }),
			)
		})
	}
}

// BudgetWait records one wait for the budget that ended after d.
func (m *Metrics) BudgetWait(d time.Duration) {
	if m != nil {
		m.budgetWait.Observe(d.Seconds())
	}
}

// BudgetRefused counts one refused reservation; reason is one of a fixed
// set (see inflight's Refused constants).
func (m *Metrics) BudgetRefused(reason string) {
	if m != nil {
		m.budgetRefuse.WithLabelValues(Label(reason)).Inc()
	}
}

// WatchBodyReaders exports the reading places held now (read at each
// scrape). Only the first call registers anything.
func (m *Metrics) WatchBodyReaders(inUse func() int) {
	if m != nil {
		m.readersOnce.Do(func() {
			m.reg.MustRegister(gaugeFunc(NameBodyReaders, "Requests holding a place to read their body now (slow or large bodies).", func() float64 { return float64(inUse()) }))
		})
	}
}

// WatchUnverified exports the requests waiting now for the check of a
// bearer that has no good verdict yet (read at each scrape). Refusals by
// that pool are counted in NameShed. Only the first call registers
// anything.
func (m *Metrics) WatchUnverified(inUse func() int) {
	if m != nil {
		m.unverifOnce.Do(func() {
			m.reg.MustRegister(gaugeFunc(NameUnverified, "Requests whose bearer is being checked now, in the pool for tokens without a good verdict yet.", func() float64 { return float64(inUse()) }))
		})
	}
}

// Label keeps v when it is a short identifier-like string (letters, digits
// and _ . / - { }) and returns "other" otherwise, so free text never becomes a
// label value.
func Label(v string) string {
	if len(v) > maxLabelLen {
		return "other"
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '.', c == '/', c == '-', c == '{', c == '}':
		default:
			return "other"
		}
	}
	return v
}
