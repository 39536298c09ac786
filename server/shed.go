package server

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Load shedding: the bodies of requests being read and decoded draw on a
// memory budget shared by every connection and every HTTP/2 stream. A
// request whose body does not fit is refused at once with 429 Too Many
// Requests and Retry-After, before any of its body is read, so that a
// crowd of large (or slow) bodies cannot take the process past its memory
// limit; with failurePolicy Fail, an out-of-memory kill of every replica
// would stop every pod creation in the cluster, while a refused review
// fails only that request.
//
//   - A body is charged bodyCost(n): twice its size (the read buffer and
//     the decoded text that references it) plus a fixed overhead.
//   - A body with a declared length (Content-Length, which the API server
//     always sends) is charged up front, before it is read. One without
//     (chunked, or an HTTP/2 stream without content-length) is charged as
//     it is read, in grains; when a grain does not fit, the read fails and
//     the request is refused with 429.
//   - Small bodies (at most SmallBody bytes: an ordinary review) draw first
//     from a reserve that large ones cannot touch, so that reviews keep
//     being answered while large bodies hold the shared budget.
//   - Once a body is charged it must arrive within BodyReadTimeout; a slow
//     body cannot hold its share for longer.
//   - Requests without a body (/healthz, /readyz, /metrics) draw nothing.
//
// docs/limits.md has the defaults and the ceiling they keep usher under.

// budget is a number of bytes that holders take and give back; it never
// waits: a take that does not fit fails at once.
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

// Charges of a body: twice its bytes, plus overhead for the decoded
// request, its response and the bookkeeping.
const (
	bodyOverhead = 8 << 10
	// bodyGrain is what a body of unknown length is charged at a time.
	bodyGrain = 64 << 10
)

func bodyCost(n int64) int64 { return 2*n + bodyOverhead }

// take charges cost for a body of n bytes: from the reserve when the body
// is small and the reserve has room, else from the shared budget. It
// returns the budget charged, or nil when neither has room.
func (bb *bodyBudgets) take(n, cost int64) *budget {
	if n <= bb.smallBody && bb.small.tryTake(cost) {
		return &bb.small
	}
	if bb.shared.tryTake(cost) {
		return &bb.shared
	}
	return nil
}

// shedError is the read error of a body of unknown length that outgrew
// the budget. HTTPStatus tells the handlers which status to answer with.
type shedError struct{}

func (shedError) Error() string {
	return "usher is short of memory for request bodies: request refused; retry later"
}

// HTTPStatus is the status to answer with: 429 Too Many Requests.
func (shedError) HTTPStatus() int { return http.StatusTooManyRequests }

var errShed error = shedError{}

// retryAfter is the Retry-After of a refused request, in seconds.
var retryAfter = []string{"1"}

// limitBody wraps a handler whose request has a body of at most maxBody
// bytes so that the body draws on the shared budget (see above). The
// handler must refuse a declared length above maxBody without reading the
// body, and stop reading any body past maxBody+1 bytes.
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
					// net/http would read and discard up to 256 KiB of the
					// body to keep the connection, then close it anyway.
					w.Header()["Connection"] = closeConn
				}
				s.shed(w)
				return
			}
		}
		// The body is read through a meteredBody (pooled: no allocation):
		// it charges a body of unknown length as it arrives, and lifts the
		// read deadline once the body is in, so that the deadline bounds
		// the body and not the decision.
		mb := meteredPool.Get().(*meteredBody)
		*mb = meteredBody{body: r.Body, bb: &s.bodies, w: w, from: from, charged: cost, declared: from != nil}
		r.Body = mb
		defer func() {
			// The caller's request keeps its own body, never one back in
			// the pool: a caller that serves it again must not read
			// through a meteredBody into itself.
			r.Body = mb.body
			mb.release()
			if mb.shed {
				shed.Inc()
			}
			*mb = meteredBody{}
			meteredPool.Put(mb)
		}()
		mb.deadline = s.bodyDeadline(w)
		h.ServeHTTP(w, r)
	})
}

// bodyDeadline bounds how long the body may take to arrive: it sets the
// read deadline of the connection (HTTP/1.1) or the stream (HTTP/2), as
// http.ResponseController does, without allocating.
func (s *Server) bodyDeadline(w http.ResponseWriter) bool {
	return setReadDeadline(w, time.Now().Add(s.opts.BodyReadTimeout))
}

// setReadDeadline sets the read deadline through w and the writers it
// wraps; it reports whether one of them could.
func setReadDeadline(w http.ResponseWriter, deadline time.Time) bool {
	for {
		switch x := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			return x.SetReadDeadline(deadline) == nil
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return false
		}
	}
}

// shed answers 429 with Retry-After and a JSON error, without reading
// the body. (HTTP/1.1 closes the connection when more than 256 KiB are
// unread; HTTP/2 resets the stream and keeps the connection.)
func (s *Server) shed(w http.ResponseWriter) {
	w.Header()["Retry-After"] = retryAfter
	badRequest(w, http.StatusTooManyRequests, "%s", errShed.Error())
}

// discardLimit is how much of an unread body net/http reads to keep an
// HTTP/1.1 connection open.
const discardLimit = 256 << 10

var closeConn = []string{"close"}

// meteredBody reads a request's body. A body of declared length comes
// with its charge (covered is its length); one of unknown length is
// charged as it is read, as if it had declared covered bytes, the charge
// growing a grain at a time ahead of the bytes read. At the end of the
// body it lifts the read deadline.
type meteredBody struct {
	body          io.ReadCloser
	bb            *bodyBudgets
	w             http.ResponseWriter
	read, covered int64 // bytes read; bytes the charge covers
	charged       int64 // the charge held in from
	from          *budget
	shed          bool
	declared      bool // charged up front for its declared length
	deadline      bool // a read deadline is set, to lift when the body is in
}

var meteredPool = sync.Pool{New: func() any { return new(meteredBody) }}

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
		setReadDeadline(m.w, time.Time{})
	}
	return n, err
}

// grow extends the charge by a grain: in the budget already charged when
// it has room (the reserve only while the body is small), else as a new
// charge wherever a body of that size may draw.
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

// registerBodyGauges exports the budgets' use and size, and the
// connections open.
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

// connLimiter caps the connections open at once: each costs memory (TLS
// and HTTP buffers, a goroutine; about 27 KiB when idle) that the body
// budget does not see. A connection beyond the cap is closed as soon as it
// is accepted, before its TLS handshake, and counted.
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
