package server

import (
	"context"
	"log/slog"
	"slices"
	"strings"
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
// record in a queue of fixed length and one goroutine hands the records,
// in order, to their slog handler, which formats and writes them. A
// record that finds the queue full, or that would take the bytes queued
// past maxQueuedBytes, is dropped and counted
// (usher_audit_records_dropped_total), so that a slow sink can neither
// hold requests up nor make memory grow. A queued record's strings are
// copied (detach): it keeps no request's body alive. close writes what is
// queued; a record that comes after is written on its caller's goroutine.
type auditQueue struct {
	mu      sync.RWMutex // held for writing only by close
	closed  bool
	ch      chan queuedRecord
	done    chan struct{}
	dropped atomic.Uint64
	// bytes is what the records queued hold.
	bytes atomic.Int64
}

// maxQueuedBytes bounds the bytes of the strings of the records waiting
// in the queue. An admission record holds at most about 25 KiB the
// requester chose, cut, and typically under 1 KiB, so the bound only
// bites when a stalled sink meets large records.
const maxQueuedBytes = 8 << 20

// queuedRecord is a record for h holding size bytes of strings.
type queuedRecord struct {
	h    slog.Handler
	r    slog.Record
	size int64
}

func newAuditQueue(size int) *auditQueue {
	q := &auditQueue{ch: make(chan queuedRecord, size), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for x := range q.ch {
			q.write(x)
		}
	}()
	return q
}

// write writes one queued record and gives back the bytes it held.
func (q *auditQueue) write(x queuedRecord) {
	_ = x.h.Handle(context.Background(), x.r)
	q.bytes.Add(-x.size)
}

func (q *auditQueue) send(_ context.Context, h slog.Handler, r slog.Record) error {
	var arr [32]slog.Attr
	as := arr[:0]
	r.Attrs(func(a slog.Attr) bool { as = append(as, a); return true })
	return q.sendAttrs(h, slog.NewRecord(r.Time, r.Level, r.Message, r.PC), as)
}

// sendAttrs queues r, a record without attributes yet, for h with the
// attributes as, their strings detached; or drops it. After close it
// hands the record to h at once.
func (q *auditQueue) sendAttrs(h slog.Handler, r slog.Record, as []slog.Attr) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		r.AddAttrs(as...)
		return h.Handle(context.Background(), r)
	}
	if len(q.ch) < cap(q.ch) {
		size := detach(as)
		r.AddAttrs(as...)
		if q.bytes.Add(size) <= maxQueuedBytes {
			select {
			case q.ch <- queuedRecord{h: h, r: r, size: size}:
				return nil
			default:
			}
		}
		q.bytes.Add(-size)
	}
	q.dropped.Add(1)
	return nil
}

// detach copies the string values of as, in groups and string lists too,
// into one allocation of their own, and returns the number of their bytes.
func detach(as []slog.Attr) int64 {
	n := 0
	var count func(v slog.Value)
	count = func(v slog.Value) {
		switch v.Kind() {
		case slog.KindString:
			n += len(v.String())
		case slog.KindGroup:
			for _, a := range v.Group() {
				count(a.Value)
			}
		case slog.KindAny:
			if ss, ok := v.Any().([]string); ok {
				for _, s := range ss {
					n += len(s)
				}
			}
		}
	}
	for _, a := range as {
		count(a.Value)
	}
	var b strings.Builder
	b.Grow(n) // never grows again: the strings cut from it stay valid
	cp := func(s string) string {
		i := b.Len()
		b.WriteString(s)
		return b.String()[i:]
	}
	var copied func(v slog.Value) slog.Value
	copied = func(v slog.Value) slog.Value {
		switch v.Kind() {
		case slog.KindString:
			return slog.StringValue(cp(v.String()))
		case slog.KindGroup:
			g := slices.Clone(v.Group())
			for i := range g {
				g[i].Value = copied(g[i].Value)
			}
			return slog.GroupValue(g...)
		case slog.KindAny:
			if ss, ok := v.Any().([]string); ok && ss != nil {
				out := make([]string, len(ss))
				for i, s := range ss {
					out[i] = cp(s)
				}
				return slog.AnyValue(out)
			}
		}
		return v
	}
	for i := range as {
		as[i].Value = copied(as[i].Value)
	}
	return int64(n)
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
