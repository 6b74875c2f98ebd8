package tunnel

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus series, in a registry of its own
// (no global state: two services in one test process never collide).
type metrics struct {
	reg           *prometheus.Registry
	sessionsOpen  *prometheus.GaugeVec
	sessionsTotal *prometheus.CounterVec
	bytes         *prometheus.CounterVec
	dialErrors    *prometheus.CounterVec
	dialSeconds   prometheus.Histogram
	proxySeconds  *prometheus.HistogramVec
	denied        prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		sessionsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "deckhand_tunnel_sessions_open",
			Help: "Forwarded connections open now, by kind (websocket: a WebSocket tunnel; proxy: a reverse-proxy upstream connection)."}, []string{"kind"}),
		sessionsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "deckhand_tunnel_sessions_total",
			Help: "Forwarded connections opened, by kind."}, []string{"kind"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "deckhand_tunnel_bytes_total",
			Help: "Bytes forwarded, by direction (in: client to the port; out: the port to the client) and target port."}, []string{"direction", "port"}),
		dialErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "deckhand_tunnel_dial_errors_total",
			Help: "Connections to a local port that failed, by port and reason (refused, timeout, other)."}, []string{"port", "reason"}),
		dialSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "deckhand_tunnel_dial_duration_seconds",
			Help:    "Time to connect to a local port.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 3}}),
		proxySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "deckhand_tunnel_proxy_request_duration_seconds",
			Help:    "Reverse-proxy requests from arrival to the upstream's response headers, by port and status code.",
			Buckets: prometheus.DefBuckets}, []string{"port", "code"}),
		denied: prometheus.NewCounter(prometheus.CounterOpts{Name: "deckhand_tunnel_denied_total",
			Help: "Requests refused because the port is on the deny list."}),
	}
	m.reg.MustRegister(m.sessionsOpen, m.sessionsTotal, m.bytes, m.dialErrors, m.dialSeconds, m.proxySeconds, m.denied,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// collectBindings exports the number of listening ports.
func (m *metrics) collectBindings(sc *scanner) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deckhand_tunnel_bindings",
		Help: "TCP ports listening in the container (ignored ports left out)."}, func() float64 { return float64(sc.count()) }))
}

// portCounters are one port's byte counters, resolved once per session.
func (m *metrics) portCounters(port int) (in, out prometheus.Counter) {
	p := strconv.Itoa(port)
	return m.bytes.WithLabelValues("in", p), m.bytes.WithLabelValues("out", p)
}
