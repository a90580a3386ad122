package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the instruments of the line of token checks (the hosted
// transport's checks of bearers without a good verdict yet).
const (
	NameCheckQueue    = "mcp_http_token_check_queue"
	NameChecksRunning = "mcp_http_token_checks_running"
	NameCheckWait     = "mcp_http_token_check_wait_seconds"
	NameCheckRefused  = "mcp_http_token_check_refusals_total"
	NameCheckJoined   = "mcp_http_token_check_joined_total"
)

// checkInstruments are the line's instruments, made by WatchTokenChecks.
type checkInstruments struct {
	wait    *prometheus.HistogramVec
	refused *prometheus.CounterVec
	joined  prometheus.Counter
}

// WatchTokenChecks exports the line of token checks: the checks waiting in
// line and running now (depth, read at each scrape), how long checks waited
// for their turn by class (person: an address that showed a good token
// recently; stranger), the checks the line refused by reason, and the
// requests that joined a check of the same bearer already in line. Only the
// first call registers anything; before it the other methods record
// nothing.
func (m *Metrics) WatchTokenChecks(depth func() (waiting, running int)) {
	if m != nil {
		m.checksOnce.Do(func() {
			c := &checkInstruments{
				wait:    histogramVec(NameCheckWait, "Time token checks waited in line for their turn, in seconds, by class (person: from an address that showed a good token recently; stranger), whether they ran or not.", "class"),
				refused: counterVec(NameCheckRefused, "Token checks the line refused, by reason: prefix_unverified_busy (the network's queue was full), client_unverified_busy (the address's share of it, or the requests one check may gather), unverified_busy (every place in line was taken and the network held the most), unverified_wait_timeout (no turn in time).", "reason"),
				joined: prometheus.NewCounter(prometheus.CounterOpts{
					Name: NameCheckJoined, Help: "Requests that waited for a check of the same bearer already in line or running, instead of a check of their own.",
				}),
			}
			m.reg.MustRegister(c.wait, c.refused, c.joined,
				gaugeFunc(NameCheckQueue, "Token checks waiting in line for their turn now.", func() float64 { w, _ := depth(); return float64(w) }),
				gaugeFunc(NameChecksRunning, "Token checks running now.", func() float64 { _, r := depth(); return float64(r) }),
			)
			m.checks = c
		})
	}
}

// TokenCheckWaited records one check's wait in line, ended after d.
func (m *Metrics) TokenCheckWaited(person bool, d time.Duration) {
	if m == nil || m.checks == nil {
		return
	}
	class := "stranger"
	if person {
		class = "person"
	}
	m.checks.wait.WithLabelValues(class).Observe(d.Seconds())
}

// TokenCheckRefused counts one check the line refused; reason is a fixed
// code.
func (m *Metrics) TokenCheckRefused(reason string) {
	if m != nil && m.checks != nil {
		m.checks.refused.WithLabelValues(Label(reason)).Inc()
	}
}

// TokenCheckJoined counts one request that joined a check in flight.
func (m *Metrics) TokenCheckJoined() {
	if m != nil && m.checks != nil {
		m.checks.joined.Inc()
	}
}
