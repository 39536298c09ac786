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
	dst = r.appendStr(dst, `,"uid":`, r.UID, clip.Name)
	dst = r.appendStr(dst, `,"operation":`, r.Operation, clip.Name)
	dst = r.appendStr(dst, `,"object":`, r.Kind, clip.Name)
	dst = r.appendStr(dst, `,"namespace":`, r.Namespace, clip.Name)
	dst = r.appendStr(dst, `,"name":`, r.Name, clip.Name)
	dst = r.appendStr(dst, `,"user":`, r.User, clip.Name)
	dst = append(dst, `,"groups":`...)
	gs := r.Groups
	if !r.clipped {
		gs = clip.Strings(gs, clip.Name, clip.Count)
	}
	if gs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, g := range gs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonscan.AppendStringNoHTML(dst, g)
		}
		dst = append(dst, ']')
	}
	dst = r.appendStr(dst, `,"identity":`, r.Identity, clip.Name)
	dst = r.appendStr(dst, `,"queue":`, r.Queue, clip.Name)
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

// Clip returns a copy of r to keep after the review is answered: every
// string cut as the rendering cuts it (AppendAttrs, AppendJSON), and all
// of them copied into one allocation of their own, so that the copy shares
// no memory with the request (whose strings are often substrings of the
// whole AdmissionReview body) and holds a bounded number of bytes. Both
// renderings of the copy equal those of r.
func (r *Record) Clip() Record {
	c := *r
	c.clipped = true
	var d *Denial
	if r.Denial != nil {
		dd := *r.Denial
		d = &dd
		c.Denial = d
	}
	type field struct {
		p   *string
		max int // 0: not cut (set by usher, never by the requester)
	}
	var arr [22]field
	fs := append(arr[:0],
		field{&c.Webhook, 0}, field{&c.UID, clip.Name}, field{&c.Operation, clip.Name}, field{&c.Kind, clip.Name},
		field{&c.Namespace, clip.Name}, field{&c.Name, clip.Name}, field{&c.User, clip.Name},
		field{&c.Identity, clip.Name}, field{&c.Queue, clip.Name}, field{&c.Reason, clip.Text}, field{&c.Lookup, clip.Text})
	if d != nil {
		fs = append(fs, field{(*string)(&d.Reason), 0}, field{&d.Message, clip.Text}, field{&d.Operation, clip.Name},
			field{&d.Group, clip.Name}, field{&d.Kind, clip.Name}, field{&d.Namespace, clip.Name},
			field{&d.Name, clip.Name}, field{&d.User, clip.Name}, field{&d.Identity, clip.Name},
			field{&d.Queue, clip.Name}, field{&d.Check, clip.Name}, field{&d.Field, clip.Name})
	}
	ps := make([]*string, 0, len(arr))
	for _, f := range fs {
		if !r.clipped && f.max > 0 {
			*f.p = clip.String(*f.p, f.max)
		}
		ps = append(ps, f.p)
	}
	gs := r.Groups
	if !r.clipped {
		gs = clip.Strings(gs, clip.Name, clip.Count)
	}
	if gs = clip.Detach(gs, ps...); gs != nil {
		c.Groups = gs
	}
	return c
}
