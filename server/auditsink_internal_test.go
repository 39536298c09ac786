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

// slogReviewLine is the line slog.NewJSONHandler writes for the server's
// record of rec, made at t (how the audit log was written before
// auditWriter).
func slogReviewLine(t *testing.T, at time.Time, rec *admission.Record) string {
	t.Helper()
	var b bytes.Buffer
	logReview(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo}), at, rec)
	return b.String()
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

// The audit writer's line for an admission review is byte for byte the
// line slog's JSON handler writes for the same record at the same time.
func TestReviewLineMatchesSlog(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("x", -(3*3600 + 30*60)), time.Local}
	times := []time.Time{time.Now(), time.Date(2026, 11, 23, 18, 28, 38, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}}
	for _, rec := range hostileRecords() {
		for _, z := range zones {
			for _, at := range times {
				at = at.In(z)
				want := slogReviewLine(t, at, &rec)
				var b bytes.Buffer
				newAuditWriter(&b).writeReview(at, &rec)
				if got := b.String(); got != want {
					t.Fatalf("line differs from slog's at %v: %s", at, lineDiff(got, want))
				}
			}
		}
	}
}

// Through the queue, admission records and other audit records reach the
// audit sink in order, each line as slog's JSON handler writes it, and
// what is queued is written on close: with an audit writer (the record
// queued as its line) and without (the record queued, for the logger's
// handler).
func TestAuditQueueWritesReviewsAsSlog(t *testing.T) {
	for _, withWriter := range []bool{true, false} {
		var b bytes.Buffer
		var q *auditQueue
		var log *slog.Logger
		var h slog.Handler
		if withWriter {
			w := newAuditWriter(&b)
			q = newAuditQueue(64, w)
			log = slog.New(q.handler(SplitAudit(slog.NewJSONHandler(&bytes.Buffer{}, nil), w.h)))
		} else {
			h = slog.NewJSONHandler(&b, nil)
			q = newAuditQueue(64, nil)
			log = slog.New(q.handler(h))
		}
		var want strings.Builder
		for i, rec := range hostileRecords() {
			at := time.Now()
			q.sendReview(h, at, &rec)
			want.WriteString(slogReviewLine(t, at, &rec))
			log.Info(AuditMessage, "kind", "access", "n", i)
		}
		q.close()
		if n := q.bytes.Load(); n != 0 {
			t.Fatalf("writer %v: %d bytes still counted as queued after close", withWriter, n)
		}
		lines := strings.SplitAfter(b.String(), "\n")
		wants := strings.SplitAfter(want.String(), "\n")
		if len(lines) != 2*len(wants)-1 {
			t.Fatalf("writer %v: %d lines written, want %d:\n%s", withWriter, len(lines)-1, 2*(len(wants)-1), b.String())
		}
		for i := range len(wants) - 1 {
			if got := lines[2*i]; got != wants[i] {
				t.Fatalf("writer %v: admission record %d: %s", withWriter, i, lineDiff(got, wants[i]))
			}
			if got := lines[2*i+1]; !strings.Contains(got, fmt.Sprintf(`"msg":"audit","kind":"access","n":%d}`, i)) {
				t.Fatalf("writer %v: access record %d: %s", withWriter, i, got)
			}
		}
		// After close, a record is written at once.
		rec := hostileRecords()[1]
		q.sendReview(h, time.Now(), &rec)
		if n := strings.Count(b.String(), "\n"); n != 2*len(hostileRecords())+1 {
			t.Fatalf("writer %v: %d lines after a record sent after close", withWriter, n)
		}
	}
}

// A queued admission record shares no memory with the review it came
// from (whose strings are substrings of the whole body) and holds its
// strings cut to their bounds.
func TestAuditQueueDetachesReviews(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	rec := admission.Record{UID: body[:36], User: body[100:110], Groups: []string{body[200:210], body[300:310]},
		Name: body[:5000], Reason: body, Denial: &admission.Denial{Message: body, User: body[400:410]}}
	q := &auditQueue{ch: make(chan queuedRecord, 1)} // no writer: the record stays queued
	q.sendReview(nil, time.Now(), &rec)
	x := <-q.ch
	c := x.adm.rec
	lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(body))), uintptr(unsafe.Pointer(unsafe.StringData(body)))+uintptr(len(body))
	n := 0
	for _, s := range append([]string{c.UID, c.User, c.Name, c.Reason, c.Denial.Message, c.Denial.User}, c.Groups...) {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if s != "" && p >= lo && p < hi {
			t.Fatalf("the queued record's %.40q points into the review's body", s)
		}
		n += len(s)
	}
	if n > 4<<10 {
		t.Fatalf("the queued record holds %d bytes of strings", n)
	}
	if c.Denial == rec.Denial {
		t.Fatal("the queued record shares the review's Denial")
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

// Large admission records stop being queued once what the queued ones
// hold reaches maxQueuedReviewBytes, however long the queue: they are
// dropped and counted, and the bytes are given back as records are
// written. With an audit writer (lines queued) and without (records).
func TestAuditQueueBoundsBytes(t *testing.T) {
	big := strings.Repeat("n\x01", 150)
	text := strings.Repeat("r", 2000)
	rec := admission.Record{UID: big, Operation: big, Kind: big, Namespace: big, Name: big, User: big, Identity: big,
		Queue: big, Reason: text, Lookup: text, Denial: &admission.Denial{Message: text, Operation: big, Group: big,
			Kind: big, Namespace: big, Name: big, User: big, Identity: big, Queue: big, Check: big, Field: big}}
	for _, withWriter := range []bool{true, false} {
		var b bytes.Buffer
		q := &auditQueue{ch: make(chan queuedRecord, 100000)} // a stalled writer
		h := slog.NewJSONHandler(&b, nil)
		if withWriter {
			q.w = newAuditWriter(&b)
		}
		const sent = 4000
		for range sent {
			q.sendReview(h, time.Now(), &rec)
		}
		queued := len(q.ch)
		if q.bytes.Load() > maxQueuedReviewBytes || queued == sent || int(q.dropped.Load()) != sent-queued {
			t.Fatalf("writer %v: %d records queued holding %d bytes, %d dropped", withWriter, queued, q.bytes.Load(), q.dropped.Load())
		}
		close(q.ch)
		for x := range q.ch {
			if withWriter != (x.line != nil) {
				t.Fatalf("writer %v: queued as a line: %v", withWriter, x.line != nil)
			}
			q.write(x)
		}
		if q.bytes.Load() != 0 || strings.Count(b.String(), "\n") != queued {
			t.Fatalf("writer %v: %d bytes still counted, %d lines written of %d", withWriter, q.bytes.Load(), strings.Count(b.String(), "\n"), queued)
		}
	}
}

// The records of /v1/access are queued too (Options.AuditQueue) and hold
// what the caller sent: their strings must not point into the request's
// body, or a queue of them keeps every body alive until written.
func TestAccessAuditDetaches(t *testing.T) {
	body := strings.Repeat("y", 1<<20)
	var rec slog.Record
	s := &Server{log: slog.New(recordHandler{&rec})}
	s.audit("access", "user", body[:10], "reason", body[10:5000], "groups", []string{body[100:110], body[200:210]})
	lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(body))), uintptr(unsafe.Pointer(unsafe.StringData(body)))+uintptr(len(body))
	n := 0
	rec.Attrs(func(a slog.Attr) bool {
		var ss []string
		switch v := a.Value.Any().(type) {
		case string:
			ss = []string{v}
		case []string:
			ss = v
		}
		for _, s := range ss {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && p >= lo && p < hi {
				t.Errorf("attribute %s %.30q points into the request's body", a.Key, s)
			}
		}
		n++
		return true
	})
	if n == 0 {
		t.Fatal("no record")
	}
}

// recordHandler keeps the last record it is given.
type recordHandler struct{ last *slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	*h.last = r.Clone()
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }
