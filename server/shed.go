package server

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Load shedding: a request body that does not fit the memory budget is
// refused with 429 before it is read, so a crowd of large bodies cannot get
// every replica killed (which, with failurePolicy Fail, stops every pod
// creation). docs/limits.md has the figures.

// budget is bytes that holders take and give back; a take never waits.
type budget struct {
	limit int64
	used  atomic.Int64
}

func (b *budget) tryTake(n int64) bool {
	for {
		cur := b.used.Load()
		if cur+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// bodyBudgets are the reserve for small bodies and the shared budget.
type bodyBudgets struct {
	small, shared budget
	smallBody     int64
}

// A body costs twice its bytes (buffer and decoded text) plus overhead;
// one of unknown length is charged a grain at a time.
const (
	bodyOverhead = 8 << 10
	bodyGrain    = 64 << 10
)

func bodyCost(n int64) int64 { return 2*n + bodyOverhead }

// take charges cost for a body of n bytes to the reserve or the shared
// budget and returns which, or nil when neither has room.
func (bb *bodyBudgets) take(n, cost int64) *budget {
	if n <= bb.smallBody && bb.small.tryTake(cost) {
		return &bb.small
	}
	if bb.shared.tryTake(cost) {
		return &bb.shared
	}
	return nil
}

// shedError is the read error of a body that outgrew the budget.
type shedError struct{}

func (shedError) Error() string {
	return "usher is short of memory for request bodies: request refused; retry later"
}

func (shedError) HTTPStatus() int { return http.StatusTooManyRequests }

var (
	errShed    error = shedError{}
	retryAfter       = []string{"1"}
	closeConn        = []string{"close"}
)

// limitBody makes h's body, of at most maxBody bytes, draw on the budget;
// h must refuse a larger declared length without reading.
func (s *Server) limitBody(name string, maxBody int64, h http.Handler) http.Handler {
	shed := s.metrics.shed.WithLabelValues(name, "memory")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		var from *budget
		var cost int64
		switch {
		case r.ContentLength > maxBody:
			h.ServeHTTP(w, r) // refused as too large without reading it
			return
		case r.ContentLength > 0:
			cost = bodyCost(r.ContentLength)
			if from = s.bodies.take(r.ContentLength, cost); from == nil {
				shed.Inc()
				if r.ProtoMajor == 1 && r.ContentLength > discardLimit {
					// net/http would read 256 KiB, then close it anyway.
					w.Header()["Connection"] = closeConn
				}
				s.shed(w)
				return
			}
		}
		// The deadline bounds the body, not the decision: lifted at EOF.
		mb := &meteredBody{body: r.Body, bb: &s.bodies, rc: http.NewResponseController(w), w: w, from: from, charged: cost, declared: from != nil}
		r.Body = mb
		defer func() {
			// Never leave the metered body in a caller's request: one that
			// serves it again would read through it into itself.
			r.Body = mb.body
			mb.release()
			if mb.shed {
				shed.Inc()
			}
		}()
		mb.deadline = mb.rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout)) == nil
		h.ServeHTTP(w, r)
	})
}

// shed answers 429 with Retry-After, without reading the body.
func (s *Server) shed(w http.ResponseWriter) {
	w.Header()["Retry-After"] = retryAfter
	badRequest(w, http.StatusTooManyRequests, "%s", errShed.Error())
}

// discardLimit is what net/http reads of an unread body to keep a connection.
const discardLimit = 256 << 10

// meteredBody reads a request's body, charging one of unknown length a
// grain ahead of the bytes read, and lifts the read deadline at its end.
type meteredBody struct {
	body          io.ReadCloser
	bb            *bodyBudgets
	rc            *http.ResponseController
	w             http.ResponseWriter
	read, covered int64 // bytes read; bytes the charge covers
	charged       int64 // the charge held in from
	from          *budget
	shed          bool
	declared      bool // charged up front for its declared length
	deadline      bool // a read deadline is set, to lift when the body is in
}

func (m *meteredBody) Read(p []byte) (int, error) {
	if m.shed {
		return 0, errShed
	}
	if !m.declared {
		if len(p) > bodyGrain {
			p = p[:bodyGrain]
		}
		if m.read+int64(len(p)) > m.covered && !m.grow() {
			m.shed = true
			m.w.Header()["Retry-After"] = retryAfter
			return 0, errShed
		}
	}
	n, err := m.body.Read(p)
	m.read += int64(n)
	if err == io.EOF && m.deadline {
		m.deadline = false
		_ = m.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// grow extends the charge by a grain, in the budget charged when it has
// room, else wherever a body of that size may draw.
func (m *meteredBody) grow() bool {
	covered := m.covered + bodyGrain
	cost := bodyCost(covered)
	if m.from != nil && (m.from != &m.bb.small || covered <= m.bb.smallBody) && m.from.tryTake(cost-m.charged) {
		m.charged, m.covered = cost, covered
		return true
	}
	b := m.bb.take(covered, cost)
	if b == nil {
		return false
	}
	m.release()
	m.from, m.charged, m.covered = b, cost, covered
	return true
}

func (m *meteredBody) Close() error { return m.body.Close() }

func (m *meteredBody) release() {
	if m.from != nil {
		m.from.give(m.charged)
	}
	m.from, m.charged = nil, 0
}

// registerBodyGauges exports the budgets and the connections open.
func (s *Server) registerBodyGauges() {
	for _, b := range []struct {
		name string
		b    *budget
	}{{"shared", &s.bodies.shared}, {"small", &s.bodies.small}} {
		labels := prometheus.Labels{"budget": b.name}
		s.registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_body_memory_in_use_bytes", ConstLabels: labels,
				Help: "Memory charged to the request bodies being read and decoded, by budget (shared, small: the reserve of small bodies)."},
				func() float64 { return float64(b.b.used.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_body_memory_limit_bytes", ConstLabels: labels,
				Help: "Size of the request body budgets (BodyMemory, SmallBodyReserve)."},
				func() float64 { return float64(b.b.limit) }))
	}
	s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_connections_open",
		Help: "Connections open (at most MaxConns)."}, func() float64 { return float64(s.conns.open.Load() + s.webhookConns.open.Load()) }))
}

// connLimiter caps the open connections, whose memory (~27 KiB idle) the
// body budget does not see: one beyond is closed as soon as accepted.
type connLimiter struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused prometheus.Counter
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Inc()
		c.Close()
	}
}

type limitedConn struct {
	net.Conn
	l      *connLimiter
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return err
}
