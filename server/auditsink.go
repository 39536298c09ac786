package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// AuditMessage is the message of every audit record the server writes.
const AuditMessage = "audit"

// SplitAudit returns a handler that sends audit records (message
// AuditMessage) to audit and every other record to logs, so that audit
// records can go to their own sink (usher serve --audit-log) while
// operational logs stay on stderr. Attributes and groups added with
// WithAttrs and WithGroup reach both.
func SplitAudit(logs, audit slog.Handler) slog.Handler {
	return &splitHandler{logs: logs, audit: audit}
}

type splitHandler struct {
	logs, audit slog.Handler
}

func (h *splitHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.logs.Enabled(ctx, l) || h.audit.Enabled(ctx, l)
}

func (h *splitHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == AuditMessage {
		if !h.audit.Enabled(ctx, r.Level) {
			return nil
		}
		return h.audit.Handle(ctx, r)
	}
	if !h.logs.Enabled(ctx, r.Level) {
		return nil
	}
	return h.logs.Handle(ctx, r)
}

func (h *splitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &splitHandler{logs: h.logs.WithAttrs(as), audit: h.audit.WithAttrs(as)}
}

func (h *splitHandler) WithGroup(name string) slog.Handler {
	return &splitHandler{logs: h.logs.WithGroup(name), audit: h.audit.WithGroup(name)}
}

// auditQueue takes audit records off the request path: a handler puts a
// record in a queue of fixed length and one goroutine formats and writes
// the records in order. When the queue is full the record is dropped and
// counted (usher_audit_records_dropped_total), so that a slow sink can
// neither hold requests up nor make memory grow. close writes what is
// queued; a record that comes after is written on its caller's goroutine.
type auditQueue struct {
	mu      sync.RWMutex // held for writing only by close
	closed  bool
	ch      chan queuedRecord
	done    chan struct{}
	dropped atomic.Uint64
}

type queuedRecord struct {
	h slog.Handler
	r slog.Record
}

func newAuditQueue(size int) *auditQueue {
	q := &auditQueue{ch: make(chan queuedRecord, size), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for x := range q.ch {
			_ = x.h.Handle(context.Background(), x.r)
		}
	}()
	return q
}

func (q *auditQueue) send(ctx context.Context, h slog.Handler, r slog.Record) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return h.Handle(ctx, r)
	}
	select {
	case q.ch <- queuedRecord{h, r.Clone()}:
	default:
		q.dropped.Add(1)
	}
	return nil
}

// close writes the records queued and returns when they are written.
func (q *auditQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}

// queued returns a handler that sends audit records (message
// AuditMessage) through q to h, and every other record to h at once.
func (q *auditQueue) handler(h slog.Handler) slog.Handler { return &queuedHandler{h: h, q: q} }

type queuedHandler struct {
	h slog.Handler
	q *auditQueue
}

func (h *queuedHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *queuedHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != AuditMessage {
		return h.h.Handle(ctx, r)
	}
	return h.q.send(ctx, h.h, r)
}

func (h *queuedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &queuedHandler{h: h.h.WithAttrs(as), q: h.q}
}

func (h *queuedHandler) WithGroup(name string) slog.Handler {
	return &queuedHandler{h: h.h.WithGroup(name), q: h.q}
}

// registerAuditDrops exposes the records q dropped.
func registerAuditDrops(reg *prometheus.Registry, q *auditQueue) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "usher_audit_records_dropped_total",
		Help: "Audit records dropped because the queue to the audit sink was full (Options.AuditQueue).",
	}, func() float64 { return float64(q.dropped.Load()) }))
}
