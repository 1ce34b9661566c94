package api

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// routeUnmatched is the route label of a request no route matched (404, 405):
// the label is a route pattern, never the raw path.
const routeUnmatched = "unmatched"

// httpMetrics are the Server's request metrics (Config.Metrics):
// txlog_http_requests_total{route,code} and
// txlog_http_request_duration_seconds{route}. Each route's series are looked
// up once, when the routes are built (routeMetrics), not per request.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	routes   map[string]*routeMetrics // by route pattern; built before serving, read-only after
}

// newHTTPMetrics registers the request metrics with reg; it panics if they
// are registered already, as prometheus.MustRegister does (one Server per
// registry).
func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "txlog_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "txlog_http_request_duration_seconds",
			Help:    "Time from a request's handler start to its answer, by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100µs .. 15s
		}, []string{"route"}),
		routes: map[string]*routeMetrics{},
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// route returns the series of one route pattern, shared by its methods.
func (m *httpMetrics) route(pattern string) *routeMetrics {
	if rm, ok := m.routes[pattern]; ok {
		return rm
	}
	rm := &routeMetrics{route: pattern, vec: m.requests, dur: m.duration.WithLabelValues(pattern)}
	m.routes[pattern] = rm
	return rm
}

// routeMetrics are one route's series. A status code's counter is made the
// first time the route answers it, and kept in codes: a request's count is
// an array index and an atomic add.
type routeMetrics struct {
	route string
	vec   *prometheus.CounterVec
	dur   prometheus.Observer
	codes [500]atomic.Pointer[counter] // by status - 100
}

type counter struct{ prometheus.Counter }

func (rm *routeMetrics) observe(status int, d time.Duration) {
	rm.dur.Observe(d.Seconds())
	if status < 100 || status >= 600 {
		rm.vec.WithLabelValues(rm.route, "other").Inc()
		return
	}
	slot := &rm.codes[status-100]
	c := slot.Load()
	if c == nil {
		c = &counter{rm.vec.WithLabelValues(rm.route, statusLabel(status))}
		slot.Store(c) // a racing request may store its own: the same series
	}
	c.Inc()
}

func statusLabel(status int) string {
	b := [3]byte{byte('0' + status/100), byte('0' + status/10%10), byte('0' + status%10)}
	return string(b[:])
}

// instrument wraps h, the handler of route pattern, with the route's metrics;
// on a nil m (no Config.Metrics) it returns h.
func (m *httpMetrics) instrument(pattern string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	rm := m.route(pattern)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		status := http.StatusOK
		if rec, ok := w.(*recorder); ok {
			status = rec.status
		}
		rm.observe(status, time.Since(start))
	})
}

// instrumentRoutes wraps the handler of every route of r with instrument,
// under the route's path template: once, when the routes are built, so that
// a request finds its series without a lookup.
func (m *httpMetrics) instrumentRoutes(r *mux.Router) {
	if m == nil {
		return
	}
	r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if tpl, err := route.GetPathTemplate(); err == nil && route.GetHandler() != nil {
			route.Handler(m.instrument(tpl, route.GetHandler()))
		}
		return nil
	})
}
