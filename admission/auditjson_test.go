package admission

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// slogLine is the line slog.NewJSONHandler writes for r at level INFO
// with message "m" and no time.
func slogLine(t testing.TB, r *Record) string {
	t.Helper()
	var b bytes.Buffer
	rec := slog.NewRecord(timeZero, slog.LevelInfo, "m", 0)
	rec.AddAttrs(r.AppendAttrs(nil)...)
	if err := slog.NewJSONHandler(&b, nil).Handle(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// jsonLine is the same line written with AppendJSON.
func jsonLine(r *Record) string {
	b := append([]byte(`{"level":"INFO","msg":"m",`), nil...)
	b = r.AppendJSON(b)
	return string(append(b, "}\n"...))
}

// checkJSON fails on any byte of difference between AppendJSON and slog's
// JSON handler, for r and for r.Clip(), and when the copy shares memory
// with r.
func checkJSON(t *testing.T, r *Record) {
	t.Helper()
	want := slogLine(t, r)
	if got := jsonLine(r); got != want {
		t.Fatalf("AppendJSON differs from slog's JSON handler: %s", diff(got, want))
	}
	c := r.Clip()
	if got := jsonLine(&c); got != want {
		t.Fatalf("AppendJSON of the clipped copy differs: %s", diff(got, want))
	}
	if got := slogLine(t, &c); got != want {
		t.Fatalf("AppendAttrs of the clipped copy differs: %s", diff(got, want))
	}
	checkDetached(t, r, &c)
}

// diff shows where got and want first differ, with some context.
func diff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf("at byte %d of %d (want %d):\n got …%q\nwant …%q", i, len(got), len(want),
		got[from:min(len(got), i+60)], want[from:min(len(want), i+60)])
}

var timeZero = slog.Record{}.Time

// checkDetached fails when a string of c points into memory a string of r
// points into.
func checkDetached(t *testing.T, r, c *Record) {
	t.Helper()
	var orig []string
	add := func(rec *Record, out *[]string) {
		*out = append(*out, rec.Webhook, rec.UID, rec.Operation, rec.Kind, rec.Namespace, rec.Name, rec.User,
			rec.Identity, rec.Queue, rec.Reason, rec.Lookup)
		*out = append(*out, rec.Groups...)
		*out = append(*out, rec.Decided...)
		*out = append(*out, rec.Sources...)
		if d := rec.Denial; d != nil {
			*out = append(*out, string(d.Reason), d.Message, d.Operation, d.Group, d.Kind, d.Namespace, d.Name,
				d.User, d.Identity, d.Queue, d.Check, d.Field)
		}
	}
	add(r, &orig)
	var cp []string
	add(c, &cp)
	for _, s := range cp {
		if s == "" {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		for _, o := range orig {
			if o == "" {
				continue
			}
			q := uintptr(unsafe.Pointer(unsafe.StringData(o)))
			if p < q+uintptr(len(o)) && q < p+uintptr(len(s)) {
				t.Fatalf("the clipped copy's %q shares memory with the record's %q", s, o)
			}
		}
	}
	if r.Denial != nil && c.Denial == r.Denial {
		t.Fatal("the clipped copy shares the record's Denial")
	}
}

// hostile is every byte below 0x80, the HTML characters, the JavaScript
// line separators, invalid UTF-8 (alone, truncated runes, surrogates) and
// a valid multi-byte rune.
func hostile() string {
	var b strings.Builder
	for c := 0; c < 0x80; c++ {
		b.WriteByte(byte(c))
	}
	b.WriteString("<script>&amp;</script>\u2028\u2029\u2027\u202a\xff\xfe\xc3\xe2\x80\xed\xa0\x80\xf4\x90\x80\x80é😀\"\\\x7f")
	return b.String()
}

func fullRecord(s string) Record {
	return Record{Webhook: "mutate", Caller: CallerUnverified, UID: s, Operation: s, Kind: s, Namespace: s, Name: s, User: s,
		Groups: []string{s, "", s + s}, Identity: s, Queue: s, Allowed: false, Patched: true, Code: -403,
		Reason: s, Rule: RuleDenied, Trust: TrustController, DryRun: true, Warned: true, Lookup: s,
		Decided: []string{s, "ml"}, Sources: []string{"given", s}, Degraded: true,
		Denial: &Denial{Reason: Cause(s), Message: s, Code: 200, Warned: true, Operation: s, Group: s, Kind: s,
			Namespace: s, Name: s, User: s, Identity: s, Queue: s, Check: s, Field: s, DryRun: true}}
}

func TestAppendJSONMatchesSlog(t *testing.T) {
	h := hostile()
	long := strings.Repeat("é", 700) + h // cut inside runes and escapes
	many := make([]string, 70)
	for i := range many {
		many[i] = h[i:]
	}
	cases := map[string]Record{
		"zero":          {},
		"empty groups":  {Groups: []string{}},
		"allowed":       {Webhook: "validate", Caller: CallerVerified, UID: "u-1", Operation: "CREATE", Kind: "Pod", Namespace: "team-a", Name: "p-*", User: "alice", Groups: []string{"dev", "system:authenticated"}, Identity: "alice", Queue: "root.dev", Allowed: true, Code: 200, Reason: "ok", Rule: RuleStamped},
		"hostile":       fullRecord(h),
		"long":          fullRecord(long),
		"huge":          fullRecord(strings.Repeat("<\u2028\x01\"", 1<<16)),
		"many groups":   {User: "x", Groups: many, Decided: many, Sources: many},
		"decided none":  {Decided: []string{}, Sources: []string{}},
		"sparse denial": {Code: 400, Denial: &Denial{Reason: CauseInvalidRequest}},
		"unknown rule":  {Rule: Rule(250)},
		"invalid cut":   fullRecord(strings.Repeat("a", 255) + "\xff\xff" + strings.Repeat("\xe2\x80", 600)),
	}
	for c := 0; c < 256; c++ {
		cases["byte "+string(rune('A'+c%26))+strings.Repeat("x", c/26)] = fullRecord(string([]byte{'a', byte(c), 'b'}))
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) { checkJSON(t, &r) })
	}
}

// A record cut by Clip is not cut again: its renderings equal the
// original's (checkJSON), and a second Clip changes nothing.
func TestClipTwice(t *testing.T) {
	r := fullRecord(strings.Repeat("q", 5000))
	c := r.Clip()
	cc := c.Clip()
	if a, b := jsonLine(&c), jsonLine(&cc); a != b {
		t.Fatalf("Clip of a clipped record changed it:\n%q\n%q", a, b)
	}
	if len(c.Reason) > 1100 || len(c.Name) > 300 {
		t.Fatalf("Clip kept %d bytes of reason and %d of name", len(c.Reason), len(c.Name))
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("alice", "root.dev", "<>&\u2028\u2029", "\xff\xc3", true, int32(403))
	f.Add(hostile(), strings.Repeat("é", 300), "\b\f\x00\x1f\x7f", "", false, int32(-1))
	f.Add(strings.Repeat("\"\\", 700), "a\xe2\x80", "😀", "\u2028", true, int32(200))
	f.Fuzz(func(t *testing.T, a, b, c, d string, flag bool, code int32) {
		r := Record{Webhook: d, UID: a, Operation: b, Kind: c, Namespace: d, Name: a + b, User: b,
			Groups: []string{a, b, c, d}, Identity: c, Queue: a, Allowed: flag, Patched: !flag, Code: code,
			Reason: a + c + d, Rule: Rule(len(a)), DryRun: flag, Warned: !flag, Lookup: d + a}
		if len(b)%3 == 0 {
			r.Groups = nil
		} else {
			r.Decided, r.Sources, r.Degraded = []string{c, d}, []string{a, "file"}, flag
		}
		if flag {
			r.Denial = &Denial{Reason: Cause(d), Message: b + a, Code: code, Warned: !flag, Operation: c,
				Group: d, Kind: a, Namespace: b, Name: c + c, User: a, Identity: d, Queue: b, Check: c, Field: a, DryRun: flag}
		}
		checkJSON(t, &r)
	})
}

// BenchmarkAppendJSON encodes one record of the load generator's kind
// (usher-load) into a reused buffer: no allocation.
func BenchmarkAppendJSON(b *testing.B) {
	r := Record{Webhook: "mutate", UID: "2d0c3f4e-3a8c-4f0e-9c6d-7b1f2a9e5d10", Operation: "CREATE", Kind: "Pod",
		Namespace: "team-a", Name: "spark-exec-*", User: "alice", Groups: []string{"dev", "spark-users", "system:authenticated"},
		Identity: "alice", Queue: "root.dev", Allowed: true, Patched: true, Code: 200, Reason: "stamped the submitter's identity",
		Rule: RuleStamped}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendJSON(buf[:0])
	}
	if n := testing.AllocsPerRun(100, func() { buf = r.AppendJSON(buf[:0]) }); n != 0 {
		b.Fatalf("AppendJSON allocates %v times per record", n)
	}
}

// BenchmarkAuditSlog is the same record through slog's JSON handler, as
// the audit log wrote it before AppendJSON.
func BenchmarkAuditSlog(b *testing.B) {
	r := Record{Webhook: "mutate", UID: "2d0c3f4e-3a8c-4f0e-9c6d-7b1f2a9e5d10", Operation: "CREATE", Kind: "Pod",
		Namespace: "team-a", Name: "spark-exec-*", User: "alice", Groups: []string{"dev", "spark-users", "system:authenticated"},
		Identity: "alice", Queue: "root.dev", Allowed: true, Patched: true, Code: 200, Reason: "stamped the submitter's identity",
		Rule: RuleStamped}
	h := slog.NewJSONHandler(discard{}, nil)
	b.ReportAllocs()
	for b.Loop() {
		var as [NumAuditAttrs]slog.Attr
		rec := slog.NewRecord(timeZero, slog.LevelInfo, "audit", 0)
		rec.AddAttrs(r.AppendAttrs(as[:0])...)
		_ = h.Handle(context.Background(), rec)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkClip is the copy of the same record a queue keeps.
func BenchmarkClip(b *testing.B) {
	r := Record{Webhook: "mutate", UID: "2d0c3f4e-3a8c-4f0e-9c6d-7b1f2a9e5d10", Operation: "CREATE", Kind: "Pod",
		Namespace: "team-a", Name: "spark-exec-*", User: "alice", Groups: []string{"dev", "spark-users", "system:authenticated"},
		Identity: "alice", Queue: "root.dev", Allowed: true, Patched: true, Code: 200, Reason: "stamped the submitter's identity",
		Rule: RuleStamped}
	var sink Record
	b.ReportAllocs()
	for b.Loop() {
		sink = r.Clip()
	}
	_ = sink
}

// TestRecordSizeCountsEveryString sets every string field of a Record and
// of its Denial (found by reflection, so a field added later is found
// too) to one byte: Size must count each, and Clip must copy each, or a
// queue would hold strings it does not count and keep a review's body
// alive through a field it does not copy.
func TestRecordSizeCountsEveryString(t *testing.T) {
	r := Record{Groups: []string{"g", "h"}, Denial: &Denial{}}
	want := len(r.Groups)
	body := strings.Repeat("x", 64)
	for _, v := range []reflect.Value{reflect.ValueOf(&r).Elem(), reflect.ValueOf(r.Denial).Elem()} {
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.String && f.CanSet() {
				f.SetString(body[i : i+1])
				want++
			}
		}
	}
	if got := r.Size(); got != want {
		t.Fatalf("Size = %d, want %d (one byte in each string field)", got, want)
	}
	c := r.Clip()
	lo := uintptr(unsafe.Pointer(unsafe.StringData(body)))
	for _, v := range []reflect.Value{reflect.ValueOf(&c).Elem(), reflect.ValueOf(c.Denial).Elem()} {
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.String && f.CanSet() {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(f.String()))); p >= lo && p < lo+64 {
					t.Errorf("Clip kept field %s in the original memory", v.Type().Field(i).Name)
				}
			}
		}
	}
}
