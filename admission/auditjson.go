package admission

import (
	"strconv"

	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/internal/jsonscan"
)

// This file holds the audit record's JSON rendering (Record.AppendJSON),
// byte for byte what log/slog's JSON handler writes for the attributes of
// Record.AppendAttrs but without building them, and Record.Clip, the copy
// of a record a queue keeps.

// AppendJSON appends to dst the attributes of r.AppendAttrs as the members
// of a JSON object, separated by commas, without the braces, exactly as
// slog.NewJSONHandler writes them: strings escaped as slog escapes them,
// the groups as encoding/json (without HTML escaping) writes a []string,
// the denial as a nested object. It neither reflects nor allocates unless
// a string has to be cut.
func (r *Record) AppendJSON(dst []byte) []byte {
	dst = append(dst, `"webhook":`...)
	dst = jsonscan.AppendStringSlog(dst, r.Webhook)
	dst = r.appendOpt(dst, `,"caller":`, r.Caller, clip.Name)
	dst = r.appendStr(dst, `,"uid":`, r.UID, clip.Name)
	dst = r.appendStr(dst, `,"operation":`, r.Operation, clip.Name)
	dst = r.appendStr(dst, `,"object":`, r.Kind, clip.Name)
	dst = r.appendStr(dst, `,"namespace":`, r.Namespace, clip.Name)
	dst = r.appendStr(dst, `,"name":`, r.Name, clip.Name)
	dst = r.appendStr(dst, `,"user":`, r.User, clip.Name)
	dst = r.appendList(dst, `,"groups":`, r.Groups)
	dst = r.appendStr(dst, `,"identity":`, r.Identity, clip.Name)
	dst = r.appendStr(dst, `,"queue":`, r.Queue, clip.Name)
	dst = r.appendOpt(dst, `,"queueAsked":`, r.QueueAsked, clip.Name)
	dst = appendBool(dst, `,"allowed":`, r.Allowed)
	dst = appendBool(dst, `,"patched":`, r.Patched)
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(r.Code), 10)
	dst = r.appendStr(dst, `,"reason":`, r.Reason, clip.Text)
	dst = append(dst, `,"rule":`...)
	dst = jsonscan.AppendStringSlog(dst, r.Rule.String())
	dst = appendBool(dst, `,"dryRun":`, r.DryRun)
	dst = appendBool(dst, `,"warned":`, r.Warned)
	dst = r.appendStr(dst, `,"lookup":`, r.Lookup, clip.Text)
	if r.Decided != nil {
		dst = r.appendList(dst, `,"decided":`, r.Decided)
		dst = r.appendList(dst, `,"sources":`, r.Sources)
	}
	if r.Degraded {
		dst = append(dst, `,"degraded":true`...)
	}
	if d := r.Denial; d != nil {
		dst = append(dst, `,"denial":{"reason":`...)
		dst = jsonscan.AppendStringSlog(dst, string(d.Reason))
		dst = r.appendOpt(dst, `,"message":`, d.Message, clip.Text)
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(d.Code), 10)
		if d.Warned {
			dst = append(dst, `,"warned":true`...)
		}
		dst = r.appendOpt(dst, `,"operation":`, d.Operation, clip.Name)
		dst = r.appendOpt(dst, `,"group":`, d.Group, clip.Name)
		dst = r.appendOpt(dst, `,"kind":`, d.Kind, clip.Name)
		dst = r.appendOpt(dst, `,"namespace":`, d.Namespace, clip.Name)
		dst = r.appendOpt(dst, `,"name":`, d.Name, clip.Name)
		dst = r.appendStr(dst, `,"user":`, d.User, clip.Name)
		dst = r.appendOpt(dst, `,"identity":`, d.Identity, clip.Name)
		dst = r.appendOpt(dst, `,"queue":`, d.Queue, clip.Name)
		dst = r.appendOpt(dst, `,"check":`, d.Check, clip.Name)
		dst = r.appendOpt(dst, `,"field":`, d.Field, clip.Name)
		if d.DryRun {
			dst = append(dst, `,"dryRun":true`...)
		}
		dst = append(dst, '}')
	}
	return dst
}

// appendList appends key and ss as encoding/json (without HTML escaping)
// writes a []string, cut as AppendAttrs cuts it.
func (r *Record) appendList(dst []byte, key string, ss []string) []byte {
	dst = append(dst, key...)
	gs := r.list(ss)
	if gs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, g := range gs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonscan.AppendStringNoHTML(dst, g)
	}
	return append(dst, ']')
}

// cut is clip.String unless r's strings are cut already (Clip).
func (r *Record) cut(s string, max int) string {
	if r.clipped {
		return s
	}
	return clip.String(s, max)
}

func (r *Record) appendStr(dst []byte, key, s string, max int) []byte {
	dst = append(dst, key...)
	return jsonscan.AppendStringSlog(dst, r.cut(s, max))
}

// appendOpt is appendStr for a member left out when empty.
func (r *Record) appendOpt(dst []byte, key, s string, max int) []byte {
	if s == "" {
		return dst
	}
	return r.appendStr(dst, key, s, max)
}

func appendBool(dst []byte, key string, b bool) []byte {
	dst = append(dst, key...)
	return strconv.AppendBool(dst, b)
}

// stringField is one string of a Record and the length renderings cut
// it to (0: never cut, set by usher, not by the requester).
type stringField struct {
	p   *string
	max int
}

// maxStringFields is how many strings a Record holds, its Denial's too.
const maxStringFields = 25

// stringFields appends to dst every string field of r and of its Denial,
// the groups aside.
func (r *Record) stringFields(dst []stringField) []stringField {
	dst = append(dst,
		stringField{&r.Webhook, 0}, stringField{&r.Caller, 0}, stringField{&r.UID, clip.Name}, stringField{&r.Operation, clip.Name},
		stringField{&r.Kind, clip.Name}, stringField{&r.Namespace, clip.Name}, stringField{&r.Name, clip.Name},
		stringField{&r.User, clip.Name}, stringField{&r.Identity, clip.Name}, stringField{&r.Queue, clip.Name},
		stringField{&r.QueueAsked, clip.Name}, stringField{&r.Reason, clip.Text}, stringField{&r.Lookup, clip.Text})
	if d := r.Denial; d != nil {
		dst = append(dst, stringField{(*string)(&d.Reason), 0}, stringField{&d.Message, clip.Text},
			stringField{&d.Operation, clip.Name}, stringField{&d.Group, clip.Name}, stringField{&d.Kind, clip.Name},
			stringField{&d.Namespace, clip.Name}, stringField{&d.Name, clip.Name}, stringField{&d.User, clip.Name},
			stringField{&d.Identity, clip.Name}, stringField{&d.Queue, clip.Name}, stringField{&d.Check, clip.Name},
			stringField{&d.Field, clip.Name})
	}
	return dst
}

// Size returns the number of bytes of r's strings, its groups and its
// Denial's included: what a queue keeping r (after Clip) holds.
func (r *Record) Size() int {
	var arr [maxStringFields]stringField
	n := 0
	for _, f := range r.stringFields(arr[:0]) {
		n += len(*f.p)
	}
	for _, gs := range [...][]string{r.Groups, r.Decided, r.Sources} {
		for _, g := range gs {
			n += len(g)
		}
	}
	return n
}

// Clip returns a copy of r to keep after the review is answered: every
// string cut as the rendering cuts it (AppendAttrs, AppendJSON), and all
// of them copied into one allocation of their own, so that the copy shares
// no memory with the request (whose strings are often substrings of the
// whole AdmissionReview body) and holds a bounded number of bytes. Both
// renderings of the copy equal those of r.
func (r *Record) Clip() Record {
	c := *r
	c.clipped = true
	if r.Denial != nil {
		d := *r.Denial
		c.Denial = &d
	}
	var arr [maxStringFields]stringField
	ps := make([]*string, 0, maxStringFields)
	for _, f := range c.stringFields(arr[:0]) {
		if !r.clipped && f.max > 0 {
			*f.p = clip.String(*f.p, f.max)
		}
		ps = append(ps, f.p)
	}
	if gs := clip.Detach(r.list(r.Groups), ps...); gs != nil {
		c.Groups = gs
	}
	if r.Decided != nil {
		c.Decided, c.Sources = clip.Detach(r.list(r.Decided)), clip.Detach(r.list(r.Sources))
	}
	return c
}
