package admission

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reviewAPIVersion and reviewKind identify the only AdmissionReview version
// usher serves. The API server sends it when the webhook configuration lists
// admissionReviewVersions: ["v1"].
const (
	reviewAPIVersion = "admission.k8s.io/v1"
	reviewKind       = "AdmissionReview"
)

// decodedReview is an AdmissionReview decoded by decodeReview. The request
// fields live in req (k8s.io/api types); obj and old are the JSON texts of
// request.object and request.oldObject ("" when absent or null), which are
// also set as req.Object.Raw and req.OldObject.Raw, sharing memory with the
// body.
type decodedReview struct {
	apiVersion, kind string
	hasRequest       bool
	req              admissionv1.AdmissionRequest
	reqKind          metav1.GroupVersionKind
	reqResource      metav1.GroupVersionResource
	dryRun           bool
	obj, old         string

	// views holds the objects parsed during the same pass, when decodeReview
	// was given a configuration and request.kind came before them (the API
	// server's order). An object that does not parse is left for the
	// handler, which parses it again to report the error.
	views views
}

// views are the request objects, parsed ahead by decodeReview.
type views struct {
	obj, old         objectView
	objDone, oldDone bool
}

// decodeReview decodes an admission.k8s.io/v1 AdmissionReview. s is the
// body as a string and body the same bytes: strings in the result are
// substrings of s, raw objects are sub-slices of body. A duplicate member in
// any object the webhook interprets is an error (encoding/json would keep
// the last one; usher refuses to guess).
func decodeReview(s string, body []byte, r *decodedReview, c *Compiled) error {
	d := scanner{s: s}
	if d.null() {
		return errors.New("the body is null, want an AdmissionReview object")
	}
	if !d.object("AdmissionReview") {
		return d.err
	}
	var seen uint8
	first := true
	for {
		key, ok := d.next(&first)
		if !ok {
			break
		}
		switch key {
		case "apiVersion":
			d.dup(&seen, 1, key)
			r.apiVersion = d.stringField("apiVersion")
		case "kind":
			d.dup(&seen, 2, key)
			r.kind = d.stringField("kind")
		case "request":
			d.dup(&seen, 4, key)
			if !d.null() {
				r.hasRequest = true
				decodeRequest(&d, body, r, c)
			}
		default:
			d.skip()
		}
	}
	d.end()
	return d.err
}

// dup records key as seen in the bit set and fails on a second occurrence.
func (d *scanner) dup(seen *uint8, bit uint8, key string) {
	if *seen&bit != 0 {
		d.fail("duplicate member " + strconv.Quote(key))
	}
	*seen |= bit
}

func (d *scanner) dup32(seen *uint32, bit uint32, key string) {
	if *seen&bit != 0 {
		d.fail("duplicate member " + strconv.Quote(key))
	}
	*seen |= bit
}

func decodeRequest(d *scanner, body []byte, r *decodedReview, c *Compiled) {
	req := &r.req
	if !d.object("request") {
		return
	}
	var seen uint32
	first := true
	for {
		key, ok := d.next(&first)
		if !ok {
			return
		}
		switch key {
		case "uid":
			d.dup32(&seen, 1<<0, key)
			req.UID = types.UID(d.stringField("request.uid"))
		case "kind":
			d.dup32(&seen, 1<<1, key)
			decodeGVK(d, "request.kind", &req.Kind)
		case "resource":
			d.dup32(&seen, 1<<2, key)
			decodeGVR(d, "request.resource", &req.Resource)
		case "subResource":
			d.dup32(&seen, 1<<3, key)
			req.SubResource = d.stringField("request.subResource")
		case "requestKind":
			d.dup32(&seen, 1<<4, key)
			if !d.null() {
				req.RequestKind = &r.reqKind
				decodeGVK(d, "request.requestKind", req.RequestKind)
			}
		case "requestResource":
			d.dup32(&seen, 1<<5, key)
			if !d.null() {
				req.RequestResource = &r.reqResource
				decodeGVR(d, "request.requestResource", req.RequestResource)
			}
		case "requestSubResource":
			d.dup32(&seen, 1<<6, key)
			req.RequestSubResource = d.stringField("request.requestSubResource")
		case "name":
			d.dup32(&seen, 1<<7, key)
			req.Name = d.stringField("request.name")
		case "namespace":
			d.dup32(&seen, 1<<8, key)
			req.Namespace = d.stringField("request.namespace")
		case "operation":
			d.dup32(&seen, 1<<9, key)
			req.Operation = admissionv1.Operation(d.stringField("request.operation"))
		case "userInfo":
			d.dup32(&seen, 1<<10, key)
			decodeUserInfo(d, &req.UserInfo)
		case "object":
			d.dup32(&seen, 1<<11, key)
			a, b := d.objectAhead(c, seen&(1<<1) != 0, req, &r.views.obj, &r.views.objDone)
			if raw := d.s[a:b]; raw != "null" && d.err == nil {
				r.obj = raw
				req.Object.Raw = body[a:b:b]
			}
		case "oldObject":
			d.dup32(&seen, 1<<12, key)
			a, b := d.objectAhead(c, seen&(1<<1) != 0, req, &r.views.old, &r.views.oldDone)
			if raw := d.s[a:b]; raw != "null" && d.err == nil {
				r.old = raw
				req.OldObject.Raw = body[a:b:b]
			}
		case "dryRun":
			d.dup32(&seen, 1<<13, key)
			if v, set := d.boolField("request.dryRun"); set {
				r.dryRun = v
				req.DryRun = &r.dryRun
			}
		case "options":
			d.dup32(&seen, 1<<14, key)
			a, b := d.rawValue()
			if raw := d.s[a:b]; raw != "null" && d.err == nil {
				req.Options.Raw = body[a:b:b]
			}
		default:
			d.skip()
		}
	}
}

// objectAhead skips the object value at the scanner's position and returns
// its offsets. When c is set, request.kind is known and names a handled
// kind, it parses the object into o on the way (done = true); if that
// fails it rewinds and only skips, leaving the error to the handler.
func (d *scanner) objectAhead(c *Compiled, kindSeen bool, req *admissionv1.AdmissionRequest, o *objectView, done *bool) (start, end int) {
	d.ws()
	start = d.i
	if c != nil && kindSeen && d.err == nil && d.peek() == '{' {
		if k := lookupKind(req.Kind.Group, req.Kind.Kind); k != nil {
			saved := *d
			d.objectValue(k, c.labelKeys, c.annotationKeys, o)
			if d.err == nil {
				*done = true
				return start, d.i
			}
			*d = saved
			*o = objectView{}
		}
	}
	d.skip()
	return start, d.i
}

func decodeGVK(d *scanner, field string, gvk *metav1.GroupVersionKind) {
	decodeGroupVersion(d, field, "kind", ".kind", &gvk.Group, &gvk.Version, &gvk.Kind)
}

func decodeGVR(d *scanner, field string, gvr *metav1.GroupVersionResource) {
	decodeGroupVersion(d, field, "resource", ".resource", &gvr.Group, &gvr.Version, &gvr.Resource)
}

// decodeGroupVersion decodes {"group","version",<last>} into the three
// strings; lastSuffix is "."+last, spelt out so that no string is built.
func decodeGroupVersion(d *scanner, field, last, lastSuffix string, group, version, lastVal *string) {
	if d.null() || !d.object(field) {
		return
	}
	var seen uint8
	first := true
	for {
		key, ok := d.next(&first)
		if !ok {
			return
		}
		switch key {
		case "group":
			d.dup(&seen, 1, key)
			*group = d.stringAt(field, ".group")
		case "version":
			d.dup(&seen, 2, key)
			*version = d.stringAt(field, ".version")
		case last:
			d.dup(&seen, 4, key)
			*lastVal = d.stringAt(field, lastSuffix)
		default:
			d.skip()
		}
	}
}

func decodeUserInfo(d *scanner, u *authenticationv1.UserInfo) {
	if d.null() || !d.object("request.userInfo") {
		return
	}
	var seen uint8
	first := true
	for {
		key, ok := d.next(&first)
		if !ok {
			return
		}
		switch key {
		case "username":
			d.dup(&seen, 1, key)
			u.Username = d.stringField("request.userInfo.username")
		case "uid":
			d.dup(&seen, 2, key)
			u.UID = d.stringField("request.userInfo.uid")
		case "groups":
			d.dup(&seen, 4, key)
			u.Groups = d.stringList("request.userInfo.groups")
		case "extra":
			d.dup(&seen, 8, key)
			if d.null() || !d.object("request.userInfo.extra") {
				continue
			}
			if u.Extra == nil {
				u.Extra = make(map[string]authenticationv1.ExtraValue, 4)
			}
			f := true
			for {
				k, ok := d.next(&f)
				if !ok {
					break
				}
				u.Extra[k] = d.stringList("request.userInfo.extra")
			}
		default:
			d.skip()
		}
	}
}

// stringList reads an array of strings (null elements become "", as with
// encoding/json) or null (nil).
// The result is allocated once, at its final size.
func (d *scanner) stringList(field string) []string {
	if d.null() || !d.array(field) {
		return nil
	}
	var tmp [16]string
	list := tmp[:0]
	first := true
	for d.elem(&first) {
		list = append(list, d.stringField(field))
	}
	if d.err != nil {
		return nil
	}
	if len(list) == 0 {
		return []string{}
	}
	return append([]string(nil), list...)
}

// appendReview appends the JSON of an AdmissionReview whose response
// carries the decision. The output decodes with encoding/json into the same
// admissionv1.AdmissionReview that toResponse produces (tested), without the
// reflection cost.
func appendReview(dst []byte, uid types.UID, dc *decision) []byte {
	dst = append(dst, `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":`...)
	dst = appendJSONString(dst, string(uid))
	if dc.allowed {
		dst = append(dst, `,"allowed":true`...)
	} else {
		dst = append(dst, `,"allowed":false,"status":{"metadata":{},"status":"Failure","message":`...)
		dst = appendJSONString(dst, dc.message)
		dst = append(dst, `,"reason":`...)
		dst = appendJSONString(dst, string(dc.statusReason()))
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(dc.code), 10)
		dst = append(dst, '}')
	}
	if len(dc.patch) > 0 {
		dst = append(dst, `,"patch":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, dc.patch)
		dst = append(dst, `","patchType":"JSONPatch"`...)
	}
	if dc.warning != "" {
		dst = append(dst, `,"warnings":[`...)
		dst = appendJSONString(dst, dc.warning)
		dst = append(dst, ']')
	}
	return append(dst, "}}\n"...)
}

// appendJSONString appends s as a JSON string. Like encoding/json it escapes
// <, > and & (so the output is safe to embed in HTML), U+2028 and U+2029, and
// replaces invalid UTF-8 with U+FFFD.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:])
		r, size := utf8.DecodeRune(buf[:n])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// errString renders a value for an error message, shortened so that a huge
// hostile value does not flood logs.
func errString(s string) string {
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}
