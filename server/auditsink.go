package server

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher/admission"
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
// neither hold requests up nor make memory grow; so is an admission
// record that would take the bytes queued past maxQueuedReviewBytes.
// close writes what is queued; a record that comes after is written on
// its caller's goroutine.
//
// An admission review's record travels as its JSON line when the server
// has an audit writer (auditWriter): Record.AppendJSON renders it on the
// request path into a pooled buffer for less than copying the record
// would cost, and the writer's goroutine only writes it. Without one, it
// travels as the admission.Record, cut and copied (Record.Clip: bounded,
// sharing no memory with the review's body), and the writer's goroutine
// hands it to the logger's handler as slog attributes.
type auditQueue struct {
	mu      sync.RWMutex // held for writing only by close
	closed  bool
	ch      chan queuedRecord
	done    chan struct{}
	dropped atomic.Uint64
	w       *auditWriter // nil: admission records go to their queuedRecord's handler
	// bytes is what the admission records queued hold; a record that
	// would take it past maxQueuedReviewBytes is dropped.
	bytes atomic.Int64
}

// maxQueuedReviewBytes bounds the bytes of the admission records waiting
// in the queue (their lines' buffers, or their strings). A record holds at
// most about 8 KiB the requester chose, cut (its line up to six times
// that, escaped), and typically under 1 KiB, so the bound only bites when
// a stalled sink meets large records.
const maxQueuedReviewBytes = 8 << 20

// queuedRecord is a slog record for h; or an admission review's record:
// its JSON line for the audit writer (line), or, without one, the record
// itself for h (adm).
type queuedRecord struct {
	h    slog.Handler
	r    slog.Record
	adm  *queuedReview
	line *[]byte // from reviewBufs
}

type queuedReview struct {
	t    time.Time
	rec  admission.Record // clipped: Record.Clip
	size int64            // bytes of rec's strings
}

func newAuditQueue(size int, w *auditWriter) *auditQueue {
	q := &auditQueue{ch: make(chan queuedRecord, size), done: make(chan struct{}), w: w}
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
	switch {
	case x.line != nil:
		q.w.write(*x.line)
		q.bytes.Add(-int64(cap(*x.line)))
		putReviewBuf(x.line)
	case x.adm != nil:
		q.writeReview(x.h, x.adm)
		q.bytes.Add(-x.adm.size)
	default:
		_ = x.h.Handle(context.Background(), x.r)
	}
}

func (q *auditQueue) send(ctx context.Context, h slog.Handler, r slog.Record) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return h.Handle(ctx, r)
	}
	select {
	case q.ch <- queuedRecord{h: h, r: r.Clone()}:
	default:
		q.dropped.Add(1)
	}
	return nil
}

// sendReview queues an admission review's record, made at t: with an
// audit writer, its JSON line, rendered here into a pooled buffer (which
// costs less than copying the record: Record.AppendJSON allocates
// nothing); without one, the record for h, cut and copied (Record.Clip).
// Either way what is queued shares no memory with the review, and the
// bytes queued are bounded by maxQueuedReviewBytes.
func (q *auditQueue) sendReview(h slog.Handler, t time.Time, rec *admission.Record) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.writeReview(h, &queuedReview{t: t, rec: *rec})
		return
	}
	if len(q.ch) == cap(q.ch) { // full: nothing to render
		q.dropped.Add(1)
		return
	}
	var x queuedRecord
	var size int64
	if q.w != nil && renderable(t) {
		x.line = reviewBufs.Get().(*[]byte)
		*x.line = appendReviewLine((*x.line)[:0], t, rec)
		size = int64(cap(*x.line))
	} else {
		x.h, x.adm = h, &queuedReview{t: t, rec: rec.Clip()}
		x.adm.size = int64(x.adm.rec.Size())
		size = x.adm.size
	}
	if q.bytes.Add(size) <= maxQueuedReviewBytes {
		select {
		case q.ch <- x:
			return
		default:
		}
	}
	q.bytes.Add(-size)
	q.dropped.Add(1)
	if x.line != nil {
		putReviewBuf(x.line)
	}
}

// writeReview writes an admission review's record.
func (q *auditQueue) writeReview(h slog.Handler, x *queuedReview) {
	if q.w != nil {
		q.w.writeReview(x.t, &x.rec)
		return
	}
	logReview(h, x.t, &x.rec)
}

// logReview hands an admission review's record to h as the server's
// logger would (message AuditMessage, kind admission, the attributes of
// Record.AppendAttrs).
func logReview(h slog.Handler, t time.Time, rec *admission.Record) {
	var as [admission.NumAuditAttrs + 1]slog.Attr // + kind
	r := slog.NewRecord(t, slog.LevelInfo, AuditMessage, 0)
	r.AddAttrs(rec.AppendAttrs(append(as[:0], slog.String("kind", "admission")))...)
	_ = h.Handle(context.Background(), r)
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

// auditWriter is the audit sink of Options.AuditLog: one JSON line per
// record, as slog.NewJSONHandler writes them at level Info. Admission
// records are written by Record.AppendJSON, every other audit record by
// its slog handler (handler); both take mu, so lines never interleave.
type auditWriter struct {
	mu sync.Mutex
	w  io.Writer
	h  slog.Handler // JSON to w at level Info, through mu
}

func newAuditWriter(w io.Writer) *auditWriter {
	a := &auditWriter{w: w}
	a.h = slog.NewJSONHandler(lockedWriter{a}, &slog.HandlerOptions{Level: slog.LevelInfo})
	return a
}

type lockedWriter struct{ a *auditWriter }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.a.mu.Lock()
	defer l.a.mu.Unlock()
	return l.a.w.Write(p)
}

// writeReview writes an admission review's record made at t, on the
// caller's goroutine, as slog.NewJSONHandler would write the server's
// record of it (message AuditMessage, kind admission, the attributes of
// Record.AppendAttrs).
func (a *auditWriter) writeReview(t time.Time, rec *admission.Record) {
	if !renderable(t) {
		logReview(a.h, t, rec)
		return
	}
	p := reviewBufs.Get().(*[]byte)
	*p = appendReviewLine((*p)[:0], t, rec)
	a.write(*p)
	putReviewBuf(p)
}

// write writes one line.
func (a *auditWriter) write(line []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(line)
}

// renderable reports whether appendReviewLine writes t as slog does: slog
// writes an error in place of a year outside [0, 9999], and no time for
// the zero time; those are left to slog.
func renderable(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y < 10000 && !t.IsZero()
}

// appendReviewLine appends the JSON line of an admission review's record.
func appendReviewLine(buf []byte, t time.Time, rec *admission.Record) []byte {
	buf = append(buf, `{"time":"`...)
	buf = t.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","level":"INFO","msg":"`+AuditMessage+`","kind":"admission",`...)
	buf = rec.AppendJSON(buf)
	return append(buf, "}\n"...)
}

// reviewBufs are the buffers admission records are rendered into, on the
// request path.
var reviewBufs = sync.Pool{New: func() any { return new([]byte) }}

// putReviewBuf returns a buffer to reviewBufs, unless a huge record made
// it too large to keep.
func putReviewBuf(p *[]byte) {
	if cap(*p) <= 64<<10 {
		*p = (*p)[:0]
		reviewBufs.Put(p)
	}
}
