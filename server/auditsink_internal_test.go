package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/usherhq/usher/admission"
)

// reviewRecord is the server's slog record of an admission review, as
// auditReview makes it.
func reviewRecord(at time.Time, rec *admission.Record) slog.Record {
	r := slog.NewRecord(at, slog.LevelInfo, AuditMessage, 0)
	r.AddAttrs(rec.AppendAttrs([]slog.Attr{slog.String("kind", "admission")})...)
	return r
}

func hostileRecords() []admission.Record {
	var ctl strings.Builder
	for c := range 0x80 {
		ctl.WriteByte(byte(c))
	}
	h := ctl.String() + "<b>&</b>\u2028\u2029\xff\xc3\xed\xa0\x80😀"
	long := strings.Repeat("é<\"", 2000)
	return []admission.Record{
		{},
		{Webhook: "mutate", UID: "u-1", Operation: "CREATE", Kind: "Pod", Namespace: "team-a", Name: "spark-exec-*",
			User: "alice", Groups: []string{"dev", "system:authenticated"}, Identity: "alice", Queue: "root.dev",
			Allowed: true, Patched: true, Code: 200, Reason: "stamped the submitter's identity", Rule: admission.RuleStamped},
		{Webhook: "validate", UID: h, Operation: h, Kind: h, Namespace: h, Name: long, User: h, Groups: []string{h, long, ""},
			Identity: long, Queue: h, Code: 403, Reason: long + h, Rule: admission.RuleDenied, DryRun: true, Warned: true, Lookup: h,
			Denial: &admission.Denial{Reason: admission.CauseQueueSubmitDenied, Message: long, Code: 403, Warned: true, Operation: h,
				Group: h, Kind: "Job", Namespace: h, Name: long, User: h, Identity: h, Queue: long, Check: "submit", Field: h, DryRun: true}},
	}
}

// Through the queue, admission records and other audit records reach the
// audit sink in order, each line as slog's JSON handler writes the record
// given to it, and what is queued is written on close; a record sent
// after close is written at once.
func TestAuditQueueWritesInOrder(t *testing.T) {
	var b, want bytes.Buffer
	q := newAuditQueue(64)
	h := q.handler(SplitAudit(slog.NewJSONHandler(&bytes.Buffer{}, nil), slog.NewJSONHandler(&b, nil)))
	direct := slog.NewJSONHandler(&want, nil)
	for i, rec := range hostileRecords() {
		r := reviewRecord(time.Now(), &rec)
		_ = direct.Handle(context.Background(), r)
		_ = h.Handle(context.Background(), r)
		r = slog.NewRecord(time.Now(), slog.LevelInfo, AuditMessage, 0)
		r.AddAttrs(slog.String("kind", "access"), slog.Int("n", i))
		_ = direct.Handle(context.Background(), r)
		_ = h.Handle(context.Background(), r)
	}
	q.close()
	if n := q.bytes.Load(); n != 0 {
		t.Fatalf("%d bytes still counted as queued after close", n)
	}
	if got := b.String(); got != want.String() {
		t.Fatalf("through the queue: %s", lineDiff(got, want.String()))
	}
	rec := hostileRecords()[1]
	_ = h.Handle(context.Background(), reviewRecord(time.Now(), &rec))
	if n := strings.Count(b.String(), "\n"); n != 2*len(hostileRecords())+1 {
		t.Fatalf("%d lines after a record sent after close", n)
	}
}

// A queued record shares no memory with the request it came from (whose
// strings are often substrings of the whole body): strings, string lists
// and groups (an admission record's denial) are copied, and counted.
func TestAuditQueueDetaches(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	rec := admission.Record{UID: body[:36], User: body[100:110], Groups: []string{body[200:210], body[300:310]},
		Name: body[:5000], Reason: body, Denial: &admission.Denial{Message: body, User: body[400:410]}}
	access := slog.NewRecord(time.Now(), slog.LevelInfo, AuditMessage, 0)
	access.AddAttrs(slog.String("user", body[:10]), slog.Any("groups", []string{body[100:110], body[200:210]}))
	for _, r := range []slog.Record{reviewRecord(time.Now(), &rec), access} {
		q := &auditQueue{ch: make(chan queuedRecord, 1)} // no writer: the record stays queued
		_ = q.send(context.Background(), nil, r)
		x := <-q.ch
		lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(body))), uintptr(unsafe.Pointer(unsafe.StringData(body)))+uintptr(len(body))
		n := 0
		var walk func(a slog.Attr)
		walk = func(a slog.Attr) {
			var ss []string
			switch a.Value.Kind() {
			case slog.KindString:
				ss = []string{a.Value.String()}
			case slog.KindGroup:
				for _, g := range a.Value.Group() {
					walk(g)
				}
			case slog.KindAny:
				ss, _ = a.Value.Any().([]string)
			}
			for _, s := range ss {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && p >= lo && p < hi {
					t.Errorf("the queued record's %s %.30q points into the request's body", a.Key, s)
				}
				n += len(s)
			}
		}
		x.r.Attrs(func(a slog.Attr) bool { walk(a); return true })
		if n == 0 || int64(n) != x.size || n > 8<<10 {
			t.Errorf("the queued record holds %d bytes of strings, counted %d", n, x.size)
		}
	}
}

func lineDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf("at byte %d of %d (want %d):\n got …%q\nwant …%q", i, len(got), len(want),
		got[from:min(len(got), i+60)], want[from:min(len(want), i+60)])
}

// Large records stop being queued once what the queued ones hold reaches
// maxQueuedBytes, however long the queue: they are dropped and counted,
// and the bytes are given back as records are written.
func TestAuditQueueBoundsBytes(t *testing.T) {
	big := strings.Repeat("n\x01", 150)
	text := strings.Repeat("r", 2000)
	rec := admission.Record{UID: big, Operation: big, Kind: big, Namespace: big, Name: big, User: big, Identity: big,
		Queue: big, Reason: text, Lookup: text, Denial: &admission.Denial{Message: text, Operation: big, Group: big,
			Kind: big, Namespace: big, Name: big, User: big, Identity: big, Queue: big, Check: big, Field: big}}
	var b bytes.Buffer
	q := &auditQueue{ch: make(chan queuedRecord, 100000)} // a stalled writer
	h := slog.NewJSONHandler(&b, nil)
	const sent = 4000
	for range sent {
		_ = q.send(context.Background(), h, reviewRecord(time.Now(), &rec))
	}
	queued := len(q.ch)
	if q.bytes.Load() > maxQueuedBytes || queued == sent || int(q.dropped.Load()) != sent-queued {
		t.Fatalf("%d records queued holding %d bytes, %d dropped", queued, q.bytes.Load(), q.dropped.Load())
	}
	close(q.ch)
	for x := range q.ch {
		q.write(x)
	}
	if q.bytes.Load() != 0 || strings.Count(b.String(), "\n") != queued {
		t.Fatalf("%d bytes still counted, %d lines written of %d", q.bytes.Load(), strings.Count(b.String(), "\n"), queued)
	}
}
